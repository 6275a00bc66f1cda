package aggregator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// A server with output_dir links files it wrote, as @playwright/mcp does
// ([Snapshot](../out/page-1.yml), relative to its cwd): the calling session
// gets the link as a mcpmux://files/ resource it can read, another session
// cannot, and a link or file resolving outside output_dir is not served.
func TestOutputFilesServedToTheCallingSession(t *testing.T) {
	root := t.TempDir()
	cwd, out := filepath.Join(root, "cwd"), filepath.Join(root, "out")
	for _, d := range []string{cwd, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// An older file (another session's, say) is not linked, even if a
	// page quotes its path.
	write(filepath.Join(out, "old.yml"), "old")
	if err := os.Chtimes(filepath.Join(out, "old.yml"), time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "secret.txt"), "secret")
	if err := os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(out, "evil.yml")); err != nil {
		t.Fatal(err)
	}
	snapshot := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		write(filepath.Join(out, "page-1.yml"), "- button \"OK\" [ref=e1]\n")
		write(filepath.Join(out, "shot.png"), "\x89PNG\r\n\x1a\n\x00\x01")
		write(filepath.Join(out, "big.yml"), strings.Repeat("x", 70*1024))
		write(filepath.Join(out, "page-2.yml"), "two")
		write(filepath.Join(out, "page-3.yml"), "three")
		// page-2 and page-3 are linked relative to a client's root that
		// is not on this host, as @playwright/mcp does with roots.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "### Page\n- [Snapshot](../out/page-1.yml)\n- [Shot](" + filepath.Join(out, "shot.png") + ")\n" +
			"- [Big](../out/big.yml)\n- [Two](../../../../" + filepath.Base(root) + "/out/page-2.yml)\n- [Three](./page-3.yml)\n" +
			"- [Secret](../secret.txt)\n- [Evil](../out/evil.yml)\n- [Missing](../out/none.yml)\n- [Old](../out/old.yml)\n- [Web](https://example.com/a.yml)"}}}, nil
	}
	h := newHarness(t, map[string]*mcp.Server{
		"browser": fixtureServer("browser", map[string]mcp.ToolHandler{"snapshot": snapshot}),
	}, "max_result_bytes: 64KiB\n", map[string]string{"browser": "cwd: " + cwd + "\noutput_dir: " + out + "\n"})

	// Links are bound to a session: 2025-11-25 clients have one.
	cs := h.clientVersion(DefaultProfile, "2025-11-25")
	res := call(t, cs, "browser__snapshot", nil)
	got := res.Content[0].(*mcp.TextContent).Text
	uris := map[string]string{}
	for _, m := range regexp.MustCompile(`\[(\w+)\]\((mcpmux://files/[0-9a-f]{32}/[^)]+)\)`).FindAllStringSubmatch(got, -1) {
		uris[m[1]] = m[2]
	}
	if len(uris) != 5 || uris["Snapshot"] == "" || uris["Shot"] == "" || uris["Big"] == "" || uris["Two"] == "" || uris["Three"] == "" {
		t.Fatalf("links rewritten: %v; text:\n%s", uris, got)
	}
	for _, kept := range []string{"[Secret](../secret.txt)", "[Evil](../out/evil.yml)", "[Missing](../out/none.yml)", "[Old](../out/old.yml)", "[Web](https://example.com/a.yml)"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%s was changed; text:\n%s", kept, got)
		}
	}
	var links []string
	for _, c := range res.Content[1:] {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l.URI)
			if l.URI == uris["Snapshot"] && (l.Name != "page-1.yml" || l.MIMEType != "application/yaml") {
				t.Errorf("resource_link %+v", l)
			}
		}
	}
	if len(links) != 5 {
		t.Errorf("resource_link items: %v", links)
	}

	ctx := context.Background()
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris["Snapshot"]})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "- button \"OK\" [ref=e1]\n" || rr.Contents[0].MIMEType != "application/yaml" {
		t.Fatalf("read of the snapshot: %+v, %v", rr, err)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris["Two"]}); err != nil || rr.Contents[0].Text != "two" {
		t.Errorf("read of a link relative to a foreign root: %+v, %v", rr, err)
	}
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris["Shot"]})
	if err != nil || string(rr.Contents[0].Blob) != "\x89PNG\r\n\x1a\n\x00\x01" || rr.Contents[0].MIMEType != "image/png" {
		t.Fatalf("read of the image: %+v, %v", rr, err)
	}
	wantErr := func(what, uri, substr string, cs *mcp.ClientSession) {
		t.Helper()
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, substr) {
			t.Errorf("%s: error %v, want one with %q", what, err, substr)
		}
	}
	wantErr("a file over max_result_bytes", uris["Big"], "more than max_result_bytes = 64KiB", cs)
	wantErr("another session", uris["Snapshot"], "unknown or expired", h.clientVersion(DefaultProfile, "2025-11-25"))
	wantErr("a sessionless client", uris["Snapshot"], "unknown or expired", h.client(DefaultProfile))
	wantErr("a made-up token", "mcpmux://files/00000000000000000000000000000000/page-1.yml", "unknown or expired", cs)

	// The linked file replaced by a symlink out of output_dir.
	if err := os.Remove(filepath.Join(out, "page-1.yml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(out, "page-1.yml")); err != nil {
		t.Fatal(err)
	}
	wantErr("a file now outside output_dir", uris["Snapshot"], "outside the server's output_dir", cs)

	// The session ended: its links are gone (checked via the map, as no
	// other session could read them anyway).
	cs.Close()
	testkit.Eventually(t, "the ended session's links are forgotten", func() bool {
		h.agg.files.mu.Lock()
		defer h.agg.files.mu.Unlock()
		return len(h.agg.files.byToken) == 0
	})
}
