package summarize

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// Guard defaults.
const (
	DefaultTimeout           = 60 * time.Second
	DefaultMaxRetries        = 2
	DefaultBaseBackoff       = 500 * time.Millisecond
	DefaultMaxBackoff        = 30 * time.Second
	DefaultBreakerFailures   = 5
	DefaultBreakerCooldown   = 60 * time.Second
	DefaultMaxCallsPerWindow = 60
	DefaultSpendWindow       = time.Minute
)

// ErrBreakerOpen is the reason a Guard skipped its model: the circuit breaker is open.
var ErrBreakerOpen = errors.New("summarize: circuit breaker open")

// ErrSpendLimit is the reason a Guard skipped its model: the spend guard's
// call budget for the window is used up.
var ErrSpendLimit = errors.New("summarize: spend limit reached")

// GuardOptions configures a Guard. Zero fields take the defaults above.
type GuardOptions struct {
	// Timeout bounds one attempt (default DefaultTimeout).
	Timeout time.Duration
	// MaxRetries is the number of retries after a retryable failure
	// (HTTP 408/409/429/5xx, network errors, timeouts): default
	// DefaultMaxRetries, negative for none.
	MaxRetries int
	// BaseBackoff is the first retry's wait, doubled each retry (default
	// DefaultBaseBackoff). A 429's Retry-After replaces it.
	BaseBackoff time.Duration
	// MaxBackoff caps a wait; a Retry-After beyond it ends the retries
	// (default DefaultMaxBackoff).
	MaxBackoff time.Duration
	// Spend limits model calls; nil means DefaultSpend, shared by the process.
	Spend *SpendGuard
	// Breaker is the circuit breaker; nil means a new one from
	// BreakerFailures and BreakerCooldown.
	Breaker *Breaker
	// BreakerFailures opens the breaker after this many consecutive failures
	// (default DefaultBreakerFailures).
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open before one trial
	// call (default DefaultBreakerCooldown).
	BreakerCooldown time.Duration
	// Counter counts tokens for the "shorter than the input" check (default
	// core.DefaultCounter()).
	Counter core.TokenCounter
	// Sleep waits between retries (default: a timer honouring ctx); tests
	// replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// GuardStats counts what a Guard did.
type GuardStats struct {
	Calls     int // attempts on the inner summarizer
	Failures  int // failed attempts (errors, timeouts, empty or not-shorter output)
	Retries   int // attempts after the first one of a request
	Fallbacks int // requests answered by the fallback
	Skipped   int // requests that never reached the model (breaker open, spend limit)
}

// Guard wraps a model summarizer with a per-attempt timeout, bounded retries
// with backoff (Retry-After respected), reasoning stripped from the output,
// rejection of empty or not-shorter output, a spend guard and a circuit
// breaker. An answer shorter than the input but over TargetTokens is
// returned as is: the caller decides whether to escalate (as the compactor
// does). When the model fails it answers with the fallback summarizer
// (normally the extractive one), so compaction always converges. It is safe
// for concurrent use.
type Guard struct {
	inner, fallback core.Summarizer
	opts            GuardOptions

	mu    sync.Mutex
	stats GuardStats
}

// NewGuard returns a Guard around inner that falls back to fallback (which
// may be nil: then failures are returned as errors wrapping
// core.ErrSummarizerFailed).
func NewGuard(inner core.Summarizer, fallback core.Summarizer, opts GuardOptions) *Guard {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	} else if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = DefaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.Spend == nil {
		opts.Spend = DefaultSpend
	}
	if opts.Breaker == nil {
		opts.Breaker = NewBreaker(opts.BreakerFailures, opts.BreakerCooldown)
	}
	if opts.Counter == nil {
		opts.Counter = core.DefaultCounter()
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepCtx
	}
	return &Guard{inner: inner, fallback: fallback, opts: opts}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Name returns the inner summarizer's name.
func (g *Guard) Name() string { return g.inner.Name() }

// Breaker returns the Guard's circuit breaker.
func (g *Guard) Breaker() *Breaker { return g.opts.Breaker }

// Stats returns a copy of the Guard's counters.
func (g *Guard) Stats() GuardStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

func (g *Guard) count(f func(*GuardStats)) {
	g.mu.Lock()
	f(&g.stats)
	g.mu.Unlock()
}

// Summarize tries the inner summarizer and falls back on failure. A
// cancelled ctx is returned as an error, never hidden by the fallback.
func (g *Guard) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("summarize: guard: %w", err)
	}
	out, err := g.tryModel(ctx, req)
	if err == nil {
		return out, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", fmt.Errorf("summarize: guard: %w", ctxErr)
	}
	if g.fallback == nil {
		return "", err
	}
	g.count(func(s *GuardStats) { s.Fallbacks++ })
	out, ferr := g.fallback.Summarize(ctx, req)
	if ferr != nil {
		return "", fmt.Errorf("summarize: guard: fallback %s after %v: %w", g.fallback.Name(), err, ferr)
	}
	return out, nil
}

