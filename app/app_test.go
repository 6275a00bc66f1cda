package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/internal/reaper/reapertest"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// New starts the child reaper as its own binary: this test binary.
func TestMain(m *testing.M) { reapertest.Main(m) }

func testLogger() *slog.Logger {
	return logs.Masked(slog.New(slog.NewTextHandler(io.Discard, nil)), &logs.Masker{})
}

// within fails the test if ch yields nothing in time.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: nothing after 30s", what)
		panic("unreachable")
	}
}

// The front's token file is the instance's before any reload can run: a
// reload that arrives while the front starts reads the rotated file, and
// from then on only its tokens are accepted.
func TestAReloadDuringStartRotatesTheTokenFile(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, "mcpmux.yaml"), "token_file: tokens\n")
	tokens := testkit.WriteFile(t, filepath.Join(dir, "tokens"), "old-token\n")
	in, err := New(&Options{Dir: dir, Log: testLogger(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	front, err := in.ListenHTTP(&HTTP{Addr: "127.0.0.1:0", Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, tokens, "new-token\n")
	snap, err := config.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reloaded := make(chan struct{})
	go func() { in.Reload(ctx, snap); close(reloaded) }() // waits for Start, which Serve runs
	served := make(chan error, 1)
	go func() { served <- front.Serve(ctx, false) }()
	within(t, reloaded, "the reload")

	status := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+front.Addr().String()+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("new-token"); got != http.StatusOK {
		t.Errorf("the rotated token gets %d, want 200", got)
	}
	if got := status("old-token"); got != http.StatusUnauthorized {
		t.Errorf("the replaced token gets %d, want 401", got)
	}
	cancel()
	if err := within(t, served, "the shutdown"); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// A front refuses, before it listens, to serve a non-loopback address
// without a token, and a token or origin it cannot use.
func TestListenHTTPRefusals(t *testing.T) {
	in, err := New(&Options{Dir: t.TempDir(), Log: testLogger(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(time.Second)
	for _, h := range []*HTTP{
		{Addr: "0.0.0.0:0"},
		{Addr: "127.0.0.1:0", Token: "two words"},
		{Addr: "127.0.0.1:0", Origins: []string{"no-scheme.example"}},
	} {
		front, err := in.ListenHTTP(h)
		var refused *RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("%+v: %v, want a RefusedError", h, err)
		}
		if front != nil {
			front.ln.Close()
		}
	}
	if _, err := in.ListenHTTP(&HTTP{Addr: "0.0.0.0:0"}); !errors.Is(err, ErrNoToken) {
		t.Errorf("no token on 0.0.0.0: %v, want ErrNoToken", err)
	}
}

// A request header over maxHeaderBytes is refused with 431 before any
// token check, and the front goes on answering.
func TestOversizedHeaderGets431(t *testing.T) {
	in, err := New(&Options{Dir: t.TempDir(), Log: testLogger(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	front, err := in.ListenHTTP(&HTTP{Addr: "127.0.0.1:0", Grace: time.Second, Token: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- front.Serve(ctx, false) }()

	get := func(header string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+front.Addr().String()+"/healthz", nil)
		if header != "" {
			req.Header.Set("X-Padding", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Go reads 4 KiB over MaxHeaderBytes before it refuses.
	if got := get(strings.Repeat("a", maxHeaderBytes+8<<10)); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a header of %d bytes gets %d, want 431", maxHeaderBytes+8<<10, got)
	}
	if got := get(strings.Repeat("a", 8<<10)); got == http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a header of 8 KiB gets 431")
	}
	cancel()
	if err := within(t, served, "the shutdown"); err != nil {
		t.Errorf("Serve: %v", err)
	}
}
