package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressBarTicks: a bar redraws a step by itself (its elapsed time
// moves) while nothing is added, and stops when cleared.
func TestProgressBarTicks(t *testing.T) {
	var buf bytes.Buffer
	b := &bar{w: &buf, width: func() int { return 60 }, stop: make(chan struct{})}
	b.Step("ingest: engine, bootstrap import", 1)
	go b.tick(b.stop, time.Millisecond)
	draws := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return strings.Count(buf.String(), "\r")
	}
	deadline := time.Now().Add(30 * time.Second) // a bound, not a timing
	for draws() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the bar did not redraw by itself: %q", buf.String())
		}
		time.Sleep(time.Millisecond)
	}
	b.Clear()
	b.mu.Lock()
	n := buf.Len()
	b.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	if buf.Len() != n {
		t.Fatalf("the bar drew after Clear")
	}
}