// tryModel runs the attempts; its error wraps core.ErrSummarizerFailed.
func (g *Guard) tryModel(ctx context.Context, req core.SummarizeRequest) (string, error) {
	inTokens := -1
	var last error
	for attempt := 0; attempt <= g.opts.MaxRetries; attempt++ {
		if !g.opts.Breaker.Allow() {
			if last == nil {
				g.count(func(s *GuardStats) { s.Skipped++ })
			}
			return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, errors.Join(ErrBreakerOpen, last))
		}
		if !g.opts.Spend.Allow() {
			g.opts.Breaker.Release()
			if last == nil {
				g.count(func(s *GuardStats) { s.Skipped++ })
			}
			return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, errors.Join(ErrSpendLimit, last))
		}
		g.count(func(s *GuardStats) {
			s.Calls++
			if attempt > 0 {
				s.Retries++
			}
		})
		actx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
		out, err := g.inner.Summarize(actx, req)
		cancel()
		retryable := true
		if err == nil {
			out = StripReasoning(out)
			switch {
			case out == "":
				err, retryable = errors.New("summarize: guard: empty or reasoning-only answer"), true
			default:
				if inTokens < 0 {
					inTokens = g.opts.Counter.CountText(req.Text) + g.opts.Counter.CountText(req.PreviousSummary)
				}
				if n := g.opts.Counter.CountText(out); n >= inTokens {
					err = fmt.Errorf("summarize: guard: answer of %d tokens is not shorter than the input (%d)", n, inTokens)
					retryable = false
				}
			}
		}
		if err == nil {
			g.opts.Breaker.Success()
			return out, nil
		}
		if errors.Is(err, ErrNoHostLLM) {
			// Not the model failing: this call has no host model. No
			// retry, no breaker count; the fallback answers.
			g.opts.Breaker.Release()
			return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, err)
		}
		g.opts.Breaker.Failure()
		g.count(func(s *GuardStats) { s.Failures++ })
		last = err
		if ctx.Err() != nil {
			return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, err)
		}
		var se *StatusError
		wait := g.opts.BaseBackoff << attempt
		if errors.As(err, &se) {
			retryable = se.Retryable()
			if se.RetryAfter > 0 {
				wait = se.RetryAfter
			}
		}
		if !retryable || attempt == g.opts.MaxRetries || wait > g.opts.MaxBackoff {
			break
		}
		if err := g.opts.Sleep(ctx, wait); err != nil {
			return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, err)
		}
	}
	if !errors.Is(last, core.ErrSummarizerFailed) {
		last = fmt.Errorf("%w: %w", core.ErrSummarizerFailed, last)
	}
	return "", last
}

// SpendGuard limits model calls per sliding time window. One instance is
// shared by every Guard that uses it: DefaultSpend is the process-wide one.
type SpendGuard struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	calls  []time.Time // ring of the last max call times
	next   int
	now    func() time.Time
}

