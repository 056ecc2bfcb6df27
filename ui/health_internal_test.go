package ui

import (
	"testing"
	"time"
)

// TestHealthStale: the whole-store checks run again after healthMaxAge,
// or after healthDuty times their own duration when that is longer.
func TestHealthStale(t *testing.T) {
	for _, c := range []struct {
		durationMs int64
		age        time.Duration
		want       bool
	}{
		{200, 29 * time.Second, false},
		{200, 31 * time.Second, true},
		{10_000, 31 * time.Second, false}, // a 10 s run: again after 100 s
		{10_000, 99 * time.Second, false},
		{10_000, 101 * time.Second, true},
	} {
		if got := healthStale(healthRun{DurationMs: c.durationMs}, c.age); got != c.want {
			t.Errorf("a run of %d ms, ended %v ago: stale %v, want %v", c.durationMs, c.age, got, c.want)
		}
	}
}
