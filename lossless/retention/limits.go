package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/lossless-engine/contextengine/store"
)

// Limits are the engine's retention limits (lossless.RetentionConfig):
// zero values mean no limit.
type Limits struct {
	// MaxAgeDays deletes conversations whose last message is older than
	// this many days.
	MaxAgeDays int
	// MaxBytesPerAgent deletes an agent's conversations with the oldest
	// last message while its stored bytes exceed this.
	MaxBytesPerAgent int64
	// IntervalMinutes is how often the periodic pass runs (0: the
	// default; -1: no periodic pass).
	IntervalMinutes int
}

// Timing times the periodic pass (the delay of the first is NewLoop's).
type Timing struct {
	// Unit is the unit of Limits.IntervalMinutes (a minute; tests
	// shorten it).
	Unit time.Duration
	// DefaultIntervalMinutes is the interval when Limits.IntervalMinutes
	// is 0.
	DefaultIntervalMinutes int
}

// Schedule is how the periodic pass runs with limits l: every is the
// interval between passes; interruptedOnly is true when no limit is set
// or the periodic pass is turned off (Limits.IntervalMinutes -1), in
// which case one pass, the first, finishes the deletions a
// stopped pass began (when AnyRetiring finds one) and nothing else.
func Schedule(l Limits, t Timing) (every time.Duration, interruptedOnly bool) {
	interruptedOnly = (l.MaxAgeDays <= 0 && l.MaxBytesPerAgent <= 0) || l.IntervalMinutes < 0
	every = time.Duration(l.IntervalMinutes) * t.Unit
	if l.IntervalMinutes == 0 {
		every = time.Duration(t.DefaultIntervalMinutes) * t.Unit
	}
	return every, interruptedOnly
}

// AnyRetiring reports whether a conversation of st is marked Retiring (a
// stopped retention pass left it partly deleted).
func AnyRetiring(ctx context.Context, st store.Store) (bool, error) {
	found := false
	err := st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			if cr.Retiring {
				found = true
				break
			}
		}
		return nil
	})
	return found, err
}

// Needed reports whether a periodic pass of schedule interruptedOnly
// (Schedule) has anything to do: always, unless interruptedOnly; then when
// a stopped pass left a conversation of st Retiring, or when that cannot
// be told (logged: the pass runs and reports what it cannot read).
func Needed(ctx context.Context, st store.Store, interruptedOnly bool) bool {
	if !interruptedOnly {
		return true
	}
	retiring, err := AnyRetiring(ctx, st)
	if err != nil {
		slog.Warn("lossless: retention: could not list conversations", "err", err)
		return true
	}
	return retiring
}
