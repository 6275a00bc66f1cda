package aggregator

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogSizes are the catalog sizes of the lookup benchmarks: ns/op
// should not grow with them (go run ./bench -only lookup compares them).
var catalogSizes = []int{10, 1000, 5000}

// sizedHarness serves n tools: up to 50 per server, every tool name
// unique across servers (so that a bare name resolves to one owner).
func sizedHarness(b *testing.B, n int) *harness {
	servers := map[string]*mcp.Server{}
	for s := 0; s*50 < n; s++ {
		tools := map[string]mcp.ToolHandler{}
		for i := s * 50; i < min(n, (s+1)*50); i++ {
			tools[fmt.Sprintf("tool%d", i)] = echo("")
		}
		servers[fmt.Sprintf("s%03d", s)] = fixtureServer(fmt.Sprintf("s%03d", s), tools)
	}
	return newHarness(b, servers, "", nil)
}

// BenchmarkCall is one tools/call through the whole pipeline (client
// session → aggregator → upstream session → fixture, all in memory).
func BenchmarkCall(b *testing.B) {
	for _, n := range catalogSizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			h := sizedHarness(b, n)
			cs := h.client(DefaultProfile)
			ctx := context.Background()
			params := &mcp.CallToolParams{Name: fmt.Sprintf("s%03d__tool%d", (n-1)/50, n-1), Arguments: map[string]any{"text": "hi"}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// BenchmarkResolve is the auto-correction lookup of a name whose server
// part is wrong: map reads, whatever the catalog's size.
func BenchmarkResolve(b *testing.B) {
	for _, n := range catalogSizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			h := sizedHarness(b, n)
			v := h.agg.profile(DefaultProfile).view.Load()
			name := fmt.Sprintf("nosuch__tool%d", n/2)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, c := lookup(v, name); len(c) != 1 {
					b.Fatalf("%d candidates for %s", len(c), name)
				}
			}
		})
	}
}

// BenchmarkSeparatorName resolves a name that is nothing but separators
// ("a" + "__" × k) in a catalog of 12 servers: lookup itself (linear in the
// name: ns/op per byte stays flat as the name grows), and a whole
// tools/call of it, which is refused before any lookup.
func BenchmarkSeparatorName(b *testing.B) {
	servers := map[string]*mcp.Server{}
	for i := range 12 {
		name := fmt.Sprintf("s%02d", i)
		servers[name] = fixtureServer(name, map[string]mcp.ToolHandler{name + "_tool": echo("")})
	}
	h := newHarness(b, servers, "", nil)
	v := h.agg.profile(DefaultProfile).view.Load()
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		name := "a" + strings.Repeat("__", size/2)
		b.Run(fmt.Sprintf("lookup/bytes=%d", size), func(b *testing.B) {
			for b.Loop() {
				lookup(v, name)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(name)), "ns/byte")
		})
	}
	cs := h.client(DefaultProfile)
	name := "a" + strings.Repeat("__", 1<<19)
	b.Run("call/bytes=1048577", func(b *testing.B) {
		for b.Loop() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
			if err != nil || !res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}

// BenchmarkCallOverHTTP is one tools/call of a go-sdk client over
// Streamable HTTP through the front, by protocol: a 2025-11-25 session,
// and 2026-07-28 requests, each served by a session of its own.
func BenchmarkCallOverHTTP(b *testing.B) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		b.Run("protocol="+version, func(b *testing.B) {
			h := newHarness(b, map[string]*mcp.Server{"s": fixtureServer("s", map[string]mcp.ToolHandler{"echo": echo("")})}, "", nil)
			ts := httptest.NewServer(h.serveHTTP(nil))
			defer ts.Close()
			ctx := context.Background()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != version {
				b.Fatalf("negotiated %q", v)
			}
			params := &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "hi"}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
