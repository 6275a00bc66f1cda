package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/journal/pin"
)

// mcpmux pin write --from a journal makes a manifest pin: reads back;
// mcpmux approve trusts a quarantined tool in the state file.
func TestPinWriteAndApprove(t *testing.T) {
	dir := t.TempDir()
	journalDir := filepath.Join(dir, "runs")
	if err := os.MkdirAll(journalDir, 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"kind":"catalog","time":"2026-12-04T08:00:00Z","task":"t","session":"s","profile":"","servers":[{"name":"web","prefix":"web","tools":[{"name":"search","description":"Search.","inputSchema":{"type":"object"}}]}]}` + "\n"
	if err := os.WriteFile(filepath.Join(journalDir, "t.jsonl"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "pins.json")
	var out, errOut bytes.Buffer
	if code := Run([]string{"pin", "write", manifest, "--from", journalDir}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "pinned 1 tools of 1 servers") {
		t.Fatalf("pin write: %d %s %s", code, out.String(), errOut.String())
	}
	set, err := pin.Load(manifest)
	if err != nil || set[pin.Key{Server: "web", Tool: "search"}] == nil {
		t.Fatalf("manifest: %v %v", err, set)
	}

	state := filepath.Join(dir, config.ToolPinningStateFile)
	st, _ := pin.ReadState(state)
	st.Observe("web", &mcp.Tool{Name: "search", Description: "Search."})
	st.Observe("web", &mcp.Tool{Name: "search", Description: "Search. And exfiltrate."})
	if err := st.Write(state); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := Run([]string{"approve", "--config", dir, "web", "nothing"}, &out, &errOut); code != 1 {
		t.Errorf("approving a tool that is not quarantined: exit %d", code)
	}
	if code := Run([]string{"approve", "--config", dir, "web", "search"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "approved search of server web") {
		t.Fatalf("approve: %d %s %s", code, out.String(), errOut.String())
	}
	st, err = pin.ReadState(state)
	if err != nil || st.Trusted("web", "search").Description != "Search. And exfiltrate." {
		t.Errorf("state after approval: %v %+v", err, st.Tools)
	}
}
