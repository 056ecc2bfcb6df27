package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// tickEvery is how often a bar on a terminal redraws by itself.
const tickEvery = time.Second

// bar is a one-line terminal progress bar (bench.Progress). It redraws at
// most every 100 ms, and on each new step. Writing to a file (the
// terminal), it also redraws every second by itself, so that a long step
// (a bulk import, a compaction round, a LoCoMo run: one unit each) shows
// its elapsed time moving on a busy machine instead of a frozen line.
type bar struct {
	mu    sync.Mutex // the ticker draws from its own goroutine
	stop  chan struct{}
	w     io.Writer
	width func() int
	name  string
	total int
	done  int
	last  time.Time
	start time.Time
	drawn bool
}

func newBar(w io.Writer, width func() int) *bar {
	b := &bar{w: w, width: width}
	if _, ok := w.(*os.File); ok {
		b.stop = make(chan struct{})
		go b.tick(b.stop, tickEvery)
	}
	return b
}

// tick redraws the current step every interval until stop is closed
// (Clear).
func (b *bar) tick(stop <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			b.mu.Lock()
			select {
			case <-stop: // cleared while the tick waited for the lock
			default:
				if b.name != "" {
					b.draw(true)
				}
			}
			b.mu.Unlock()
		}
	}
}

// Step starts a new step.
func (b *bar) Step(name string, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.name, b.total, b.done = name, total, 0
	b.start = time.Now()
	b.draw(true)
}

// Add advances the step.
func (b *bar) Add(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
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

// Clear stops the redrawing and erases the bar's line.
func (b *bar) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stop != nil {
		close(b.stop)
		b.stop = nil
	}
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
