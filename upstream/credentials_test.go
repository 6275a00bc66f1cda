package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// headerLog records the credential headers of the requests a server got.
type headerLog struct {
	mu   sync.Mutex
	seen []string
	n    int
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.n++
		for _, k := range []string{"Authorization", "X-Api-Key", "Cookie"} {
			if v := r.Header.Get(k); v != "" {
				l.seen = append(l.seen, r.Method+" "+k+": "+v)
			}
		}
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) get() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...), l.n
}

// echoMCP is an MCP server with the tool whoami.
func echoMCP() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "other"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "other origin"}}}, nil
		})
	return srv
}

// redirector answers every request with a 307 to the same path on target.
func redirector(t *testing.T, target string) *httptest.Server {
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func startRemote(t *testing.T, doc string) *Server {
	t.Helper()
	cfg, ferr := config.ParseServer("r.yaml", []byte(doc), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool := NewPool(&Options{})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	return pool.Get(cfg.Name)
}

// The configured headers (a token, an API key) are not sent on after a 307
// to another origin (another port of the same host is one), over
// Streamable HTTP and legacy SSE; the call still reaches the server there.
func TestCredentialsStayOnTheConfiguredOrigin(t *testing.T) {
	for _, c := range []struct {
		typ     string
		handler http.Handler
	}{
		{"streamable-http", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoMCP() }, nil)},
		{"sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return echoMCP() }, nil)},
	} {
		t.Run(c.typ, func(t *testing.T) {
			var other headerLog
			target := httptest.NewServer(other.wrap(c.handler))
			t.Cleanup(target.Close)
			front := redirector(t, target.URL)
			s := startRemote(t, fmt.Sprintf("name: r\ntype: %s\nurl: %s/mcp\nheaders: {Authorization: \"Bearer s3cret\", X-Api-Key: k3y}\n", c.typ, front.URL))
			if text, err := call(t, s); err != nil || text != "other origin" {
				t.Fatalf("call through the redirect: %q, %v (%+v)", text, err, s.Status())
			}
			if seen, n := other.get(); n == 0 || len(seen) > 0 {
				t.Errorf("the other origin got %d requests, with credentials %q", n, seen)
			}
		})
	}
}

// A legacy SSE server naming a message endpoint on another origin is
// refused: nothing is posted there, and the error says why.
func TestCrossOriginSSEEndpointRefused(t *testing.T) {
	var other headerLog
	target := httptest.NewServer(other.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})))
	t.Cleanup(target.Close)
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages?session=1\n\n", target.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(sse.Close)
	s := startRemote(t, fmt.Sprintf("name: r\ntype: sse\nurl: %s/sse\nheaders: {X-Api-Key: k3y}\nconnect_timeout: 5s\n", sse.URL))
	st := testkit.Await(t, "the connection failed", s.Status, func(st Status) bool { return st.Error != "" })
	if !strings.Contains(st.Error, "another origin") {
		t.Errorf("status error %q does not say the endpoint is on another origin", st.Error)
	}
	if seen, n := other.get(); n > 0 {
		t.Errorf("the other origin got %d requests (credentials %q)", n, seen)
	}
}
