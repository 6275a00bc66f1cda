package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/upstream"
)

func TestReloadResult(t *testing.T) {
	invalid := &config.Snapshot{Errors: []*config.FileError{{File: "tool/x.yaml", Err: errors.New("bad")}}}
	failed := upstream.Changes{Failed: map[string]error{"a": errors.New("down")}}
	for _, c := range []struct {
		snap    *config.Snapshot
		applied bool
		ch      upstream.Changes
		want    string
	}{
		{&config.Snapshot{}, false, upstream.Changes{}, metrics.ReloadUnchanged},
		{&config.Snapshot{}, true, upstream.Changes{Added: []string{"a"}}, metrics.ReloadApplied},
		{invalid, false, upstream.Changes{}, metrics.ReloadInvalid},
		{invalid, true, upstream.Changes{Added: []string{"a"}}, metrics.ReloadInvalid},
		{invalid, true, failed, metrics.ReloadFailed},
		{&config.Snapshot{}, true, failed, metrics.ReloadFailed},
	} {
		if got := reloadResult(c.snap, c.applied, c.ch); got != c.want {
			t.Errorf("reloadResult(%d errors, applied %v, %d failed) = %q, want %q", len(c.snap.Errors), c.applied, len(c.ch.Failed), got, c.want)
		}
	}
}

// Each reload is applied as a difference and counted by its result: a
// snapshot like the running one changes nothing, an invalid file keeps
// what ran, an edit of mcpmux.yaml applies to the aggregator.
func TestReloadAppliesTheDifference(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, "mcpmux.yaml"), "timeout: 1m\n")
	in, err := New(&Options{Dir: dir, Log: testLogger(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(time.Second)
	ctx := context.Background()
	in.Start(ctx)
	reload := func() {
		t.Helper()
		snap, err := config.Load(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		in.Reload(ctx, snap)
	}

	reload()
	testkit.WriteFile(t, filepath.Join(dir, "tool", "bad.yaml"), "tool_command: [\n")
	reload()
	if len(in.agg.Health().InvalidFiles) != 1 {
		t.Errorf("invalid files after a broken edit: %v, want tool/bad.yaml", in.agg.Health().InvalidFiles)
	}
	testkit.WriteFile(t, filepath.Join(dir, "mcpmux.yaml"), "timeout: 2m\n")
	if err := os.Remove(filepath.Join(dir, "tool", "bad.yaml")); err != nil {
		t.Fatal(err)
	}
	reload()
	if got := in.agg.Settings().Timeout; got != 2*time.Minute {
		t.Errorf("timeout after the edit: %v, want 2m", got)
	}
	if len(in.agg.Health().InvalidFiles) != 0 {
		t.Errorf("invalid files after the fix: %v", in.agg.Health().InvalidFiles)
	}
	want := `
# HELP mcpmux_config_reloads_total Config reloads by result: applied, unchanged, invalid (a file was invalid and kept its previous version), failed (a changed server did not come up).
# TYPE mcpmux_config_reloads_total counter
mcpmux_config_reloads_total{result="applied"} 1
mcpmux_config_reloads_total{result="invalid"} 1
mcpmux_config_reloads_total{result="unchanged"} 1
`
	if err := testutil.GatherAndCompare(in.metrics.Registry(), strings.NewReader(want), "mcpmux_config_reloads_total"); err != nil {
		t.Error(err)
	}
}
