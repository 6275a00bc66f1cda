package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// bigServer has the tool big, whose text has {"kb": n} KiB.
func bigServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "big"}, nil)
	bigServerTool(srv)
	return srv
}

func bigServerTool(srv *mcp.Server) {
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ KB int }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", args.KB<<10)}}}, nil
		})
}

// An answer of a url: server over max_result_bytes, as a JSON body or as
// an event, fails its call with a TooLargeError; the connection goes on,
// and a small answer comes through after it.
func TestAnswerOverMaxResultBytesIsNotRead(t *testing.T) {
	for _, jsonResponse := range []bool{true, false} {
		t.Run("json="+strconv.FormatBool(jsonResponse), func(t *testing.T) {
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bigServer() }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
			rs := httptest.NewServer(h)
			t.Cleanup(rs.Close)
			cfg, ferr := config.ParseServer("b.yaml", []byte(fmt.Sprintf("name: b\nurl: %s\n", rs.URL)), nil)
			if ferr != nil {
				t.Fatal(ferr)
			}
			pool := NewPool(&Options{MaxResultBytes: func() config.Size { return 64 << 10 }})
			t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
			pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
			s := pool.Get("b")
			bigCall := func(kb int) (string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := s.CallTool(ctx, CallParams{Params: &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"kb": kb}}})
				return testkit.RawText(res), err
			}
			_, err := bigCall(256)
			var tooLarge *TooLargeError
			var lost *LostError
			if !errors.As(err, &tooLarge) || errors.As(err, &lost) || !strings.Contains(err.Error(), "max_result_bytes = 64KiB") {
				t.Fatalf("a 256 KiB answer with a bound of 64 KiB: %v, want a TooLargeError", err)
			}
			if text, err := bigCall(32); err != nil || len(text) != 32<<10 {
				t.Errorf("a 32 KiB answer after it: %d bytes, %v", len(text), err)
			}
			if st := s.Status(); st.State != StateUp || st.Restarts != 0 {
				t.Errorf("the connection did not go on: %+v", st)
			}
		})
	}
}

// startHelper starts the stdio helper server (TestHelperStdioServer) in
// a pool, printing banner to stdout first if it is not empty.
func startHelper(t *testing.T, banner string) *Server {
	t.Helper()
	doc := fmt.Sprintf("name: h\ntool_command: %q\nargs: [\"-test.run=^TestHelperStdioServer$\"]\nenv: {%s: \"1\", %s: %q}\n", os.Args[0], helperEnv, helperBannerEnv, banner)
	cfg, ferr := config.ParseServer("h.yaml", []byte(doc), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool := NewPool(&Options{})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	return pool.Get("h")
}

// A stdio child that prints a banner to stdout before speaking MCP comes
// up: the line is dropped, with a log line (before, it ended the
// connection at start-up).
func TestStdioChildPrintingABannerFirst(t *testing.T) {
	s := startHelper(t, "helper v1 listening on stdio")
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("it did not come up: %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if res, err := s.CallTool(ctx, CallParams{Params: &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"kb": 1}}}); err != nil || len(testkit.RawText(res)) != 1<<10 {
		t.Fatalf("call: %v", err)
	}
}

// A stdio child's answer over the bound of a line fails its call with an
// error that says so; the connection goes on (before, the go-sdk's
// connection ended, and with it every call on it, and the server was
// restarted).
func TestStdioAnswerOverTheBoundFailsOneCall(t *testing.T) {
	s := startHelper(t, "")
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("it did not come up: %+v", st)
	}
	bigCall := func(kb int) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := s.CallTool(ctx, CallParams{Params: &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"kb": kb}}})
		return testkit.RawText(res), err
	}
	over := int(config.DefaultMaxResultBytes>>10) + 64 // KiB: past the bound of a line
	if _, err := bigCall(over); err == nil || !strings.Contains(err.Error(), "over the bound of a message on stdio") {
		t.Fatalf("an answer of %d KiB: %v, want the bound named", over, err)
	}
	if text, err := bigCall(32); err != nil || len(text) != 32<<10 {
		t.Errorf("a 32 KiB answer after it: %d bytes, %v", len(text), err)
	}
	if st := s.Status(); st.State != StateUp || st.Restarts != 0 {
		t.Errorf("the connection did not go on: %+v", st)
	}
}
