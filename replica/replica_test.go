package replica

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var testKey = []byte(strings.Repeat("k", 32))

func mustNew(t *testing.T, opts Options) *Set {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A state names its replica and verifies with the shared key only; any
// change to it, the replica's address included, is refused.
func TestStateNamesItsReplica(t *testing.T) {
	a := mustNew(t, Options{Key: testKey, Self: "10.0.0.1:8080", Peers: []string{"10.0.0.1:8080", "10.0.0.2:8080"}})
	b := mustNew(t, Options{Key: testKey, Self: "10.0.0.2:8080", Peers: []string{"10.0.0.1:8080", "10.0.0.2:8080"}})
	state := a.Sign("CALL")
	id, rep, err := b.Verify(state)
	if err != nil || id != "CALL" || rep != "10.0.0.1:8080" {
		t.Fatalf("Verify(%q) = %q, %q, %v", state, id, rep, err)
	}
	if b.IsSelf(rep) || !a.IsSelf(rep) {
		t.Error("IsSelf does not tell the replicas apart")
	}
	for _, bad := range []string{
		strings.Replace(state, "10.0.0.1", "10.0.0.9", 1), // another replica
		strings.Replace(state, "CALL", "CALM", 1),         // another call
		"CALL." + strings.Repeat("A", 43),
		"CALL",
		"",
	} {
		if _, _, err := b.Verify(bad); !errors.Is(err, ErrInvalidState) {
			t.Errorf("Verify(%q): %v, want ErrInvalidState", bad, err)
		}
	}
	// Alone (no address), a state names no replica: it is this one's.
	alone := mustNew(t, Options{Key: testKey})
	if _, rep, err := alone.Verify(alone.Sign("X")); err != nil || rep != "" || !alone.IsSelf(rep) {
		t.Errorf("alone: %q, %v", rep, err)
	}
}

// With a key of its own, a replica refuses another's state saying that the
// replicas share no key, and how to give them one.
func TestUnsharedKeySaysSo(t *testing.T) {
	a, b := mustNew(t, Options{}), mustNew(t, Options{})
	if a.Shared() {
		t.Error("a generated key counts as shared")
	}
	_, _, err := b.Verify(a.Sign("X"))
	if !errors.Is(err, ErrInvalidState) || !strings.Contains(err.Error(), KeyEnv) {
		t.Errorf("error %v, want ErrInvalidState naming %s", err, KeyEnv)
	}
	shared := mustNew(t, Options{Key: testKey})
	if _, _, err := shared.Verify(a.Sign("X")); err == nil || strings.Contains(err.Error(), KeyEnv) {
		t.Errorf("shared key: %v, want a plain invalid state", err)
	}
}

func TestBadOptions(t *testing.T) {
	for _, opts := range []Options{
		{Key: []byte("short")},
		{Key: testKey, Peers: []string{"10.0.0.1:8080"}},                          // no Self
		{Key: testKey, Self: "10.0.0.1", Peers: []string{"10.0.0.1:8080"}},        // no port
		{Key: testKey, Self: "a@b:1", Peers: []string{"10.0.0.1:8080"}},           // @ splits states
		{Key: testKey, Self: "10.0.0.1:8080", Peers: []string{"http://x:1/path"}}, // a URL
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("New(%+v): no error", opts)
		}
	}
}

