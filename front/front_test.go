package front

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// engine is an Engine of plain go-sdk servers, one per profile.
type engine struct {
	servers  map[string]*mcp.Server
	settings *config.Settings
}

func (e *engine) Server(profile string) *mcp.Server                              { return e.servers[profile] }
func (e *engine) Settings() *config.Settings                                     { return e.settings }
func (e *engine) Stateless() bool                                                { return false }
func (e *engine) Draining() bool                                                 { return false }
func (e *engine) HealthReport() any                                              { return map[string]string{"status": "ok"} }
func (e *engine) WatchSessions(func(context.Context, *mcp.ServerSession) func()) {}
func (e *engine) LiftBody(_ *http.Request, body []byte) []byte                   { return body }
func (e *engine) AnswerRemoved(*http.Request, []byte) (json.RawMessage, *jsonrpc.Error, bool) {
	return nil, nil, false
}
func (e *engine) TrackStream(_ string, w http.ResponseWriter) (http.ResponseWriter, func()) {
	return w, func() {}
}

func handlers(f *Front) int {
	n := 0
	f.handlers.Range(func(any, any) bool { n++; return true })
	return n
}

// A profile's handler, and with it the sessions it keeps, goes when the
// profile does: a removed profile gets 404, and the front keeps nothing of
// it.
func TestRemovedProfileIsForgotten(t *testing.T) {
	settings := config.DefaultSettings()
	settings.Profiles = map[string]*config.Profile{"web": {}}
	e := &engine{settings: settings, servers: map[string]*mcp.Server{
		"":    mcp.NewServer(&mcp.Implementation{Name: "all", Version: "1"}, nil),
		"web": mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil),
	}}
	f := New(&Options{Engine: e})
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	initialize := func(path string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if initialize("/mcp") != http.StatusOK || initialize("/mcp/web") != http.StatusOK || handlers(f) != 2 {
		t.Fatalf("two profiles served: %d handlers", handlers(f))
	}

	without := config.DefaultSettings()
	delete(e.servers, "web")
	e.settings = without
	f.Reload(without)
	if got := initialize("/mcp/web"); got != http.StatusNotFound {
		t.Errorf("a removed profile: %d, want 404", got)
	}
	if handlers(f) != 1 {
		t.Errorf("%d handlers after the profile went, want the default's", handlers(f))
	}
}
