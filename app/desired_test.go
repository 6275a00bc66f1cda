package app

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/config"
)

// srv is a server read from tool/<name>.yaml, at version v.
func srv(name, v string) *config.Server {
	return &config.Server{Name: name, File: "tool/" + name + ".yaml", Hash: name + "@" + v}
}

func settings(file, v string) *config.Settings {
	return &config.Settings{File: file, Hash: "settings@" + v}
}

func broken(file string) *config.FileError {
	return &config.FileError{File: file, Line: 1, Err: errors.New("bad")}
}

// describe is d as "settings@v: a@v b@v".
func describe(d *desired) string {
	var names []string
	for _, s := range d.servers {
		names = append(names, s.Hash)
	}
	return fmt.Sprintf("%s: %s", d.settings.Hash, strings.Join(names, " "))
}

// What runs after a reload: each new snapshot's valid files, but a file
// that no longer parses keeps its previous version, as does a broken
// mcpmux.yaml; a disabled server goes even if its old version lingers.
func TestResolveDesiredState(t *testing.T) {
	running := &desired{settings: settings("mcpmux.yaml", "1"), servers: []*config.Server{srv("a", "1"), srv("b", "1")}}
	for _, c := range []struct {
		what    string
		running *desired
		snap    *config.Snapshot
		want    string
	}{
		{"the first start: the snapshot, servers by name",
			nil,
			&config.Snapshot{Settings: settings("mcpmux.yaml", "1"), Servers: []*config.Server{srv("b", "1"), srv("a", "1")}},
			"settings@1: a@1 b@1"},
		{"the first start: a broken file has no previous version",
			nil,
			&config.Snapshot{Settings: settings("mcpmux.yaml", "1"), Servers: []*config.Server{srv("a", "1")}, Errors: []*config.FileError{broken("tool/b.yaml")}},
			"settings@1: a@1"},
		{"an edit, an addition and a removal",
			running,
			&config.Snapshot{Settings: settings("mcpmux.yaml", "2"), Servers: []*config.Server{srv("a", "2"), srv("c", "1")}},
			"settings@2: a@2 c@1"},
		{"a file that breaks keeps its previous version",
			running,
			&config.Snapshot{Settings: settings("mcpmux.yaml", "1"), Servers: []*config.Server{srv("a", "2")}, Errors: []*config.FileError{broken("tool/b.yaml")}},
			"settings@1: a@2 b@1"},
		{"a broken file does not take back a name another valid file now holds",
			running,
			&config.Snapshot{Settings: settings("mcpmux.yaml", "1"), Servers: []*config.Server{srv("a", "1"), {Name: "b", File: "tool/b2.yaml", Hash: "b@2"}}, Errors: []*config.FileError{broken("tool/b.yaml")}},
			"settings@1: a@1 b@2"},
		{"a new file that is broken adds nothing",
			running,
			&config.Snapshot{Settings: settings("mcpmux.yaml", "1"), Servers: []*config.Server{srv("a", "1"), srv("b", "1")}, Errors: []*config.FileError{broken("tool/c.yaml")}},
			"settings@1: a@1 b@1"},
		{"a broken mcpmux.yaml keeps the running settings",
			running,
			&config.Snapshot{Settings: config.DefaultSettings(), Servers: []*config.Server{srv("a", "1"), srv("b", "1")}, Errors: []*config.FileError{broken("mcpmux.yaml")}},
			"settings@1: a@1 b@1"},
		{"a broken mcpmux.yaml where none ran before: the defaults",
			&desired{settings: settings("", "0"), servers: []*config.Server{srv("a", "1")}},
			&config.Snapshot{Settings: settings("", "default"), Servers: []*config.Server{srv("a", "1")}, Errors: []*config.FileError{broken("mcpmux.yaml")}},
			"settings@default: a@1"},
		{"a disabled server goes, even with its file broken",
			running,
			&config.Snapshot{Settings: settings("mcpmux.yaml", "1"), Servers: []*config.Server{srv("a", "1")}, Disabled: []*config.Server{srv("b", "2")}, Errors: []*config.FileError{broken("tool/b.yaml")}},
			"settings@1: a@1"},
		{"a replayed catalog runs no server",
			running,
			&config.Snapshot{Settings: &config.Settings{File: "mcpmux.yaml", Hash: "settings@replay", Replay: &config.Replay{Catalog: config.ReplayCatalogRecorded}}, Servers: []*config.Server{srv("a", "1")}},
			"settings@replay: "},
	} {
		if got := describe(resolve(c.running, c.snap)); got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
}

// same tells a reload that changes nothing: the settings and every
// server, by name and version, as they run.
func TestDesiredSame(t *testing.T) {
	running := &desired{settings: settings("mcpmux.yaml", "1"), servers: []*config.Server{srv("a", "1"), srv("b", "1")}}
	for _, c := range []struct {
		what string
		d    *desired
		want bool
	}{
		{"the same", &desired{settings: settings("mcpmux.yaml", "1"), servers: []*config.Server{srv("a", "1"), srv("b", "1")}}, true},
		{"other settings", &desired{settings: settings("mcpmux.yaml", "2"), servers: []*config.Server{srv("a", "1"), srv("b", "1")}}, false},
		{"a server fewer", &desired{settings: settings("mcpmux.yaml", "1"), servers: []*config.Server{srv("a", "1")}}, false},
		{"a server edited", &desired{settings: settings("mcpmux.yaml", "1"), servers: []*config.Server{srv("a", "1"), srv("b", "2")}}, false},
		{"a server renamed", &desired{settings: settings("mcpmux.yaml", "1"), servers: []*config.Server{srv("a", "1"), {Name: "c", Hash: "b@1"}}}, false},
	} {
		if got := c.d.same(running); got != c.want {
			t.Errorf("%s: same = %v, want %v", c.what, got, c.want)
		}
	}
	if running.same(nil) {
		t.Error("anything is the same as nothing running")
	}
}
