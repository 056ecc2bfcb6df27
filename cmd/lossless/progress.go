package main

import (
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/lossless-engine/contextengine/internal/progress"
)

// newProgress returns a progress bar of one step, label, of total units
// (0: unknown, a spinner; bytes: sizes), drawn on stderr only when stdout
// and stderr are terminals (scripts and pipes see nothing). The caller
// reports with Set and ends it with Clear.
func newProgress(s *stdio, label string, total int64, bytes bool) *progress.Bar {
	opts := progress.Options{Bytes: bytes}
	w := io.Discard
	if isTerminal(s.out) && isTerminal(s.err) {
		w = s.err
		opts.Tick = 150 * time.Millisecond
		if f, ok := s.err.(*os.File); ok {
			opts.Width = func() int {
				n, _, err := term.GetSize(int(f.Fd()))
				if err != nil {
					return 80
				}
				return n
			}
		}
	}
	b := progress.New(w, opts)
	b.StepNote(label, total, "")
	return b
}
