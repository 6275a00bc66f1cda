package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// jaegerEnv names the Jaeger binary the tracing test runs: .ci/run builds
// github.com/jaegertracing/jaeger/cmd/jaeger v1.75.0 from the .ci/jaeger
// module (go build -C .ci/jaeger -o BIN github.com/jaegertracing/jaeger/cmd/jaeger).
const jaegerEnv = "MCPMUX_JAEGER"

// jaegerConfig is Jaeger's all-in-one configuration, in memory, on the
// given loopback ports, with its own telemetry off.
const jaegerConfig = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// jaeger is a running Jaeger: where it takes OTLP and answers queries.
type jaeger struct {
	otlpHTTP, otlpGRPC, query int
}

func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := os.Getenv(jaegerEnv)
	if bin == "" {
		t.Skipf("Jaeger is not built: set %s to a jaeger binary (.ci/run builds github.com/jaegertracing/jaeger/cmd/jaeger v1.75.0 from .ci/jaeger)", jaegerEnv)
	}
	j := &jaeger{otlpHTTP: freePort(t), otlpGRPC: freePort(t), query: freePort(t)}
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, j.query, freePort(t), j.otlpGRPC, j.otlpHTTP), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	logs, exited := startProcess(t, "jaeger", cmd)
	// Up when its query API answers (and so its receivers listen: they
	// start first).
	ctx := testContext(t)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/services", j.query))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		select {
		case <-exited:
			t.Fatalf("jaeger exited:\n%s", logs.String())
		case <-ctx.Done():
			t.Fatalf("jaeger did not come up: %v\n%s", err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// jaegerSpan is a span as Jaeger's query API returns it.
type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

type jaegerTrace struct {
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

// trace waits until Jaeger holds at least n spans of trace id, and returns
// the trace.
func (j *jaeger) trace(t *testing.T, id string, n int) jaegerTrace {
	t.Helper()
	ctx := testContext(t)
	var last string
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/traces/%s", j.query, id))
		if err == nil {
			var body struct {
				Data []jaegerTrace `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err == nil && len(body.Data) == 1 && len(body.Data[0].Spans) >= n {
				return body.Data[0]
			}
			last = fmt.Sprintf("status %d, %v", resp.StatusCode, body.Data)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("trace %s: not %d spans in Jaeger (last: %s, %v)", id, n, last, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// A call with the client's trace context in _meta becomes, in a real
// Jaeger, a trace that holds the client's parent, mcpmux's spans with
// their attributes, and the span the server's request was sent in, whose
// id the server got in its _meta: over OTLP/HTTP and OTLP/gRPC.
func TestTracingIntoJaeger(t *testing.T) {
	j := startJaeger(t)
	for _, proto := range []struct{ name, yaml string }{
		{"http", fmt.Sprintf("endpoint: http://127.0.0.1:%d", j.otlpHTTP)},
		{"grpc", fmt.Sprintf("endpoint: http://127.0.0.1:%d\n  protocol: grpc", j.otlpGRPC)},
	} {
		t.Run(proto.name, func(t *testing.T) {
			dir := writeConfig(t, map[string]string{
				"mcpmux.yaml":    "tracing:\n  " + proto.yaml + "\n  service_name: mcpmux-e2e\n",
				"tool/echo.yaml": fixture("echo", "echo"),
			})
			cs, p := startStdio(t, dir)
			traceID, clientSpan := randomHex(t, 16), randomHex(t, 8)
			res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{
				Name: "echo__meta", Arguments: map[string]any{},
				Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01", "task_id": "traced"},
			})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %s", err, resultText(res))
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(resultText(res)), &got); err != nil {
				t.Fatalf("the server's _meta: %v (%s)", err, resultText(res))
			}
			sent, _ := got["traceparent"].(string)
			parts := strings.Split(sent, "-")
			if len(parts) != 4 || parts[1] != traceID || parts[2] == clientSpan {
				t.Fatalf("the server got traceparent %q: want trace %s under a span of mcpmux's", sent, traceID)
			}
			// mcpmux flushes its spans when it exits.
			_ = cs.Close()
			if err := p.wait(t); err != nil {
				t.Fatalf("mcpmux exited with %v", err)
			}

			tr := j.trace(t, traceID, 2)
			var root, down *jaegerSpan
			for i, s := range tr.Spans {
				switch s.OperationName {
				case "tools/call echo__meta":
					root = &tr.Spans[i]
				case "tools/call meta":
					down = &tr.Spans[i]
				}
			}
			if root == nil || down == nil {
				t.Fatalf("spans %+v: want tools/call echo__meta and tools/call meta", tr.Spans)
			}
			if root.parent() != clientSpan {
				t.Errorf("mcpmux's request span has parent %q, want the client's %s", root.parent(), clientSpan)
			}
			for key, want := range map[string]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo__meta", "mcpmux.server": "echo",
				"mcpmux.outcome": "ok", "mcpmux.task": "traced", "span.kind": "server",
			} {
				if got := root.tag(key); got != want {
					t.Errorf("request span %s = %q, want %q", key, got, want)
				}
			}
			if down.parent() != root.SpanID || down.tag("span.kind") != "client" {
				t.Errorf("server request span: parent %q kind %q, want a client span under %s", down.parent(), down.tag("span.kind"), root.SpanID)
			}
			if down.SpanID != parts[2] {
				t.Errorf("the server's parent is %s, want the server request span %s", parts[2], down.SpanID)
			}
			if svc := tr.Processes[root.ProcessID].ServiceName; svc != "mcpmux-e2e" {
				t.Errorf("service %q, want mcpmux-e2e", svc)
			}
		})
	}
}
