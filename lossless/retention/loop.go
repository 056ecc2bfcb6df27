package retention

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Loop is the open engine's periodic retention pass (Start; Stop).
type Loop struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Timing times the periodic pass.
type Timing struct {
	// First is the delay of the first pass after Start.
	First time.Duration
	// Unit is the unit of Limits.IntervalMinutes (a minute; tests
	// shorten it).
	Unit time.Duration
	// DefaultIntervalMinutes is the interval when Limits.IntervalMinutes
	// is 0.
	DefaultIntervalMinutes int
}

// Start starts the periodic retention pass when a limit is set and the
// pass is not turned off (Limits.IntervalMinutes -1). Otherwise, when a
// stopped pass left a conversation partly deleted (Retiring), one pass
// t.First after Start finishes that deletion and nothing else; nil when
// there is nothing to run.
func Start(p Port, t Timing) *Loop {
	r := p.Limits()
	interruptedOnly := (r.MaxAgeDays <= 0 && r.MaxBytesPerAgent <= 0) || r.IntervalMinutes < 0
	if interruptedOnly {
		retiring, err := AnyRetiring(context.Background(), p)
		if err != nil {
			// Cannot tell: the pass runs and finds out (it reports what it
			// cannot read).
			slog.Warn("lossless: retention: could not list conversations", "err", err)
		} else if !retiring {
			return nil
		}
	}
	every := time.Duration(r.IntervalMinutes) * t.Unit
	if r.IntervalMinutes == 0 {
		every = time.Duration(t.DefaultIntervalMinutes) * t.Unit
	}
	l := &Loop{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-l.stop
			cancel()
		}()
		tm := time.NewTimer(t.First)
		defer tm.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tm.C:
			}
			res, err := Retain(ctx, p, time.Time{}, Options{InterruptedOnly: interruptedOnly})
			switch {
			case err != nil && ctx.Err() == nil:
				slog.Warn("lossless: retention pass failed", "err", err)
			case len(res.Deleted) > 0:
				slog.Info("lossless: retention deleted conversations", "conversations", len(res.Deleted),
					"messages", res.Messages, "bytes", res.Bytes)
			}
			if interruptedOnly {
				return
			}
			tm.Reset(every)
		}
	}()
	return l
}

// Stop stops the periodic pass and waits for a pass in progress
// (cancelled) to end. A nil Loop (nothing started) is stopped already.
func (l *Loop) Stop() {
	if l == nil {
		return
	}
	l.once.Do(func() { close(l.stop) })
	<-l.done
}
