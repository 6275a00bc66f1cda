package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// rawSession is a Streamable HTTP session driven by hand (testkit.Session)
// that can resume a stream.
type rawSession struct{ testkit.Session }

// rawInitialize opens a session on protocol 2025-11-25.
func rawInitialize(t *testing.T, url string) *rawSession {
	t.Helper()
	s := &rawSession{testkit.Session{T: t, URL: url, Ctx: testContext(t)}}
	resp := s.Post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.ID = resp.Header.Get("Mcp-Session-Id")
	readAll(t, resp.Body)
	resp.Body.Close()
	if s.ID == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	resp = s.Post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return s
}

// resume sends the GET that resumes a stream after lastEventID.
func (s *rawSession) resume(lastEventID string) *http.Response {
	s.T.Helper()
	req := s.Request(http.MethodGet, "")
	req.Header.Set("Last-Event-ID", lastEventID)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	return resp
}

// sseEvent is one event of a stream, comments left out.
type sseEvent struct {
	name, id, retry, data string
}

// readEvent reads the next event.
func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v (event so far %+v)", err, ev)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if ev != (sseEvent{}) {
				return ev
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.name = value
		case "id":
			ev.id = value
		case "retry":
			ev.retry = value
		case "data":
			ev.data += value
		}
	}
}

// TestLongCallIsPrimedAndResumable: over HTTP a call's response starts at
// once, with a priming event that has an id and a retry field, while the
// tool is still running; a client whose stream drops resumes it with
// Last-Event-ID and still gets the result.
func TestLongCallIsPrimedAndResumable(t *testing.T) {
	t.Parallel()
	p := startHTTP(t, writeConfig(t, map[string]string{"tool/x.yaml": fixture("x", "conformance")}))
	s := rawInitialize(t, p.url+"/mcp")
	release := filepath.Join(t.TempDir(), "release")
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x__test_long_operation","arguments":{"until":%q}}}`, release)

	resp := s.Post(call)
	// The headers are here, and the tool runs until release exists.
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("POST tools/call: %d %s, want 200 and an event stream", resp.StatusCode, ct)
	}
	r := bufio.NewReader(resp.Body)
	priming := readEvent(t, r)
	if priming.id == "" || priming.data != "" {
		t.Fatalf("first event %+v, want a priming event: an id and no data", priming)
	}
	retry := readEvent(t, r)
	if retry.retry == "" || retry.data != "" {
		t.Errorf("second event %+v, want the retry field", retry)
	}
	if _, err := os.Stat(release); err == nil {
		t.Fatal("the tool finished before the test let it")
	}
	// The stream drops; the tool finishes meanwhile.
	resp.Body.Close()
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// Reconnect as told: after the retry delay, and again while the
	// server has not yet noticed the dropped connection (409: the stream
	// is still taken).
	delay, _ := strconv.Atoi(retry.retry)
	resumed := testkit.Await(t, "the dropped stream can be resumed (no 409)", func() *http.Response {
		time.Sleep(time.Duration(delay) * time.Millisecond) // the client's part: the retry field's wait
		resp := s.resume(priming.id)
		if resp.StatusCode == http.StatusConflict {
			resp.Body.Close()
		}
		return resp
	}, func(resp *http.Response) bool { return resp.StatusCode != http.StatusConflict })
	defer resumed.Body.Close()
	if resumed.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID: %d %s", resumed.StatusCode, readAll(t, resumed.Body))
	}
	rr := bufio.NewReader(resumed.Body)
	for {
		ev := readEvent(t, rr)
		if ev.data == "" {
			continue
		}
		var msg struct {
			ID     int                `json:"id"`
			Result mcp.CallToolResult `json:"result"`
		}
		if err := json.Unmarshal([]byte(ev.data), &msg); err != nil || msg.ID != 7 {
			continue
		}
		if ev.id == "" || msg.Result.IsError || !strings.Contains(resultText(&msg.Result), "Long operation completed") {
			t.Errorf("resumed stream delivered %+v (id %q), want the tool's result with an event id", msg.Result, ev.id)
		}
		return
	}
}

// TestServerClosesStreamMidCall: a Streamable HTTP server that closes a
// call's stream before answering is resumed; when it replays the answer,
// the client gets it, and when it has nothing to replay, the client gets
// an isError saying so instead of waiting for the call's timeout (here
// 15 minutes). Through HTTP the client's own stream is closed likewise
// and resumed; over stdio the answer simply comes.
func TestServerClosesStreamMidCall(t *testing.T) {
	t.Parallel()
	url := conformanceHTTP(t)
	cfg := fmt.Sprintf("url: %s\ntimeout: 15m\n", url)
	dir := writeConfig(t, map[string]string{"tool/x.yaml": "name: x\n" + cfg})
	p := startHTTP(t, dir)
	// A client that resumes its streams, as the go-sdk's does by default.
	viaHTTP, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(testContext(t), &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp"}, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = viaHTTP.Close() })
	viaStdio, _ := startStdio(t, dir)
	for name, cs := range map[string]*mcp.ClientSession{"http": viaHTTP, "stdio": viaStdio} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if res := callTool(t, cs, "x__test_reconnection_replayed", nil); res.IsError || resultText(res) != replayedAnswer {
				t.Errorf("replayed answer: %q (isError %v), want %q", resultText(res), res.IsError, replayedAnswer)
			}
			res := callTool(t, cs, "x__test_reconnection", nil)
			if !res.IsError || !strings.Contains(resultText(res), "closed the call's response stream before answering") || !strings.Contains(resultText(res), "lost") {
				t.Errorf("lost answer: %q (isError %v), want an isError saying the server lost it", resultText(res), res.IsError)
			}
		})
	}
}
