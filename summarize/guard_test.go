package summarize

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// fakeClock is a settable clock for the spend guard and the breaker.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// scripted is a summarizer answering from a list of results (the last repeats).
type scripted struct {
	mu    sync.Mutex
	calls int
	outs  []string
	errs  []error
}

func (s *scripted) Name() string { return "scripted" }
func (s *scripted) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := min(s.calls, len(s.outs)-1)
	s.calls++
	return s.outs[i], s.errs[i]
}

func (s *scripted) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

var errBoom = errors.New("boom")

func failing() *scripted { return &scripted{outs: []string{""}, errs: []error{errBoom}} }
func working() *scripted { return &scripted{outs: []string{"Goal: migrate"}, errs: []error{nil}} }

var guardReq = core.SummarizeRequest{Text: sampleConversation, TargetTokens: 100, Kind: core.SummaryLeaf}

func TestSpendGuardWindow(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	s := NewSpendGuard(3, time.Minute)
	s.now = clk.now
	for i := 0; i < 3; i++ {
		if !s.Allow() {
			t.Fatalf("call %d refused", i)
		}
		clk.advance(10 * time.Second)
	}
	if s.Allow() {
		t.Fatal("4th call in the window allowed")
	}
	clk.advance(31 * time.Second) // the first call is now 61s old
	if !s.Allow() {
		t.Fatal("call after the window refused")
	}
	if s.Allow() {
		t.Fatal("window slid too far")
	}
	if u := NewSpendGuard(-1, 0); !u.Allow() || !u.Allow() {
		t.Fatal("unlimited guard refused")
	}
}

func TestSpendGuardSharedByGuards(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	spend := NewSpendGuard(3, time.Minute)
	spend.now = clk.now
	a, b := working(), working()
	ga, _ := guardOver(t, a, GuardOptions{Spend: spend})
	gb, _ := guardOver(t, b, GuardOptions{Spend: spend})
	for i := 0; i < 2; i++ {
		if out, _ := ga.Summarize(context.Background(), guardReq); out != "Goal: migrate" {
			t.Fatalf("a: %q", out)
		}
	}
	if out, _ := gb.Summarize(context.Background(), guardReq); out != "Goal: migrate" {
		t.Fatalf("b: %q", out)
	}
	// the shared budget is spent: both fall back without calling their model
	for _, g := range []*Guard{ga, gb} {
		out, err := g.Summarize(context.Background(), guardReq)
		if err != nil || out == "Goal: migrate" || out == "" {
			t.Fatalf("over budget: %q %v", out, err)
		}
	}
	if a.count() != 2 || b.count() != 1 {
		t.Fatalf("calls a=%d b=%d", a.count(), b.count())
	}
	if sa, sb := ga.Stats(), gb.Stats(); sa.Skipped != 1 || sb.Skipped != 1 || sa.Fallbacks != 1 {
		t.Fatalf("stats %+v %+v", sa, sb)
	}
	if SharedSpendGuard(0, 0) != DefaultSpend || SharedSpendGuard(5, time.Second) != SharedSpendGuard(5, time.Second) ||
		SharedSpendGuard(5, time.Second) == SharedSpendGuard(6, time.Second) {
		t.Fatal("SharedSpendGuard does not share by limits")
	}
}

func TestBreakerOpenHalfOpenClose(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	br := NewBreaker(2, time.Minute)
	br.now = clk.now
	inner := failing()
	g, _ := guardOver(t, inner, GuardOptions{Breaker: br, MaxRetries: -1})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := g.Summarize(ctx, guardReq); err != nil {
			t.Fatal(err) // the fallback answers
		}
	}
	if br.State() != BreakerOpen || inner.count() != 2 {
		t.Fatalf("after 2 failures: %s, %d calls", br.State(), inner.count())
	}
	// open: the model is not called
	g.Summarize(ctx, guardReq)
	if inner.count() != 2 || g.Stats().Skipped != 1 {
		t.Fatalf("open breaker let a call through: %d", inner.count())
	}
	// half-open after the cool-down: one trial, which fails and reopens
	clk.advance(time.Minute)
	if br.State() != BreakerHalfOpen {
		t.Fatalf("state %s", br.State())
	}
	g.Summarize(ctx, guardReq)
	if inner.count() != 3 || br.State() != BreakerOpen {
		t.Fatalf("trial: %d calls, %s", inner.count(), br.State())
	}
	// only one trial at a time while half-open
	clk.advance(time.Minute)
	if !br.Allow() || br.Allow() {
		t.Fatal("half-open must allow exactly one trial")
	}
	br.Release()
	// a successful trial closes it
	inner.mu.Lock()
	inner.outs, inner.errs = []string{"Goal: migrate"}, []error{nil}
	inner.mu.Unlock()
	if out, _ := g.Summarize(ctx, guardReq); out != "Goal: migrate" {
		t.Fatalf("trial answer %q", out)
	}
	if br.State() != BreakerClosed {
		t.Fatalf("state after success %s", br.State())
	}
}

