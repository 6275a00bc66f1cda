package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
)

// ForwardedHeader marks a request that a replica forwarded, with that
// replica's address: it is served where it arrives, never forwarded again,
// so that replicas that disagree about who is who cannot bounce a request
// between them.
const ForwardedHeader = "Mcpmux-Forwarded-By"

// Target returns the peer to forward a request of the sessionless
// protocol to: the replica its requestState names, if that is a peer and
// not this one; "" serves it here (and there the engine says why a state
// that names another replica is refused).
func (s *Set) Target(ctx context.Context, r *http.Request, body []byte) string {
	if !s.Forwards() || r.Method != http.MethodPost || r.Header.Get(ForwardedHeader) != "" ||
		!bytes.Contains(body, []byte(`"requestState"`)) {
		return ""
	}
	var msg struct {
		Params struct {
			RequestState string `json:"requestState"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Params.RequestState == "" {
		return ""
	}
	_, rep, err := s.Verify(msg.Params.RequestState)
	if err != nil || s.IsSelf(rep) || !s.IsPeer(ctx, rep) {
		return ""
	}
	return rep
}

// Forward sends r, whose body was read as body, to the replica at addr,
// and streams that replica's answer to w: its status, headers and body
// (an event stream as it comes). The client's Authorization header goes
// along: every replica accepts the same tokens.
func (s *Set) Forward(w http.ResponseWriter, r *http.Request, body []byte, addr string, log *slog.Logger) {
	log.Debug("forwarding a retry to the replica of its parked call", "replica", addr)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: addr})
			pr.Out.Body = http.NoBody
			if len(body) > 0 {
				pr.Out.Body = readCloser{bytes.NewReader(body)}
			}
			pr.Out.ContentLength = int64(len(body))
			pr.Out.Header.Set(ForwardedHeader, s.self)
		},
		// Progress and the answer as they come, not when a buffer fills.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			log.Warn("could not forward a retry to the replica of its parked call", "replica", addr, "error", err)
			writeRPCError(w, body, fmt.Sprintf("the call this requestState continues waits on the mcpmux replica at %s, which this replica could not reach (%v); call the tool again without requestState", addr, err))
		},
	}
	proxy.ServeHTTP(w, r)
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// writeRPCError answers the JSON-RPC request in body with an error.
func writeRPCError(w http.ResponseWriter, body []byte, msg string) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &req)
	if req.ID == nil {
		req.ID = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      req.ID,
		"error":   map[string]any{"code": -32603, "message": msg},
	})
	// 200, as any JSON-RPC error: a client reads it as the request's
	// answer, not as a broken transport.
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
