package app

import (
	"errors"
	"testing"

	"github.com/mcpmux/mcpmux/config"
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
