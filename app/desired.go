package app

import (
	"maps"
	"slices"

	"github.com/mcpmux/mcpmux/config"
)

// desired is the configuration the pool should run after a reload: each
// new snapshot's valid files, but a file that no longer parses keeps its
// previous version (Caddy-style: a bad edit never takes a working server
// away), and so does a broken mcpmux.yaml.
type desired struct {
	settings *config.Settings
	servers  []*config.Server
}

// resolve computes what to run given the running state and a new snapshot.
func resolve(running *desired, snap *config.Snapshot) *desired {
	d := &desired{settings: snap.Settings}
	byName := map[string]*config.Server{}
	for _, s := range snap.Servers {
		byName[s.Name] = s
	}
	for _, fe := range snap.Errors {
		if running == nil {
			continue
		}
		if fe.File == running.settings.File && running.settings.File != "" {
			d.settings = running.settings
			continue
		}
		for _, old := range running.servers {
			if old.File == fe.File && byName[old.Name] == nil {
				byName[old.Name] = old
			}
		}
	}
	// A disabled server is gone on purpose, even if an old version lingers.
	for _, s := range snap.Disabled {
		delete(byName, s.Name)
	}
	if d.settings.ReplaysCatalog() {
		// The tools are the replayed journal's: no server is to run.
		return d
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		d.servers = append(d.servers, byName[name])
	}
	return d
}

// same reports whether d describes what running already runs.
func (d *desired) same(running *desired) bool {
	if running == nil || d.settings.Hash != running.settings.Hash || len(d.servers) != len(running.servers) {
		return false
	}
	for i, s := range d.servers {
		if s.Name != running.servers[i].Name || s.Hash != running.servers[i].Hash {
			return false
		}
	}
	return true
}

// server returns d's server called name, or nil.
func (d *desired) server(name string) *config.Server {
	for _, s := range d.servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}
