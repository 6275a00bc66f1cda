package importer

import (
	"slices"
	"strings"
	"testing"
)

// The client configs of README.md and docs/clients.md reach mcpmux over HTTP, through docker, or
// by running it: none of them may become a tool server of mcpmux itself.
func TestParseLeavesOutTheWaysToReachMcpmux(t *testing.T) {
	res, err := Parse([]byte(`{
	  "mcpServers": {
	    "mcpmux": {
	      "url": "http://127.0.0.1:8080/mcp",
	      "headers": {"Authorization": "Bearer ${env:MCPMUX_TOKEN}", "X-Task-Id": "task-7"}
	    },
	    "McpMux": {
	      "command": "docker",
	      "args": ["run", "-i", "--rm", "-e", "MCPMUX_TOKEN", "mcpmux", "--profile", "coding"]
	    },
	    "mux-local": {"command": "/opt/bin/mcpmux", "args": ["--config", "/etc/mcpmux"]},
	    "mcpmux-docs": {"url": "https://docs.example.com/mcp"}
	  }
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ignored []string
	for _, e := range res.Ignored {
		ignored = append(ignored, e.Source)
	}
	slices.Sort(ignored)
	if want := []string{"McpMux", "mcpmux", "mux-local"}; !slices.Equal(ignored, want) {
		t.Errorf("ignored = %v, want %v", res.Ignored, want)
	}
	for _, e := range res.Ignored {
		if e.Source == "mcpmux" && !strings.Contains(e.Error(), "rename it in the client config") {
			t.Errorf("ignored mcpmux says %q: want how to import it anyway", e.Error())
		}
	}
	if got := names(res); !slices.Equal(got, []string{"mcpmux-docs"}) {
		t.Errorf("imported %v, want only mcpmux-docs (a server whose name merely contains mcpmux)", got)
	}
}
