package summarize

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// Guard defaults.
const (
	DefaultBreakerFailures   = 5
	DefaultBreakerCooldown   = 60 * time.Second
	DefaultMaxCallsPerWindow = 60
	DefaultSpendWindow       = time.Minute
)

// GuardOptions configures a Guard. Zero fields take the defaults above.
type GuardOptions struct {
	// Timeout bounds one call of the inner summarizer, its SDK's retries
	// and their waits included. Default: for a Model, the worst case of its
	// retry policy ((MaxRetries+1) × its per-request timeout + MaxRetries ×
	// its longest wait); for any other summarizer, DefaultTimeout.
	Timeout time.Duration
	// Spend limits model requests; nil means one of the Guard's own, with
	// the defaults (share one through Spend.Guard).
	Spend *SpendGuard
	// Cap limits model requests and tokens per hour; nil means none
	// (FromConfig gives every model its Config.Spend's).
	Cap *SpendCap
	// Breaker is the circuit breaker; nil means a new one from
	// BreakerFailures and BreakerCooldown.
	Breaker *Breaker
	// BreakerFailures opens the breaker after this many consecutive failed
	// calls (default DefaultBreakerFailures).
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open before one trial
	// call (default DefaultBreakerCooldown).
	BreakerCooldown time.Duration
	// Counter counts tokens for the "shorter than the input" check (default
	// core.DefaultCounter()).
	Counter core.TokenCounter
}

// GuardStats counts what a Guard did.
type GuardStats struct {
	Calls     int // calls of the inner summarizer (one per request that reached it, two when its answer was refused)
	Retries   int // retries the inner model's SDK made within those calls
	Failures  int // failed calls (errors after the SDK's retries, timeouts, an answer refused at the stricter retry)
	Fallbacks int // requests answered by the fallback
	Skipped   int // requests that never reached the model (breaker open, spend limit)
	// Capped counts the requests of Skipped that a spend limit refused
	// (the calls per window, or the hourly cap of calls and tokens).
	Capped int
	// Tokens counts the tokens of the calls (prompt and answer: the
	// provider's or host's count when reported, else the Counter's).
	Tokens int
	// Refused counts the model's answers the summary check refused
	// (CheckSummary: empty, a canned reply, not shorter than the input,
	// the input's identifiers lost), the stricter retries' included.
	Refused int
	// RefusedFallbacks counts the requests the fallback answered because
	// the stricter retry's answer was refused too (or could not be made).
	RefusedFallbacks int
}

// Guard wraps a model summarizer with a timeout on each call, reasoning
// stripped from the output, the summary check (CheckSummary: an empty
// answer, a canned reply, one not shorter than the input or without the
// input's identifiers is refused), a spend guard and a circuit breaker. It
// makes one call of the inner summarizer per request, and a second one,
// with a stricter prompt saying what was wrong, only when the first
// answer was refused; it never retries a failed call: a Model's SDK
// retries by itself (with Retry-After respected), and a call that still
// fails counts as one failure toward the breaker (a refused answer counts
// once, at the stricter retry). The spend guard is charged one unit
// before the call and one more before each of the SDK's retries (the
// Model's clients report them through the request's context); a retry the
// spend guard refuses ends the call. A summarizer that is not a Model is
// charged one unit per call.
//
// An answer shorter than the input but over TargetTokens is returned as
// is: the caller decides whether to escalate (as the compactor does). When
// the model fails it answers with the fallback summarizer (normally the
// extractive one), so compaction always converges. It is safe for
// concurrent use.
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
		if m, ok := inner.(*Model); ok {
			opts.Timeout = m.callBudget()
		}
	}
	if opts.Spend == nil {
		opts.Spend = NewSpendGuard(DefaultMaxCallsPerWindow, DefaultSpendWindow)
	}
	if opts.Breaker == nil {
		opts.Breaker = NewBreaker(opts.BreakerFailures, opts.BreakerCooldown)
	}
	if opts.Counter == nil {
		opts.Counter = core.DefaultCounter()
	}
	return &Guard{inner: inner, fallback: fallback, opts: opts}
}

