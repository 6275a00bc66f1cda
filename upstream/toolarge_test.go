package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// bigServer has the tool big, whose text has {"kb": n} KiB.
func bigServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "big"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ KB int }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", args.KB<<10)}}}, nil
		})
	return srv
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
				return resultText(res), err
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
