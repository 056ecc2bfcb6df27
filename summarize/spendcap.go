package summarize

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Spend cap defaults: a model summarizer may make DefaultMaxCallsPerHour
// requests and spend DefaultMaxTokensPerHour tokens (prompt and answer)
// per hour, shared by every summarizer of one Spend (the process's),
// before its requests fall back to the extractive summarizer.
const (
	DefaultMaxCallsPerHour  = 120
	DefaultMaxTokensPerHour = 1_000_000
	// capWindow is the spend cap's sliding window.
	capWindow = time.Hour
)

// SpendCap limits a model summarizer's requests and tokens per sliding
// hour: the tokens of a request are its prompt and its answer, as the
// provider or the host reported them (ReportUsage), else as the Guard's
// token counter counts them. A Guard asks it before each call, charging
// the call's estimate (its prompt and the most it may answer), and settles
// the charge with the call's real tokens once it ends; a request whose
// estimate would take the hour past the cap is refused (ErrSpendLimit) and
// the Guard's fallback answers it. One instance is shared by every Guard
// that uses it (Spend.Cap); it is safe for concurrent use.
type SpendCap struct {
	mu        sync.Mutex
	maxCalls  int // < 0: unlimited
	maxTokens int // < 0: unlimited
	window    time.Duration
	events    []*capCharge // in time order, within the window
	now       func() time.Time
	// refusing is true from a refusal until the next request the cap
	// lets through: the transitions are logged, not every refusal.
	refusing bool
	refused  int
}

// capCharge is one request's charge: its time and tokens.
type capCharge struct {
	at     time.Time
	tokens int
}

// NewSpendCap returns a cap of maxCalls requests and maxTokens tokens per
// hour (0: the default; negative: unlimited).
func NewSpendCap(maxCalls, maxTokens int) *SpendCap {
	if maxCalls == 0 {
		maxCalls = DefaultMaxCallsPerHour
	}
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokensPerHour
	}
	return &SpendCap{maxCalls: maxCalls, maxTokens: maxTokens, window: capWindow, now: time.Now}
}

// Spend owns the spend limits that the summarizers of one process share:
// one SpendCap per set of hourly limits and one SpendGuard per window's
// limits, made on first use. A process that hosts several engines (a
// gateway's agents) creates one with NewSpend and hands it to each
// (Config.Spend; config.Config.Spend of lossless/config; the factories' NewFactory); a
// summarizer given none has a Spend of its own. It is safe for concurrent
// use.
type Spend struct {
	mu     sync.Mutex
	caps   map[[2]int]*SpendCap
	guards map[[2]int64]*SpendGuard
}

// NewSpend returns a Spend with no cap or guard made yet.
func NewSpend() *Spend {
	return &Spend{caps: map[[2]int]*SpendCap{}, guards: map[[2]int64]*SpendGuard{}}
}

// Cap returns the spend cap of s for these limits (0: the defaults;
// negative: unlimited), creating it once: every summarizer configured alike
// shares one hourly budget.
func (s *Spend) Cap(maxCalls, maxTokens int) *SpendCap {
	if maxCalls == 0 {
		maxCalls = DefaultMaxCallsPerHour
	}
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokensPerHour
	}
	if maxCalls < 0 {
		maxCalls = -1
	}
	if maxTokens < 0 {
		maxTokens = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]int{maxCalls, maxTokens}
	if c, ok := s.caps[k]; ok {
		return c
	}
	c := NewSpendCap(maxCalls, maxTokens)
	s.caps[k] = c
	return c
}

// Guard returns the spend guard of s for these limits (max 0:
// DefaultMaxCallsPerWindow; window 0: DefaultSpendWindow), creating it
// once: every summarizer configured alike shares one budget.
func (s *Spend) Guard(max int, window time.Duration) *SpendGuard {
	if max == 0 {
		max = DefaultMaxCallsPerWindow
	}
	if window <= 0 {
		window = DefaultSpendWindow
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]int64{int64(max), int64(window)}
	if g, ok := s.guards[k]; ok {
		return g
	}
	g := NewSpendGuard(max, window)
	s.guards[k] = g
	return g
}

// CapUsage is what a SpendCap counted in the last hour.
type CapUsage struct {
	// Calls and Tokens are the requests and tokens charged in the last
	// hour (a request in flight counts its estimate).
	Calls  int `json:"calls"`
	Tokens int `json:"tokens"`
	// MaxCalls and MaxTokens are the limits (-1: unlimited).
	MaxCalls  int `json:"maxCallsPerHour"`
	MaxTokens int `json:"maxTokensPerHour"`
	// Refused counts the requests the cap refused since it was made.
	Refused int `json:"refused"`
}

