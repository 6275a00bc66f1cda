package config

import (
	"fmt"
	"path/filepath"
)

// Journal is the journal key of mcpmux.yaml: one JSON Lines file per task,
// a line per tool call (package journal writes them).
type Journal struct {
	// Dir holds the files, relative to the config directory.
	Dir string `koanf:"dir"`
	// MaxBytes is the size past which a file is rotated to <file>.1 (the
	// previous .1 is replaced). Zero means DefaultJournalMaxBytes.
	MaxBytes Size `koanf:"max_bytes"`
}

// Replay is the replay key of mcpmux.yaml: calls answered from a journal
// instead of their servers (package journal/replay).
type Replay struct {
	// From is the journal directory to replay, relative to the config
	// directory.
	From string `koanf:"from"`
	// Miss says what a call the journal does not hold gets: ReplayMissError
	// (the default), ReplayMissCall or ReplayMissRecord.
	Miss string `koanf:"miss"`
	// Catalog says where the tool list comes from: ReplayCatalogLive (the
	// default: the servers, started as usual) or ReplayCatalogRecorded (the
	// journal's, with no server started).
	Catalog string `koanf:"catalog"`
}

// Pin is the pin key of mcpmux.yaml: the tool definitions to hold the
// servers' to (package journal/pin).
type Pin struct {
	// From is a journal directory or a manifest file, relative to the
	// config directory.
	From string `koanf:"from"`
	// OnChange is PinRefuse (the default) or PinWarn.
	OnChange string `koanf:"on_change"`
}

// Values of pin.on_change.
const (
	PinRefuse = "refuse" // a changed tool is hidden and its calls refused
	PinWarn   = "warn"   // a changed tool is served, logged and flagged
)

// ToolPinningStateFile is the state file of tool_pinning, in the config
// directory.
const ToolPinningStateFile = ".mcpmux-tool-pins.json"

// DefaultJournalMaxBytes is journal.max_bytes when unset.
const DefaultJournalMaxBytes Size = 100 << 20

// Values of replay.miss and replay.catalog.
const (
	ReplayMissError       = "error"    // an isError result saying no call was recorded
	ReplayMissCall        = "call"     // the call goes to its server
	ReplayMissRecord      = "record"   // the call goes to its server, and its answer into the replayed journal
	ReplayCatalogLive     = "live"     // tools are the running servers'
	ReplayCatalogRecorded = "recorded" // tools are the journal's; no server runs
)

// ReplaysCatalog reports whether the tools come from the replayed journal,
// and so no server is to be started.
func (s *Settings) ReplaysCatalog() bool {
	return s.Replay != nil && s.Replay.Catalog == ReplayCatalogRecorded
}

func (s *Settings) normalizeRecording() {
	if s.Pin != nil && s.Pin.OnChange == "" {
		s.Pin.OnChange = PinRefuse
	}
	if s.Journal != nil && s.Journal.MaxBytes == 0 {
		s.Journal.MaxBytes = DefaultJournalMaxBytes
	}
	if s.Replay != nil {
		if s.Replay.Miss == "" {
			s.Replay.Miss = ReplayMissError
		}
		if s.Replay.Catalog == "" {
			s.Replay.Catalog = ReplayCatalogLive
		}
	}
}

func (s *Settings) validateRecording() error {
	if j := s.Journal; j != nil {
		if j.Dir == "" {
			return fieldErr("journal.dir", fmt.Errorf("missing: the directory to write the journal into (relative to the config directory)"))
		}
		if j.MaxBytes < minLimit {
			return fieldErr("journal.max_bytes", fmt.Errorf("%v is too small (at least %v)", j.MaxBytes, minLimit))
		}
	}
	if p := s.Pin; p != nil {
		if p.From == "" {
			return fieldErr("pin.from", fmt.Errorf("missing: a journal directory or a manifest file (mcpmux pin write makes one)"))
		}
		if p.OnChange != PinRefuse && p.OnChange != PinWarn {
			return fieldErr("pin.on_change", fmt.Errorf("unknown value %q (%s, %s)", p.OnChange, PinRefuse, PinWarn))
		}
	}
	r := s.Replay
	if r == nil {
		return nil
	}
	if r.From == "" {
		return fieldErr("replay.from", fmt.Errorf("missing: the journal directory to replay (relative to the config directory)"))
	}
	if r.Miss != ReplayMissError && r.Miss != ReplayMissCall && r.Miss != ReplayMissRecord {
		return fieldErr("replay.miss", fmt.Errorf("unknown value %q (%s, %s, %s)", r.Miss, ReplayMissError, ReplayMissCall, ReplayMissRecord))
	}
	if r.Catalog != ReplayCatalogLive && r.Catalog != ReplayCatalogRecorded {
		return fieldErr("replay.catalog", fmt.Errorf("unknown value %q (%s, %s)", r.Catalog, ReplayCatalogLive, ReplayCatalogRecorded))
	}
	if r.Catalog == ReplayCatalogRecorded && r.Miss != ReplayMissError {
		return fieldErr("replay.miss", fmt.Errorf("%q needs the servers, which catalog: %s does not start; use miss: %s, or catalog: %s", ReplayMissCall, ReplayCatalogRecorded, ReplayMissError, ReplayCatalogLive))
	}
	if s.Journal != nil && filepath.Clean(s.Journal.Dir) == filepath.Clean(r.From) {
		return fieldErr("replay.from", fmt.Errorf("%q is also journal.dir: the run would append to the journal it replays; write the journal into another directory", r.From))
	}
	return nil
}

// resolveRecordingDirs makes the journal and replay directories absolute,
// relative to the config directory dir.
func (s *Settings) resolveRecordingDirs(dir string) {
	if s.Journal != nil && !filepath.IsAbs(s.Journal.Dir) {
		s.Journal.Dir = filepath.Join(dir, s.Journal.Dir)
	}
	if s.Replay != nil && !filepath.IsAbs(s.Replay.From) {
		s.Replay.From = filepath.Join(dir, s.Replay.From)
	}
	if s.Pin != nil && !filepath.IsAbs(s.Pin.From) {
		s.Pin.From = filepath.Join(dir, s.Pin.From)
	}
	if s.ToolPinning {
		s.ToolPinningState = filepath.Join(dir, ToolPinningStateFile)
	}
}
