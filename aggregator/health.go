package aggregator

import (
	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/upstream"
)

// Health is the body of /healthz.
type Health struct {
	Status  string            `json:"status"`
	Ready   bool              `json:"ready"`
	Servers []upstream.Status `json:"servers"`
	// InvalidFiles are the config files that were skipped (or whose
	// previous version keeps running) because they are invalid.
	InvalidFiles []InvalidFile `json:"invalid_files"`
	// Drifted are the tools changed since they were pinned or trusted
	// (pin, tool_pinning), with what changed.
	Drifted []Drift `json:"drifted_tools,omitempty"`
}

// InvalidFile is a config file that could not be used, and why.
type InvalidFile struct {
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Error string `json:"error"`
}

// SetInvalidFiles records the config files of the latest load that could
// not be used, for Health.
func (a *Aggregator) SetInvalidFiles(errs []*config.FileError) {
	files := make([]InvalidFile, len(errs))
	for i, fe := range errs {
		files[i] = InvalidFile{File: fe.File, Line: fe.Line, Error: fe.Err.Error()}
	}
	a.invalidFiles.Store(&files)
}

// Health reports whether start-up is over and each server's status. The
// status is "starting", then "ok", or "degraded" while a server is failed,
// restarting or needs login (mcpmux itself still serves the others);
// "draining" once mcpmux is shutting down (see Drain).
func (a *Aggregator) Health() Health {
	h := Health{Status: "ok", Servers: a.pool.Statuses()}
	select {
	case <-a.ready:
		h.Ready = true
		for _, st := range h.Servers {
			if st.State == upstream.StateFailed || st.State == upstream.StateRestarting || st.State == upstream.StateNeedsLogin {
				h.Status = "degraded"
			}
		}
	default:
		h.Status = "starting"
	}
	if a.draining.Load() {
		h.Status = StatusDraining
	}
	if h.Servers == nil {
		h.Servers = []upstream.Status{}
	}
	h.Drifted = a.Drifts()
	for _, d := range h.Drifted {
		if d.refuse && h.Status == "ok" {
			h.Status = "degraded"
		}
	}
	h.InvalidFiles = []InvalidFile{}
	if files := a.invalidFiles.Load(); files != nil {
		h.InvalidFiles = *files
	}
	return h
}

// HealthReport is Health for /healthz (see front.Engine).
func (a *Aggregator) HealthReport() any { return a.Health() }