// NewSpendGuard returns a guard allowing max calls per window (max < 0:
// unlimited; 0: DefaultMaxCallsPerWindow; window 0: DefaultSpendWindow).
func NewSpendGuard(max int, window time.Duration) *SpendGuard {
	if max == 0 {
		max = DefaultMaxCallsPerWindow
	}
	if window <= 0 {
		window = DefaultSpendWindow
	}
	s := &SpendGuard{max: max, window: window, now: time.Now}
	if max > 0 {
		s.calls = make([]time.Time, 0, max)
	}
	return s
}

// DefaultSpend is the process-wide spend guard (DefaultMaxCallsPerWindow
// calls per DefaultSpendWindow) used when GuardOptions.Spend is nil.
var DefaultSpend = NewSpendGuard(DefaultMaxCallsPerWindow, DefaultSpendWindow)

var (
	sharedSpendMu sync.Mutex
	sharedSpend   = map[[2]int64]*SpendGuard{}
)

// SharedSpendGuard returns the process-wide spend guard for these limits,
// creating it once: every session configured alike shares one budget.
func SharedSpendGuard(max int, window time.Duration) *SpendGuard {
	if (max == 0 || max == DefaultMaxCallsPerWindow) && (window <= 0 || window == DefaultSpendWindow) {
		return DefaultSpend
	}
	sharedSpendMu.Lock()
	defer sharedSpendMu.Unlock()
	k := [2]int64{int64(max), int64(window)}
	if s, ok := sharedSpend[k]; ok {
		return s
	}
	s := NewSpendGuard(max, window)
	sharedSpend[k] = s
	return s
}

// Allow records a call and reports true when the window has room for it.
func (s *SpendGuard) Allow() bool {
	if s.max < 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.calls) < s.max {
		s.calls = append(s.calls, now)
		return true
	}
	// s.calls[s.next] is the oldest of the last max calls
	if now.Sub(s.calls[s.next]) < s.window {
		return false
	}
	s.calls[s.next] = now
	s.next = (s.next + 1) % s.max
	return true
}

// Breaker states.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// Breaker is a circuit breaker: it opens after a number of consecutive
// failures, and after a cool-down lets one trial call through (half-open);
// the trial's success closes it, its failure opens it again.
type Breaker struct {
	mu        sync.Mutex
	threshold int
	cooldown  time.Duration
	failures  int
	state     string
	openedAt  time.Time
	trial     bool
	now       func() time.Time
}

// NewBreaker returns a closed breaker (threshold 0: DefaultBreakerFailures;
// cooldown 0: DefaultBreakerCooldown).
func NewBreaker(threshold int, cooldown time.Duration) *Breaker {
	if threshold <= 0 {
		threshold = DefaultBreakerFailures
	}
	if cooldown <= 0 {
		cooldown = DefaultBreakerCooldown
	}
	return &Breaker{threshold: threshold, cooldown: cooldown, state: BreakerClosed, now: time.Now}
}

// State returns BreakerClosed, BreakerOpen or BreakerHalfOpen.
func (b *Breaker) State() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && b.now().Sub(b.openedAt) >= b.cooldown {
		return BreakerHalfOpen
	}
	return b.state
}

// Allow reports whether a call may go through; in half-open state only one
// trial at a time.
func (b *Breaker) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case BreakerClosed:
		return true
	case BreakerOpen:
		if b.now().Sub(b.openedAt) < b.cooldown {
			return false
		}
		b.state = BreakerHalfOpen
		b.trial = true
		return true
	default: // half-open
		if b.trial {
			return false
		}
		b.trial = true
		return true
	}
}

// Release gives back an Allow that made no call (a half-open trial slot).
func (b *Breaker) Release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerHalfOpen {
		b.trial = false
	}
}

// Success records a successful call: the breaker closes.
func (b *Breaker) Success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.failures, b.trial = BreakerClosed, 0, false
}

// Failure records a failed call: the breaker opens at the threshold, or
// again after a failed trial.
func (b *Breaker) Failure() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	if b.state == BreakerHalfOpen || b.failures >= b.threshold {
		b.state, b.openedAt, b.trial = BreakerOpen, b.now(), false
	}
}
