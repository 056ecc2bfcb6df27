package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// bar is a one-line terminal progress bar (bench.Progress). It redraws at
// most every 100 ms, and on each new step.
type bar struct {
	w     io.Writer
	width func() int
	name  string
	total int
	done  int
	last  time.Time
	start time.Time
	drawn bool
}

func newBar(w io.Writer, width func() int) *bar { return &bar{w: w, width: width} }

// Step starts a new step.
func (b *bar) Step(name string, total int) {
	b.name, b.total, b.done = name, total, 0
	b.start = time.Now()
	b.draw(true)
}

// Add advances the step.
func (b *bar) Add(n int) {
	b.done += n
	b.draw(b.done >= b.total)
}

func (b *bar) draw(force bool) {
	now := time.Now()
	if !force && now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last = now
	width := 80
	if b.width != nil {
		if w := b.width(); w > 20 {
			width = w
		}
	}
	frac := 0.0
	if b.total > 0 {
		frac = min(1, float64(b.done)/float64(b.total))
	}
	cells := 24
	fill := int(frac * float64(cells))
	label := fmt.Sprintf(" %3.0f%% %s (%d/%d, %.1fs)", frac*100, b.name, b.done, b.total, now.Sub(b.start).Seconds())
	line := "[" + strings.Repeat("#", fill) + strings.Repeat(".", cells-fill) + "]" + label
	if len(line) > width-1 {
		line = line[:width-1]
	}
	fmt.Fprintf(b.w, "\r%-*s", width-1, line)
	b.drawn = true
}

// Clear erases the bar's line.
func (b *bar) Clear() {
	if !b.drawn {
		return
	}
	width := 80
	if b.width != nil {
		if w := b.width(); w > 20 {
			width = w
		}
	}
	fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", width-1))
}
