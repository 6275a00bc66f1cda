package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// startRawHTTPClient opens a rawClient session on the Streamable HTTP
// endpoint url: each message is a POST, whose answer (JSON or an event
// stream) is read to its end; what the server sends outside requests comes
// on the GET stream, opened after initialization.
func startRawHTTPClient(t *testing.T, url string, caps rawCaps) (*rawClient, json.RawMessage) {
	t.Helper()
	c := &rawClient{t: t, caps: caps, http: true, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	h := &rawHTTP{c: c, url: url, ctx: ctx}
	c.send = h.post
	t.Cleanup(func() {
		if id := h.session(); id != "" {
			req, _ := http.NewRequest(http.MethodDelete, url, nil)
			req.Header.Set("Mcp-Session-Id", id)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
		h.wg.Wait()
		close(c.done)
	})
	init := c.initialize()
	h.listen()
	return c, init
}

// rawHTTP is the Streamable HTTP side of a rawClient.
type rawHTTP struct {
	c   *rawClient
	url string
	ctx context.Context
	wg  sync.WaitGroup

	mu sync.Mutex
	id string // Mcp-Session-Id
}

func (h *rawHTTP) session() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.id
}

func (h *rawHTTP) request(method string, body []byte) *http.Request {
	req, err := http.NewRequestWithContext(h.ctx, method, h.url, bytes.NewReader(body))
	if err != nil {
		h.c.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if id := h.session(); id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return req
}

// post sends one message; it returns once the answer's headers are in
// (so that messages reach the server in the order they are written), and
// reads the answer meanwhile.
func (h *rawHTTP) post(b []byte) {
	resp, err := http.DefaultClient.Do(h.request(http.MethodPost, b))
	if err != nil {
		if h.ctx.Err() == nil {
			h.c.t.Errorf("POST %s: %v", b, err)
		}
		return
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		h.mu.Lock()
		h.id = id
		h.mu.Unlock()
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer resp.Body.Close()
		h.read(resp)
	}()
}

// listen opens the GET stream.
func (h *rawHTTP) listen() {
	req := h.request(http.MethodGet, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.c.t.Fatalf("GET stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return // the server has none
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer resp.Body.Close()
		h.read(resp)
	}()
}

// read dispatches the messages of an answer: a JSON body or an event
// stream.
func (h *rawHTTP) read(resp *http.Response) {
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode == http.StatusAccepted:
	case strings.HasPrefix(ct, "application/json"):
		b, _ := io.ReadAll(resp.Body)
		h.c.dispatch(b)
	case strings.HasPrefix(ct, "text/event-stream"):
		r := bufio.NewReaderSize(resp.Body, 1<<20)
		var data []byte
		for {
			line, err := r.ReadBytes('\n')
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0 && len(data) > 0:
				h.c.dispatch(data)
				data = nil
			case bytes.HasPrefix(line, []byte("data:")):
				data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
			}
			if err != nil {
				return
			}
		}
	default:
		b, _ := io.ReadAll(resp.Body)
		if h.ctx.Err() == nil {
			h.c.t.Errorf("HTTP %d (%s): %s", resp.StatusCode, ct, b)
		}
	}
}
