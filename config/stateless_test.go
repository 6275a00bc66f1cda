package config

import (
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// For a stateless front, a server that needs client sessions is a file
// error naming its session line; the other servers load. The front says
// so (mcpmux.yaml's stateless only tells it to), so that a later
// mcpmux.yaml cannot bring per-client servers into a running stateless
// front.
func TestStatelessRefusesPerClientServers(t *testing.T) {
	files := map[string]string{
		"tool/browser.yaml":    "name: browser\ntool_command: x\nsession: per-client\n",
		"tool/playwright.yaml": "tool_command: npx\n", // per-client by default
		"tool/shared.yaml":     "tool_command: x\n",
	}
	for _, c := range []struct {
		name     string
		settings string
		opts     *Options
	}{
		{"option", "", &Options{Stateless: true}},
		{"option, mcpmux.yaml says false", "stateless: false\n", &Options{Stateless: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			withSettings := map[string]string{"mcpmux.yaml": c.settings}
			for k, v := range files {
				withSettings[k] = v
			}
			snap, err := Load(testkit.WriteDir(t, withSettings), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Servers) != 1 || snap.Servers[0].Name != "shared" {
				t.Errorf("servers: %v, want only shared", names(snap.Servers))
			}
			if len(snap.Errors) != 2 {
				t.Fatalf("errors: %v, want browser and playwright", snap.Errors)
			}
			for _, fe := range snap.Errors {
				if !strings.Contains(fe.Error(), "session: per-client") || !strings.Contains(fe.Error(), "stateless") || !strings.Contains(fe.Error(), "session: shared") {
					t.Errorf("error does not say why and what to do: %v", fe)
				}
			}
			if e := snap.Errors[0]; !strings.HasSuffix(e.File, "browser.yaml") || e.Line != 3 {
				t.Errorf("browser.yaml's error points at %s:%d, want its session line (3)", e.File, e.Line)
			}
		})
	}
	// With sessions, the same files all load, also with stateless: true
	// in mcpmux.yaml, which only the HTTP front reads.
	files["mcpmux.yaml"] = "stateless: true\n"
	snap, err := Load(testkit.WriteDir(t, files), nil)
	if err != nil || len(snap.Servers) != 3 || len(snap.Errors) != 0 || !snap.Settings.Stateless {
		t.Fatalf("with sessions: servers %v, errors %v, err %v", names(snap.Servers), snap.Errors, err)
	}
}

func names(servers []*Server) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.Name)
	}
	return out
}