func TestGuardFallbackAndErrors(t *testing.T) {
	// no fallback: the failure is returned
	g := NewGuard(failing(), nil, GuardOptions{MaxRetries: -1, Spend: NewSpendGuard(-1, 0), Counter: core.Chars4{}})
	if _, err := g.Summarize(context.Background(), guardReq); !errors.Is(err, core.ErrSummarizerFailed) || !errors.Is(err, errBoom) {
		t.Fatalf("err = %v", err)
	}
	// reasoning stripped from a plain summarizer's answer
	thinker := &scripted{outs: []string{"<think>x</think> Goal: ok"}, errs: []error{nil}}
	g2, _ := guardOver(t, thinker, GuardOptions{})
	if out, _ := g2.Summarize(context.Background(), guardReq); out != "Goal: ok" {
		t.Fatalf("out %q", out)
	}
	// a cancelled context is returned, not hidden by the fallback
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g3, _ := guardOver(t, working(), GuardOptions{})
	if _, err := g3.Summarize(ctx, guardReq); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if g3.Name() != "scripted" {
		t.Fatalf("name %q", g3.Name())
	}
	// generic errors are retried with growing backoff
	inner := failing()
	g4, waits := guardOver(t, inner, GuardOptions{MaxRetries: 2, BaseBackoff: time.Millisecond})
	g4.Summarize(context.Background(), guardReq)
	if inner.count() != 3 || !equalDurations(*waits, []time.Duration{time.Millisecond, 2 * time.Millisecond}) {
		t.Fatalf("calls %d waits %v", inner.count(), *waits)
	}
}

func TestFromConfig(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	tc := core.Chars4{}
	var cfg Config
	if err := json.Unmarshal([]byte(`{"kind":"openai","model":"qwen3","baseUrl":"http://127.0.0.1:1/v1","timeoutMs":1500,
		"maxRetries":-1,"maxCallsPerWindow":7,"windowMs":1000,"breakerFailures":1,"breakerCooldownMs":5000}`), &cfg); err != nil {
		t.Fatal(err)
	}
	s, err := FromConfig(cfg, tc)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := s.(*Guard)
	if !ok || g.Name() != "openai:qwen3" {
		t.Fatalf("got %T %s", s, s.Name())
	}
	if g.opts.Timeout != 1500*time.Millisecond || g.opts.MaxRetries != 0 || g.opts.Spend != SharedSpendGuard(7, time.Second) ||
		g.opts.Breaker.threshold != 1 || g.opts.Breaker.cooldown != 5*time.Second {
		t.Fatalf("options not applied: %+v", g.opts)
	}
	// the unreachable server fails fast, the breaker opens, the extractive answers
	out, err := s.Summarize(context.Background(), guardReq)
	if err != nil || out == "" || g.Breaker().State() != BreakerOpen {
		t.Fatalf("out %q err %v breaker %s", out, err, g.Breaker().State())
	}
	for _, kind := range []string{"", "extractive", "EXTRACTIVE"} {
		s, err := FromConfig(Config{Kind: kind}, tc)
		if err != nil || s.Name() != "extractive" {
			t.Fatalf("%q: %v %v", kind, s, err)
		}
	}
	if _, err := FromConfig(Config{Kind: "gemini"}, tc); !errors.Is(err, ErrConfig) {
		t.Fatalf("unknown kind: %v", err)
	}
	if _, err := FromConfig(Config{Kind: "openai", Model: "gpt"}, tc); !errors.Is(err, ErrNoAPIKey) {
		t.Fatalf("no key: %v", err)
	}
}
