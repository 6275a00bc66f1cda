package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mcpmux/mcpmux/internal/sse"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// readThrough returns what the go-sdk reads of an event stream body
// through w, the response of a POST with ctx.
func readThrough(t *testing.T, ctx context.Context, w *wireTransport, body io.Reader) string {
	t.Helper()
	w.base = roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(body)}, nil
	})
	if w.maxEvent == 0 {
		w.maxEvent = 1 << 20
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://server.test/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := w.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// readers are the ways a body is cut into reads.
var readers = []struct {
	name string
	r    func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"byte by byte", iotest.OneByteReader},
	{"halves", iotest.HalfReader},
}

// The progress and log events an answer waits for are counted however the
// stream is cut into reads, and not an answer that mentions them; task
// statuses are handed on.
func TestWireCountsGatedNotifications(t *testing.T) {
	progress := `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpmux-1","progress":1}}`
	huge := `data: {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 3*sse.Peek) + `\"method\":\"notifications/progress\""}]}}`
	stream := strings.Join([]string{
		"event: message", progress, "",
		"event: message", huge, "",
		"event: message", `data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}`, "",
		"event: message", `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, "",
		"event: message", `data: {"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t"}}`, "",
		"event: message", progress, "",
		": a comment naming \"method\":\"notifications/progress\"", "",
	}, "\n") + "\n"
	for _, cut := range readers {
		t.Run(cut.name, func(t *testing.T) {
			g := newProgressGate()
			var statuses []string
			w := &wireTransport{gate: g, status: func(m []byte) { statuses = append(statuses, string(m)) }}
			if got := readThrough(t, context.Background(), w, cut.r(strings.NewReader(stream))); got != stream {
				t.Fatal("the stream was changed")
			}
			if g.read != 4 {
				t.Errorf("counted %d progress, log and list_changed events, want 4 (not the task status)", g.read)
			}
			if len(statuses) != 1 || !strings.Contains(statuses[0], `"taskId":"t"`) {
				t.Errorf("task statuses: %q", statuses)
			}
		})
	}
}

// The events of requests mcpmux answers itself are taken off a stream,
// leaving their ids; everything else is passed on as it was.
func TestWireTakesRequests(t *testing.T) {
	in := "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n" +
		": keepalive\n\n" +
		"id: 2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"tasks/get\",\"params\":{\"taskId\":\"t\"}}\n\n" +
		"id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"k\",\"method\":\"sampling/createMessage\",\"params\":{}}\n\n" +
		"id: 4\ndata: " + strings.Repeat("x", 3*sse.Peek) + "\n\n" +
		"retry: 5"
	want := strings.Replace(in, "data: {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"tasks/get\",\"params\":{\"taskId\":\"t\"}}\n", "", 1)
	for _, cut := range readers {
		t.Run(cut.name, func(t *testing.T) {
			var taken []string
			w := &wireTransport{gate: newProgressGate(), take: func(m []byte) bool {
				taken = append(taken, string(m))
				return strings.Contains(string(m), "tasks/get")
			}}
			if out := readThrough(t, context.Background(), w, cut.r(strings.NewReader(in))); out != want {
				t.Errorf("out:\n%q\nwant:\n%q", out, want)
			}
			if len(taken) != 2 || !strings.Contains(taken[1], "sampling/createMessage") {
				t.Errorf("offered %q, want the two requests", taken)
			}
		})
	}
}

// The answers of raw requests are taken from the stream of their POST,
// one or a batch, after the progress before them has been counted; an
// answer over max_result_bytes fails its call, and the go-sdk reads an
// error answer in its place.
func TestWireRawAnswers(t *testing.T) {
	progress := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n"
	answer := "id: 9\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"mcpmux-a\",\"result\":{\"ok\":1}}\r\n\r\n"
	batch := "data: [{\"jsonrpc\":\"2.0\",\"id\":\"mcpmux-b\",\"result\":{\"ok\":2}},\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"mcpmux-c\",\"error\":{\"code\":-1,\"message\":\"no\"}}]\n\n"
	big := "data: {\"jsonrpc\":\"2.0\",\"id\":\"mcpmux-d\",\"result\":{\"text\":\"" + strings.Repeat("x", 2*sse.Peek) + "\"}}\n\n"
	for _, cut := range readers {
		t.Run(cut.name, func(t *testing.T) {
			calls := newRawCalls()
			answers := map[string]chan rawAnswer{}
			for _, id := range []string{"mcpmux-a", "mcpmux-b", "mcpmux-c", "mcpmux-d"} {
				answers[id] = make(chan rawAnswer, 1)
				calls.pending[id] = answers[id]
			}
			g := newProgressGate()
			w := &wireTransport{gate: g, server: "s", limit: 1 << 10, take: func([]byte) bool { return false }}
			ctx := withRawRequest(context.Background(), calls, "mcpmux-d")
			if out := readThrough(t, ctx, w, cut.r(strings.NewReader(progress+answer+batch))); out != progress+answer+batch {
				t.Errorf("the stream was changed: %q", out)
			}
			if g.read != 1 {
				t.Errorf("counted %d notifications, want the progress", g.read)
			}
			for id, want := range map[string]string{"mcpmux-a": `{"ok":1}`, "mcpmux-b": `{"ok":2}`, "mcpmux-c": "no"} {
				select {
				case a := <-answers[id]:
					got := string(a.resp.Result)
					if a.resp.Error != nil {
						got = a.resp.Error.Error()
					}
					if got != want {
						t.Errorf("%s: %s, want %s", id, got, want)
					}
				default:
					t.Errorf("%s was not answered", id)
				}
			}

			out := readThrough(t, ctx, w, cut.r(strings.NewReader(progress+big+answer)))
			if want := progress + `data: {"error":{"code":-32603,"message":"answer too large"},"id":"mcpmux-d","jsonrpc":"2.0"}` + "\n\n"; out != want {
				t.Errorf("the go-sdk read %q, want %q", out, want)
			}
			var tooLarge *TooLargeError
			if a := <-answers["mcpmux-d"]; !errors.As(a.err, &tooLarge) {
				t.Errorf("the answer over the bound: %+v, want a TooLargeError", a)
			}
		})
	}
}