// Usage returns the cap's count of the last hour.
func (s *SpendCap) Usage() CapUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prune(s.now())
	return CapUsage{Calls: len(s.events), Tokens: s.tokensLocked(), MaxCalls: s.maxCalls, MaxTokens: s.maxTokens, Refused: s.refused}
}

// prune drops the charges older than the window.
func (s *SpendCap) prune(now time.Time) {
	i := 0
	for i < len(s.events) && now.Sub(s.events[i].at) >= s.window {
		i++
	}
	if i > 0 {
		s.events = append(s.events[:0], s.events[i:]...)
	}
}

func (s *SpendCap) tokensLocked() int {
	n := 0
	for _, e := range s.events {
		n += e.tokens
	}
	return n
}

// reserve charges one request of est tokens, or refuses it with an error
// wrapping ErrSpendLimit that names the cap reached. name names the
// summarizer in the log line of a refusal after an allowed request.
func (s *SpendCap) reserve(name string, est int) (*capCharge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.prune(now)
	var why string
	used := s.tokensLocked()
	switch {
	case s.maxCalls >= 0 && len(s.events)+1 > s.maxCalls:
		why = fmt.Sprintf("maxCallsPerHour %d reached (%d calls in the last hour)", s.maxCalls, len(s.events))
	case s.maxTokens >= 0 && used+est > s.maxTokens:
		why = fmt.Sprintf("maxTokensPerHour %d would be passed (%d tokens in the last hour, this request about %d)", s.maxTokens, used, est)
	}
	if why != "" {
		s.refused++
		if !s.refusing {
			s.refusing = true
			slog.Warn("summarize: spend cap reached: the extractive summarizer answers until the last hour's spend allows a call again",
				"summarizer", name, "reason", why)
		}
		return nil, fmt.Errorf("summarize: spend cap: %s: %w", why, ErrSpendLimit)
	}
	if s.refusing {
		s.refusing = false
		slog.Info("summarize: spend cap has room again: the model summarizes", "summarizer", name)
	}
	c := &capCharge{at: now, tokens: max(est, 0)}
	s.events = append(s.events, c)
	return c, nil
}

// settle sets a reserved request's charge to its real tokens.
func (s *SpendCap) settle(c *capCharge, tokens int) {
	if c == nil {
		return
	}
	s.mu.Lock()
	c.tokens = max(tokens, 0)
	s.mu.Unlock()
}

// cancel removes a reserved request that made no call.
func (s *SpendCap) cancel(c *capCharge) {
	if c == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.events {
		if e == c {
			s.events = append(s.events[:i], s.events[i+1:]...)
			return
		}
	}
}

type usageHookKey struct{}

// withUsageHook returns ctx carrying hook, which ReportUsage calls.
func withUsageHook(ctx context.Context, hook func(in, out int)) context.Context {
	return context.WithValue(ctx, usageHookKey{}, hook)
}

// ReportUsage reports the tokens a model call made with ctx used, as its
// provider or host counted them (in: the prompt, out: the answer): a
// HostLLM calls it with what the host's llm.complete reported, the model
// clients with the SDK's usage. The Guard around the call charges them to
// its SpendCap instead of its own count. Without a Guard it does nothing.
func ReportUsage(ctx context.Context, in, out int) {
	if hook, _ := ctx.Value(usageHookKey{}).(func(in, out int)); hook != nil && (in > 0 || out > 0) {
		hook(in, out)
	}
}

// Tally counts how the summarization requests of one piece of work (a
// compaction) were answered: by the model, or by the fallback and why.
// Pass it in the requests' context (WithTally); a Guard records each
// request it answers. It is safe for concurrent use.
type Tally struct {
	mu sync.Mutex
	c  TallyCounts
}

// TallyCounts is a Tally's count.
type TallyCounts struct {
	// Model counts the requests the model answered.
	Model int
	// Fallback counts the requests the fallback answered.
	Fallback int
	// Refused counts the requests of Fallback answered by the fallback
	// because the model's summaries were refused (CheckSummary), at the
	// first attempt and at the stricter retry.
	Refused int
	// Reason is why the last fallback answered (the model's error, the
	// breaker, the spend cap).
	Reason string
}

type tallyKey struct{}

// WithTally returns ctx carrying t.
func WithTally(ctx context.Context, t *Tally) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, tallyKey{}, t)
}

// Counts returns a copy of the count.
func (t *Tally) Counts() TallyCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.c
}

func tallyOf(ctx context.Context) *Tally {
	t, _ := ctx.Value(tallyKey{}).(*Tally)
	return t
}

func (t *Tally) model() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.c.Model++
	t.mu.Unlock()
}

func (t *Tally) fallback(err error, refused bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.c.Fallback++
	if refused {
		t.c.Refused++
	}
	t.c.Reason = err.Error()
	t.mu.Unlock()
}
