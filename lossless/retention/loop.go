package retention

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Loop paces the open engine's periodic retention pass, which the engine
// runs in its own goroutine:
//
//	l := NewLoop(first, every, once)
//	go func() {
//		defer l.Exit()
//		for l.Next() {
//			res, err := pass(l.Context())
//			l.Report(res, err)
//		}
//	}()
//
// and stops with Stop (Close).
type Loop struct {
	first, every time.Duration
	once         bool
	runs         int
	ctx          context.Context
	cancel       context.CancelFunc
	stop         chan struct{}
	done         chan struct{}
	stopOnce     sync.Once
	tm           *time.Timer
}

// NewLoop returns a Loop whose first pass comes first after Next is first
// called, then one every every; with once, the first pass is the only
// one.
func NewLoop(first, every time.Duration, once bool) *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	return &Loop{first: first, every: every, once: once, ctx: ctx, cancel: cancel,
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Context is the passes' context, ended by Stop.
func (l *Loop) Context() context.Context { return l.ctx }

// Next waits for the next pass's time and reports whether to run it:
// false once the loop is stopped, or after the only pass of a once loop.
func (l *Loop) Next() bool {
	if l.once && l.runs > 0 {
		return false
	}
	d := l.every
	if l.runs == 0 {
		d = l.first
	}
	l.runs++
	if l.tm == nil {
		l.tm = time.NewTimer(d)
	} else {
		l.tm.Reset(d)
	}
	select {
	case <-l.stop:
		return false
	case <-l.tm.C:
		return true
	}
}

// Report logs a pass's outcome: its error unless the loop was stopped,
// else what it deleted, if anything.
func (l *Loop) Report(res Result, err error) {
	switch {
	case err != nil && l.ctx.Err() == nil:
		slog.Warn("lossless: retention pass failed", "err", err)
	case len(res.Deleted) > 0:
		slog.Info("lossless: retention deleted conversations", "conversations", len(res.Deleted),
			"messages", res.Messages, "bytes", res.Bytes)
	}
}

// Exit ends the loop's goroutine: Stop returns after it.
func (l *Loop) Exit() {
	if l.tm != nil {
		l.tm.Stop()
	}
	close(l.done)
}

// Stop stops the loop, cancels a pass in progress and waits for its
// goroutine to Exit. A nil Loop (nothing started) is stopped already.
func (l *Loop) Stop() {
	if l == nil {
		return
	}
	l.stopOnce.Do(func() {
		close(l.stop)
		l.cancel()
	})
	<-l.done
}
