package main

import (
	"io"
	"os"
	"time"

	"github.com/lossless-engine/contextengine/internal/progress"
)

// tickEvery is how often a bar on a terminal redraws by itself.
const tickEvery = time.Second

// newBar returns the bar of the bench's steps (bench.Progress) on w, the
// terminal: it redraws at most every 100 ms, and on each new step; on a
// file (the terminal) it also redraws every second by itself, so that a
// long step (a bulk import, a compaction round, a LoCoMo run: one unit
// each) shows its elapsed time moving on a busy machine instead of a
// frozen line.
func newBar(w io.Writer, width func() int) *progress.Bar {
	opts := progress.Options{Width: width}
	if _, ok := w.(*os.File); ok {
		opts.Tick = tickEvery
	}
	return progress.New(w, opts)
}
