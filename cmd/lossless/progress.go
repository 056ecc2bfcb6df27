package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// progress draws a progress bar on stderr while long work runs, only when
// stdout and stderr are terminals (scripts and pipes see nothing).
type progress struct {
	w     io.Writer
	label string
	total int64
	bytes bool // the units are bytes (drawn as sizes)
	mu    sync.Mutex
	cur   int64
	note  string
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newProgress(s *stdio, label string, total int64) *progress {
	p := &progress{label: label, total: total, start: time.Now()}
	if !isTerminal(s.out) || !isTerminal(s.err) {
		return p
	}
	p.w = s.err
	p.stop = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(150 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
	return p
}

// set records the units done and what is being worked on.
func (p *progress) set(cur int64, note string) {
	p.mu.Lock()
	p.cur, p.note = cur, note
	p.mu.Unlock()
}

func (p *progress) draw() {
	p.mu.Lock()
	cur, note, total := p.cur, p.note, p.total
	p.mu.Unlock()
	if total <= 0 {
		// Work of unknown size: a spinner with the elapsed time.
		spin := `|/-\`[int(time.Since(p.start)/(150*time.Millisecond))%4]
		fmt.Fprintf(p.w, "\r%s %c %s %s\x1b[K", p.label, spin, time.Since(p.start).Round(time.Second), note)
		return
	}
	const width = 30
	filled := int(min(cur, total) * width / total)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	count := fmt.Sprintf("%d/%d", cur, total)
	if p.bytes {
		count = humanBytes(cur) + "/" + humanBytes(total)
	}
	fmt.Fprintf(p.w, "\r%s [%s] %s %s %s\x1b[K", p.label, bar, count,
		time.Since(p.start).Round(time.Second), filepath.Base(note))
}

// done stops the bar and clears its line.
func (p *progress) done() {
	if p.stop == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.stop = nil
	fmt.Fprint(p.w, "\r\x1b[K")
}
