package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// found decodes find_tools' structuredContent into the names it found.
func foundTools(t *testing.T, res *mcp.CallToolResult) (names []string, total int) {
	t.Helper()
	var out struct {
		Tools []struct {
			Name        string
			InputSchema map[string]any
		}
		Total int
	}
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &out) != nil || res.IsError {
		t.Fatalf("find_tools = %v\n%s", res.StructuredContent, resultText(res))
	}
	for _, ft := range out.Tools {
		if ft.InputSchema["type"] != "object" {
			t.Errorf("find_tools: %s has input schema %v", ft.Name, ft.InputSchema)
		}
		names = append(names, ft.Name)
	}
	return names, out.Total
}

// A lazy profile over real servers: its list holds only the meta tools
// and always; a tool found and exposed joins that client's list (with
// tools/list_changed) and is called; a server added by a reload is found
// at once; a blacklisted tool is never found, nor called.
func TestLazyCatalog(t *testing.T) {
	t.Parallel()
	workspace := t.TempDir()
	if err := os.WriteFile(filepath.Join(workspace, "notes.txt"), []byte("lazy lists are short"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":          "catalog: lazy\nalways: [\"echo__*\"]\ntool_blacklist: [[filesystem, write_file]]\n",
		"tool/echo.yaml":       fixture("echo", "echo"),
		"tool/filesystem.yaml": npmServer(t, "filesystem", "mcp-server-filesystem", workspace),
	})
	changed := make(chan struct{}, 16)
	cs, p := startStdioWith(t, dir, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})

	listed := toolNames(t, cs)
	for _, name := range listed {
		if !strings.HasPrefix(name, "echo__") && name != "mcpmux__find_tools" && name != "mcpmux__call_tool" {
			t.Errorf("lazy tools/list has %s: want only echo__* (always) and the meta tools; all: %v", name, listed)
		}
	}
	for _, want := range []string{"echo__echo", "mcpmux__find_tools", "mcpmux__call_tool"} {
		if !slices.Contains(listed, want) {
			t.Errorf("lazy tools/list = %v, want %s", listed, want)
		}
	}

	// Found among the real filesystem server's tools, exposed, called.
	drain(changed)
	res := callTool(t, cs, "mcpmux__find_tools", map[string]any{"query": "read a text file", "limit": 3, "expose": true})
	names, _ := foundTools(t, res)
	if len(names) == 0 || (names[0] != "filesystem__read_text_file" && names[0] != "filesystem__read_file") {
		t.Fatalf("find 'read a text file' = %v\n%s", names, resultText(res))
	}
	if !strings.Contains(resultText(res), "tools/list_changed sent") {
		t.Errorf("find with expose says:\n%s", resultText(res))
	}
	select {
	case <-changed:
	case <-time.After(testTimeout):
		t.Fatal("no tools/list_changed after expose")
	}
	listed = toolNames(t, cs)
	for _, name := range names {
		if !slices.Contains(listed, name) {
			t.Errorf("exposed %s is not in tools/list %v", name, listed)
		}
	}
	res = callTool(t, cs, names[0], map[string]any{"path": filepath.Join(workspace, "notes.txt")})
	if res.IsError || !strings.Contains(resultText(res), "lazy lists are short") {
		t.Errorf("calling the exposed %s = %q", names[0], resultText(res))
	}
	// Listed or not, any tool can be called through call_tool.
	res = callTool(t, cs, "mcpmux__call_tool", map[string]any{"name": "filesystem__list_allowed_directories", "arguments": map[string]any{}})
	if res.IsError || !strings.Contains(resultText(res), filepath.Base(workspace)) {
		t.Errorf("call_tool of an unlisted tool = %q", resultText(res))
	}

	// The blacklisted tool: never found, never called.
	for _, q := range []string{"write a file", "filesystem write_file", ""} {
		names, _ := foundTools(t, callTool(t, cs, "mcpmux__find_tools", map[string]any{"query": q, "limit": 100}))
		if slices.Contains(names, "filesystem__write_file") {
			t.Errorf("find %q found the blacklisted filesystem__write_file: %v", q, names)
		}
	}
	res = callTool(t, cs, "mcpmux__call_tool", map[string]any{"name": "filesystem__write_file", "arguments": map[string]any{"path": filepath.Join(workspace, "x"), "content": "x"}})
	if !res.IsError || !strings.Contains(resultText(res), "blacklist") {
		t.Errorf("call_tool of blacklisted filesystem__write_file = %q", resultText(res))
	}
	if _, err := os.Stat(filepath.Join(workspace, "x")); err == nil {
		t.Error("the blacklisted write_file wrote its file")
	}

	// A server added by a reload is found at once, without listing first.
	if err := os.WriteFile(filepath.Join(dir, "tool/weather.yaml"), []byte(fixture("weather", "echo")), 0o644); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded" [^\n]*added=\[weather\]`))
	names, _ = foundTools(t, callTool(t, cs, "mcpmux__find_tools", map[string]any{"query": "weather echo"}))
	if len(names) == 0 || names[0] != "weather__echo" {
		t.Errorf("find 'weather echo' after the reload = %v", names)
	}
	if listed := toolNames(t, cs); slices.Contains(listed, "weather__echo") {
		t.Errorf("the new server's tool is listed before it was exposed: %v", listed)
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
