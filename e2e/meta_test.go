package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A client that lists tools once and ignores list_changed still reaches a
// tool added by hot reload, through mcpmux__find_tools and
// mcpmux__call_tool; mcpmux__status shows the new server.
func TestMetaToolsReachToolsAddedByReload(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":    "meta_tools: [status, find_tools, call_tool]\ntool_blacklist: [[late, env]]\n",
		"tool/echo.yaml": fixture("echo", "echo"),
	})
	cs, p := startStdio(t, dir) // no ToolListChangedHandler: it never re-lists
	listed := toolNames(t, cs)
	for _, want := range []string{"mcpmux__status", "mcpmux__find_tools", "mcpmux__call_tool", "echo__echo"} {
		if !slices.Contains(listed, want) {
			t.Fatalf("tools = %v, want %s", listed, want)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "tool/late.yaml"), []byte(fixture("late", "echo")), 0o644); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded" [^\n]*added=\[late\]`))

	res := callTool(t, cs, "mcpmux__find_tools", map[string]any{"query": "late echo"})
	var found struct {
		Tools []struct {
			Name        string
			Description string
			InputSchema map[string]any
		}
		Total int
	}
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &found) != nil {
		t.Fatalf("find_tools structuredContent = %v", res.StructuredContent)
	}
	if res.IsError || len(found.Tools) == 0 || found.Tools[0].Name != "late__echo" || found.Tools[0].Description != "Echoes text." || found.Tools[0].InputSchema["type"] != "object" {
		t.Fatalf("find_tools 'late echo' = %+v\n%s", found, resultText(res))
	}
	if strings.Contains(resultText(res), "late__env") {
		t.Errorf("find_tools shows the blacklisted late__env:\n%s", resultText(res))
	}

	res = callTool(t, cs, "mcpmux__call_tool", map[string]any{"name": "late__echo", "arguments": map[string]any{"text": "hi"}})
	if res.IsError || resultText(res) != "echo: hi" {
		t.Errorf("call_tool late__echo = %q (isError %v)", resultText(res), res.IsError)
	}
	res = callTool(t, cs, "mcpmux__call_tool", map[string]any{"name": "late__env", "arguments": map[string]any{"name": "HOME"}})
	if !res.IsError || !strings.Contains(resultText(res), "blacklist") {
		t.Errorf("call_tool of blacklisted late__env = %q, want refused", resultText(res))
	}

	res = callTool(t, cs, "mcpmux__status", nil)
	if res.IsError || !strings.Contains(resultText(res), "2 of 2 servers up") || !strings.Contains(resultText(res), "- late: up") {
		t.Errorf("status = %q", resultText(res))
	}
	var status struct {
		Ready   bool
		Servers []struct{ Name, State string }
	}
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &status) != nil || !status.Ready || len(status.Servers) != 2 || status.Servers[1].Name != "late" || status.Servers[1].State != "up" {
		t.Errorf("status structuredContent = %v", res.StructuredContent)
	}

	// Removing meta_tools takes them away again.
	if err := os.WriteFile(filepath.Join(dir, "mcpmux.yaml"), []byte("tool_blacklist: [[late, env]]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded" [^\n]*settings_changed=true`))
	res = callTool(t, cs, "mcpmux__find_tools", map[string]any{"query": "echo"})
	if !res.IsError || !strings.Contains(resultText(res), "Unknown tool") {
		t.Errorf("find_tools after meta_tools was removed = %q, want unknown", resultText(res))
	}
}
