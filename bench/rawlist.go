package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// rawLister times tools/list at the server: a Streamable HTTP session
// driven with plain HTTP requests whose answers are read as bytes and not
// decoded, so that the figure is the server's time to produce the list,
// not the client's to parse it (which the go-sdk client figure includes).
type rawLister struct {
	url     string
	session string
	hc      *http.Client
	id      int
}

func newRawLister(ctx context.Context, url string) (*rawLister, error) {
	r := &rawLister{url: url, hc: httpClient()}
	resp, err := r.post(ctx, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+clientVersion+`","capabilities":{},"clientInfo":{"name":"bench-raw","version":"1"}}}`)
	if err != nil {
		return nil, err
	}
	r.session = resp.Header.Get("Mcp-Session-Id")
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, err
	}
	resp.Body.Close()
	resp, err = r.post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return r, nil
}

func (r *rawLister) post(ctx context.Context, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", r.url, bytes.NewBufferString(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("Mcp-Protocol-Version", clientVersion)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("POST %s: %s: %s", r.url, resp.Status, b)
	}
	return resp, nil
}

// page times one tools/list request: the first page.
func (r *rawLister) page(ctx context.Context) (time.Duration, error) {
	d, _, err := r.fetch(ctx, true)
	return d, err
}

// list fetches every page and returns the time taken and the bytes read.
func (r *rawLister) list(ctx context.Context) (time.Duration, int, error) {
	return r.fetch(ctx, false)
}

func (r *rawLister) fetch(ctx context.Context, first bool) (time.Duration, int, error) {
	start := time.Now()
	cursor, total := "", 0
	for {
		r.id++
		params := "{}"
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		resp, err := r.post(ctx, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, r.id, params))
		if err != nil {
			return 0, 0, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, 0, err
		}
		total += len(b)
		cursor = nextCursor(b)
		if cursor == "" || first {
			return time.Since(start), total, nil
		}
	}
}

// nextCursor finds the page cursor in an answer without decoding it.
func nextCursor(b []byte) string {
	key := []byte(`"nextCursor":"`)
	i := bytes.LastIndex(b, key)
	if i < 0 {
		return ""
	}
	rest := b[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}
