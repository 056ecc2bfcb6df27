// Package progress is the one-line terminal progress bar of the commands
// (lossless import and compact, lossless-bench's steps). A bar draws on
// the writer it is given; the commands make one only when their output is
// a terminal, so that scripts and pipes see nothing.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Options configure a Bar. The zero value is usable.
type Options struct {
	// Width returns the terminal's width in columns (nil, or a width of
	// 20 or less: 80); the line is cut to fit.
	Width func() int
	// Tick, when positive, makes the bar redraw by itself this often, so
	// that a long step shows its elapsed time moving (and a step of
	// unknown size its spinner turning) while nothing is reported.
	Tick time.Duration
	// Bytes draws the counts as sizes (KiB, MiB, ...).
	Bytes bool
}

// minRedraw is the least time between two redraws caused by updates.
const minRedraw = 100 * time.Millisecond

// Bar is a progress bar: a step (a label and a total; a total of 0 or less
// is work of unknown size, drawn as a spinner), the units done and a note
// (what is being worked on). Its methods are safe for concurrent use.
type Bar struct {
	w    io.Writer
	opts Options

	mu    sync.Mutex
	label string
	total int64
	cur   int64
	note  string
	start time.Time
	last  time.Time
	drawn bool
	stop  chan struct{}
	wg    sync.WaitGroup
}

// New returns a bar drawing on w. Call Clear when the work ends.
func New(w io.Writer, opts Options) *Bar {
	b := &Bar{w: w, opts: opts, start: time.Now()}
	if opts.Tick > 0 {
		b.stop = make(chan struct{})
		b.wg.Add(1)
		go b.tick(b.stop, opts.Tick)
	}
	return b
}

func (b *Bar) tick(stop <-chan struct{}, every time.Duration) {
	defer b.wg.Done()
	t := time.NewTicker(every)
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
				if b.label != "" {
					b.draw(true)
				}
			}
			b.mu.Unlock()
		}
	}
}

// Step starts a new step of total units (0: of unknown size) and draws it.
func (b *Bar) Step(label string, total int) { b.StepNote(label, int64(total), "") }

// StepNote is Step with a note and a total in int64 (bytes).
func (b *Bar) StepNote(label string, total int64, note string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.label, b.total, b.cur, b.note = label, total, 0, note
	b.start = time.Now()
	b.draw(true)
}

// Add reports n more units done.
func (b *Bar) Add(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur += int64(n)
	b.draw(b.total > 0 && b.cur >= b.total)
}

// Set reports the units done so far and what is being worked on.
func (b *Bar) Set(cur int64, note string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur, b.note = cur, note
	b.draw(false)
}

func (b *Bar) width() int {
	if b.opts.Width != nil {
		if w := b.opts.Width(); w > 20 {
			return w
		}
	}
	return 80
}

func (b *Bar) count(n int64) string {
	if b.opts.Bytes {
		return Bytes(n)
	}
	return fmt.Sprint(n)
}

// Line returns what the bar draws now (without the carriage return).
func (b *Bar) Line() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.line(time.Now())
}

func (b *Bar) line(now time.Time) string {
	elapsed := now.Sub(b.start).Round(100 * time.Millisecond)
	var s string
	if b.total <= 0 {
		spin := `|/-\`[int(now.Sub(b.start)/(150*time.Millisecond))%4]
		s = fmt.Sprintf("%s %c %v %s", b.label, spin, elapsed, b.note)
	} else {
		frac := min(1, float64(b.cur)/float64(b.total))
		rest := fmt.Sprintf("%3.0f%% %s/%s %v %s", frac*100, b.count(b.cur), b.count(b.total), elapsed, b.note)
		// The bar takes up to 30 cells, fewer on a narrow terminal (at
		// least 10), so that the figures stay on the line.
		cells := max(10, min(30, b.width()-1-len(b.label)-4-len(rest)))
		filled := int(frac * float64(cells))
		s = fmt.Sprintf("%s [%s%s] %s", b.label, strings.Repeat("=", filled), strings.Repeat(" ", cells-filled), rest)
	}
	s = strings.TrimRight(s, " ")
	if w := b.width() - 1; len(s) > w {
		s = s[:w]
	}
	return s
}

// draw redraws the line (b.mu held): at once when force, else at most
// every minRedraw.
func (b *Bar) draw(force bool) {
	now := time.Now()
	if !force && now.Sub(b.last) < minRedraw {
		return
	}
	b.last = now
	fmt.Fprintf(b.w, "\r%s\x1b[K", b.line(now))
	b.drawn = true
}

// Clear stops the redrawing and erases the bar's line. It is idempotent;
// the bar draws nothing after it.
func (b *Bar) Clear() {
	b.mu.Lock()
	stop := b.stop
	b.stop = nil
	b.mu.Unlock()
	if stop != nil {
		close(stop)
		b.wg.Wait()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.drawn = false
	}
	b.label = "" // later updates draw nothing
	b.w = io.Discard
}

// Bytes formats n bytes (1.5 KiB, 2.0 MiB).
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