func TestReadKey(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte(string(testKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(KeyEnv, "")
	if k, err := ReadKey(""); k != nil || err != nil {
		t.Errorf("nothing set: %q, %v", k, err)
	}
	if k, err := ReadKey(good); string(k) != string(testKey) || err != nil {
		t.Errorf("file: %q, %v", k, err)
	}
	if _, err := ReadKey(short); err == nil || strings.Contains(err.Error(), "abc") {
		t.Errorf("short file: %v, want an error that does not show the key", err)
	}
	if _, err := ReadKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
	t.Setenv(KeyEnv, "  "+string(testKey)+"  ")
	if k, err := ReadKey(""); string(k) != string(testKey) || err != nil {
		t.Errorf("env: %q, %v", k, err)
	}
}

// Peers given by a name are the addresses it resolves to, with its port.
func TestIsPeer(t *testing.T) {
	s := mustNew(t, Options{Key: testKey, Self: "10.0.0.1:8080", Peers: []string{"replicas.example:8080", "192.168.1.5:9000"}})
	s.lookup = func(_ context.Context, host string) ([]string, error) {
		if host == "replicas.example" {
			return []string{"10.0.0.1", "10.0.0.2"}, nil
		}
		return nil, errors.New("no such host")
	}
	for addr, want := range map[string]bool{
		"10.0.0.2:8080":    true,
		"192.168.1.5:9000": true,
		"10.0.0.3:8080":    false, // not resolved
		"10.0.0.2:9000":    false, // another port
		"192.168.1.5:8080": false,
		"evil.example:80":  false,
		"nonsense":         false,
	} {
		if got := s.IsPeer(context.Background(), addr); got != want {
			t.Errorf("IsPeer(%q) = %v, want %v", addr, got, want)
		}
	}
}

// A retry whose state names a peer is forwarded there, body, headers and
// all, and marked so that it is not forwarded again; other requests are
// served where they are.
func TestForward(t *testing.T) {
	var got struct {
		body, auth, by string
	}
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.body, got.auth, got.by = string(b), r.Header.Get("Authorization"), r.Header.Get(ForwardedHeader)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}`)
	}))
	defer peer.Close()
	peerAddr := strings.TrimPrefix(peer.URL, "http://")
	self := "127.0.0.1:1"
	there := mustNew(t, Options{Key: testKey, Self: peerAddr, Peers: []string{self, peerAddr}})
	here := mustNew(t, Options{Key: testKey, Self: self, Peers: []string{self, peerAddr}})

	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","requestState":"` + there.Sign("C") + `"}}`
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	if to := here.Target(req.Context(), req, []byte(body)); to != peerAddr {
		t.Fatalf("Target = %q, want %q", to, peerAddr)
	}
	w := httptest.NewRecorder()
	here.Forward(w, req, []byte(body), peerAddr, slog.New(slog.DiscardHandler))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"complete"`) {
		t.Errorf("answer %d %s", w.Code, w.Body)
	}
	if got.body != body || got.auth != "Bearer tok" || got.by != self {
		t.Errorf("the peer got %+v", got)
	}

	// Not forwarded: its own state, a forwarded request, no state, a
	// state of a non-peer, an unsigned one.
	outsider := mustNew(t, Options{Key: testKey, Self: "127.0.0.1:2"})
	for name, b := range map[string]string{
		"own":      strings.Replace(body, there.Sign("C"), here.Sign("C"), 1),
		"none":     `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}`,
		"non-peer": strings.Replace(body, there.Sign("C"), outsider.Sign("C"), 1),
		"unsigned": strings.Replace(body, there.Sign("C"), "C@"+peerAddr+".xxxx", 1),
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(b))
		if to := here.Target(r.Context(), r, []byte(b)); to != "" {
			t.Errorf("%s: Target = %q, want none", name, to)
		}
	}
	req.Header.Set(ForwardedHeader, peerAddr)
	if to := here.Target(req.Context(), req, []byte(body)); to != "" {
		t.Errorf("a forwarded request is forwarded again, to %q", to)
	}

	// A peer that cannot be reached: a JSON-RPC error for the request.
	peer.Close()
	req.Header.Del(ForwardedHeader)
	w = httptest.NewRecorder()
	here.Forward(w, req, []byte(body), peerAddr, slog.New(slog.DiscardHandler))
	if !strings.Contains(w.Body.String(), `"id":7`) || !strings.Contains(w.Body.String(), "could not reach") {
		t.Errorf("unreachable peer: %d %s", w.Code, w.Body)
	}
}