// Name returns the inner summarizer's name.
func (g *Guard) Name() string { return g.inner.Name() }

// Breaker returns the Guard's circuit breaker.
func (g *Guard) Breaker() *Breaker { return g.opts.Breaker }

// Cap returns the Guard's hourly spend cap (nil when it has none).
func (g *Guard) Cap() *SpendCap { return g.opts.Cap }

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

// Summarize tries the inner summarizer and falls back on failure. Its
// answer is checked (CheckSummary); a refused answer is asked for once
// more with a stricter prompt that says what was wrong
// (core.SummarizeRequest.Refused), and when that one is refused too the
// fallback answers, and the core.SummarizeReport of ctx, if any, says so.
// A cancelled ctx is returned as an error, never hidden by the fallback.
func (g *Guard) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("summarize: guard: %w", err)
	}
	out, err := g.tryModel(ctx, req, req.Refused != "")
	// why is the reason of the last refusal: set when the model's answer
	// was refused and the fallback is to answer.
	why := ""
	var refusal *RefusedError
	if errors.As(err, &refusal) {
		g.count(func(s *GuardStats) { s.Refused++ })
		why = refusal.Reason
		if req.Refused == "" && ctx.Err() == nil {
			strict := req
			strict.Refused = refusal.Reason
			out, err = g.tryModel(ctx, strict, true)
			switch {
			case err == nil:
				why = ""
			case errors.As(err, &refusal):
				g.count(func(s *GuardStats) { s.Refused++ })
				why = refusal.Reason
			default:
				why += "; the stricter retry failed: " + err.Error()
			}
		}
	}
	if err == nil {
		tallyOf(ctx).model()
		return out, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", fmt.Errorf("summarize: guard: %w", ctxErr)
	}
	if g.fallback == nil {
		return "", err
	}
	g.count(func(s *GuardStats) {
		s.Fallbacks++
		if why != "" {
			s.RefusedFallbacks++
		}
	})
	tallyOf(ctx).fallback(err, why != "")
	out, ferr := g.fallback.Summarize(ctx, req)
	if ferr != nil {
		return "", fmt.Errorf("summarize: guard: fallback %s after %v: %w", g.fallback.Name(), err, ferr)
	}
	if why != "" {
		slog.Warn("summarize: the model's answer was no summary, also at the stricter retry: the fallback wrote it",
			"model", g.inner.Name(), "fallback", g.fallback.Name(), "reason", why)
		if rep := core.SummarizeReportFrom(ctx); rep != nil {
			rep.Refused, rep.By = why, g.fallback.Name()
		}
	}
	return out, nil
}

// tryModel makes one call of the inner summarizer and checks its answer;
// its error wraps core.ErrSummarizerFailed, and is a *RefusedError when
// the answer was refused. A refused answer counts toward the breaker only
// when final (the stricter retry's, not the first one's).
func (g *Guard) tryModel(ctx context.Context, req core.SummarizeRequest, final bool) (string, error) {
	if m, ok := g.inner.(*Model); ok && m.hostOnly && HostLLMFrom(ctx) == nil {
		// The host offers no model in this call: nothing is charged,
		// nothing counts toward the breaker; the fallback answers.
		return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, ErrNoHostLLM)
	}
	if !g.opts.Breaker.Allow() {
		g.count(func(s *GuardStats) { s.Skipped++ })
		return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, ErrBreakerOpen)
	}
	prompt, est := g.estimate(req)
	var charge *capCharge
	if g.opts.Cap != nil {
		var err error
		if charge, err = g.opts.Cap.reserve(g.inner.Name(), est); err != nil {
			g.opts.Breaker.Release()
			g.count(func(s *GuardStats) { s.Skipped++; s.Capped++ })
			return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, err)
		}
	}
	if !g.opts.Spend.Allow() {
		g.opts.Cap.cancel(charge)
		g.opts.Breaker.Release()
		g.count(func(s *GuardStats) { s.Skipped++; s.Capped++ })
		return "", fmt.Errorf("summarize: guard: %w: %w (maxCallsPerWindow)", core.ErrSummarizerFailed, ErrSpendLimit)
	}
	g.count(func(s *GuardStats) { s.Calls++ })

	tctx, cancelTimeout := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancelTimeout()
	cctx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	var attempts atomic.Int32
	cctx = withAttemptHook(cctx, func() error {
		if attempts.Add(1) == 1 {
			return nil // the first request was charged above
		}
		if g.opts.Cap != nil {
			// A retry is one more request; its tokens are the call's.
			if _, err := g.opts.Cap.reserve(g.inner.Name(), 0); err != nil {
				cancel(err) // so that the SDK stops retrying
				return err
			}
		}
		if !g.opts.Spend.Allow() {
			cancel(ErrSpendLimit) // so that the SDK stops retrying
			return ErrSpendLimit
		}
		g.count(func(s *GuardStats) { s.Retries++ })
		return nil
	})
	var usageMu sync.Mutex
	reported := -1
	cctx = withUsageHook(cctx, func(in, out int) {
		usageMu.Lock()
		reported = max(reported, 0) + in + out
		usageMu.Unlock()
	})

	out, err := g.inner.Summarize(cctx, req)
	// The call's tokens: as reported, else its prompt and answer counted
	// (a failed call is charged its prompt: it may have been billed).
	usageMu.Lock()
	spent := reported
	usageMu.Unlock()
	if spent < 0 {
		spent = prompt
		if err == nil {
			spent += g.opts.Counter.CountText(out)
		}
	}
	if errors.Is(err, ErrNoHostLLM) {
		// No call was made: nothing spent.
		g.opts.Cap.cancel(charge)
		spent = 0
	} else {
		g.opts.Cap.settle(charge, spent)
	}
	g.count(func(s *GuardStats) { s.Tokens += spent })
	if err == nil {
		out = StripReasoning(out)
		err = CheckSummary(g.opts.Counter, req, out)
	}
	if err == nil {
		g.opts.Breaker.Success()
		return out, nil
	}
	if !final && errors.Is(err, ErrSummaryRefused) && ctx.Err() == nil {
		// The model answered, but not with a summary: the stricter retry
		// decides what counts toward the breaker.
		g.opts.Breaker.Release()
		return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, err)
	}
	if errors.Is(err, ErrNoHostLLM) || ctx.Err() != nil {
		// Not the model failing: this call has no host model, or the
		// caller gave up. No breaker count; the fallback answers the
		// former, the caller gets its context's error for the latter.
		g.opts.Breaker.Release()
		return "", fmt.Errorf("summarize: guard: %w: %w", core.ErrSummarizerFailed, err)
	}
	if cause := context.Cause(cctx); errors.Is(cause, ErrSpendLimit) {
		err = fmt.Errorf("summarize: guard: a retry was refused: %w: %w", ErrSpendLimit, err)
	}
	g.opts.Breaker.Failure()
	g.count(func(s *GuardStats) { s.Failures++ })
	if !errors.Is(err, core.ErrSummarizerFailed) {
		err = fmt.Errorf("%w: %w", core.ErrSummarizerFailed, err)
	}
	return "", err
}

// estimate returns a request's prompt tokens and the most the call may
// spend: the prompt and the longest answer it may get (for a Model, the
// prompts it sends and its output cap; for another summarizer, the input
// and the target).
func (g *Guard) estimate(req core.SummarizeRequest) (prompt, most int) {
	c := g.opts.Counter
	if m, ok := g.inner.(*Model); ok {
		prompt = c.CountText(SystemPrompt(req)) + c.CountText(UserPrompt(req))
		return prompt, prompt + m.maxTokensFor(req)
	}
	prompt = c.CountText(req.Text) + c.CountText(req.PreviousSummary)
	return prompt, prompt + max(req.TargetTokens, 0)
}

// SpendGuard limits model requests per sliding time window: a Guard
// charges it one unit per call and one per retry of the model's SDK. One
// instance is shared by every Guard that uses it (Spend.Guard).
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
