package summarize

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
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
func working() *scripted { return &scripted{outs: []string{goodSummary}, errs: []error{nil}} }

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
	if u := NewSpendGuard(-1, 0); !allowN(u, 3) {
		t.Fatal("unlimited guard refused")
	}
}

func TestSpendGuardSharedByGuards(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	spend := NewSpendGuard(3, time.Minute)
	spend.now = clk.now
	a, b := working(), working()
	ga := guardOver(t, a, GuardOptions{Spend: spend})
	gb := guardOver(t, b, GuardOptions{Spend: spend})
	for i := 0; i < 2; i++ {
		if out, _ := ga.Summarize(context.Background(), guardReq); out != goodSummary {
			t.Fatalf("a: %q", out)
		}
	}
	if out, _ := gb.Summarize(context.Background(), guardReq); out != goodSummary {
		t.Fatalf("b: %q", out)
	}
	// the shared budget is spent: both fall back without calling their model
	for _, g := range []*Guard{ga, gb} {
		out, err := g.Summarize(context.Background(), guardReq)
		if err != nil || out == goodSummary || out == "" {
			t.Fatalf("over budget: %q %v", out, err)
		}
	}
	if a.count() != 2 || b.count() != 1 {
		t.Fatalf("calls a=%d b=%d", a.count(), b.count())
	}
	if sa, sb := ga.Stats(), gb.Stats(); sa.Skipped != 1 || sb.Skipped != 1 || sa.Fallbacks != 1 {
		t.Fatalf("stats %+v %+v", sa, sb)
	}
	sp := NewSpend()
	same5a, same5b := sp.Guard(5, time.Second), sp.Guard(5, time.Second)
	if sp.Guard(0, 0) != sp.Guard(DefaultMaxCallsPerWindow, DefaultSpendWindow) || same5a != same5b ||
		sp.Guard(5, time.Second) == sp.Guard(6, time.Second) || NewSpend().Guard(5, time.Second) == same5a {
		t.Fatal("Spend.Guard does not share by limits within one Spend, or shares across Spends")
	}
}

func TestBreakerOpenHalfOpenClose(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	br := NewBreaker(2, time.Minute)
	br.now = clk.now
	inner := failing()
	g := guardOver(t, inner, GuardOptions{Breaker: br})
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
	inner.outs, inner.errs = []string{goodSummary}, []error{nil}
	inner.mu.Unlock()
	if out, _ := g.Summarize(ctx, guardReq); out != goodSummary {
		t.Fatalf("trial answer %q", out)
	}
	if br.State() != BreakerClosed {
		t.Fatalf("state after success %s", br.State())
	}
}

func TestGuardFallbackAndErrors(t *testing.T) {
	// no fallback: the failure is returned
	g := NewGuard(failing(), nil, GuardOptions{Spend: NewSpendGuard(-1, 0), Counter: core.Chars4{}})
	if _, err := g.Summarize(context.Background(), guardReq); !errors.Is(err, core.ErrSummarizerFailed) || !errors.Is(err, errBoom) {
		t.Fatalf("err = %v", err)
	}
	// reasoning stripped from a plain summarizer's answer
	thinker := &scripted{outs: []string{"<think>x</think> " + goodSummary}, errs: []error{nil}}
	g2 := guardOver(t, thinker, GuardOptions{})
	if out, _ := g2.Summarize(context.Background(), guardReq); out != goodSummary {
		t.Fatalf("out %q", out)
	}
	// a cancelled context is returned, not hidden by the fallback
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g3 := guardOver(t, working(), GuardOptions{})
	if _, err := g3.Summarize(ctx, guardReq); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if g3.Name() != "scripted" {
		t.Fatalf("name %q", g3.Name())
	}
	// the Guard never retries: one call per request, one failure
	inner := failing()
	g4 := guardOver(t, inner, GuardOptions{})
	if out, err := g4.Summarize(context.Background(), guardReq); err != nil || out == "" {
		t.Fatalf("fallback: %q %v", out, err)
	}
	if st := g4.Stats(); inner.count() != 1 || st.Calls != 1 || st.Failures != 1 || st.Retries != 0 || st.Fallbacks != 1 {
		t.Fatalf("calls %d stats %+v", inner.count(), st)
	}
	// a call the caller cancels does not count toward the breaker
	br := NewBreaker(1, time.Minute)
	cctx, ccancel := context.WithCancel(context.Background())
	canceller := &cancelling{cancel: ccancel}
	g5 := guardOver(t, canceller, GuardOptions{Breaker: br})
	if _, err := g5.Summarize(cctx, guardReq); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during the call: %v", err)
	}
	if br.State() != BreakerClosed || g5.Stats().Failures != 0 || g5.Stats().Fallbacks != 0 {
		t.Fatalf("cancellation counted: %s %+v", br.State(), g5.Stats())
	}
}

// cancelling is a summarizer that cancels its caller's context and fails
// with its error, as an SDK does when the caller gives up mid-call.
type cancelling struct{ cancel context.CancelFunc }

func (c *cancelling) Name() string { return "cancelling" }
func (c *cancelling) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	c.cancel()
	<-ctx.Done()
	return "", ctx.Err()
}

func TestGuardTimeoutDefault(t *testing.T) {
	m, err := NewOpenAI(OpenAIConfig{Model: "m", BaseURL: "http://127.0.0.1:1/v1", Timeout: 10 * time.Second, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	// every attempt timing out and every wait at the cap
	if g := NewGuard(m, nil, GuardOptions{}); g.opts.Timeout != 3*10*time.Second+2*DefaultMaxRetryDelay {
		t.Fatalf("guard timeout over a model: %v", g.opts.Timeout)
	}
	if g := NewGuard(working(), nil, GuardOptions{}); g.opts.Timeout != DefaultTimeout {
		t.Fatalf("guard timeout over a plain summarizer: %v", g.opts.Timeout)
	}
	if g := NewGuard(NewHost(time.Second, 0), nil, GuardOptions{}); g.opts.Timeout != time.Second {
		t.Fatalf("guard timeout over the host: %v", g.opts.Timeout)
	}
}

func TestGuardOverHost(t *testing.T) {
	br := NewBreaker(1, time.Minute)
	g := guardOver(t, NewHost(time.Second, 0), GuardOptions{Breaker: br})
	want, _ := NewExtractive(counter(t)).Summarize(context.Background(), guardReq)
	// no host model in the call: the fallback answers, the breaker does not count it
	out, err := g.Summarize(context.Background(), guardReq)
	if err != nil || out != want || br.State() != BreakerClosed {
		t.Fatalf("no host: %q %v %s", out, err, br.State())
	}
	// the host's model answers
	var calls atomic.Int32
	ok := WithHostLLM(context.Background(), func(ctx context.Context, system, user string, maxTokens int) (string, error) {
		calls.Add(1)
		return goodSummary, nil
	})
	if out, err := g.Summarize(ok, guardReq); err != nil || out != goodSummary || calls.Load() != 1 {
		t.Fatalf("host: %q %v %d calls", out, err, calls.Load())
	}
	// a failing host model is called once (no retries: the host has its
	// own), counts once toward the breaker, and the fallback answers
	calls.Store(0)
	bad := WithHostLLM(context.Background(), func(ctx context.Context, system, user string, maxTokens int) (string, error) {
		calls.Add(1)
		return "", errBoom
	})
	if out, err := g.Summarize(bad, guardReq); err != nil || out != want || calls.Load() != 1 || br.State() != BreakerOpen {
		t.Fatalf("failing host: %q %v %d calls, breaker %s", out, err, calls.Load(), br.State())
	}
	// the call without a host model never reached the inner summarizer
	if st := g.Stats(); st.Calls != 2 || st.Failures != 1 || st.Retries != 0 || st.Fallbacks != 2 {
		t.Fatalf("stats %+v", st)
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
	cfg.Spend = NewSpend()
	s, err := FromConfig(cfg, tc)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := s.(*Guard)
	if !ok || g.Name() != "openai:qwen3" {
		t.Fatalf("got %T %s", s, s.Name())
	}
	m := g.inner.(*Model)
	if m.timeout != 1500*time.Millisecond || m.retries != 0 || g.opts.Timeout != 1500*time.Millisecond ||
		g.opts.Spend != cfg.Spend.Guard(7, time.Second) || g.opts.Breaker.threshold != 1 || g.opts.Breaker.cooldown != 5*time.Second {
		t.Fatalf("options not applied: model %+v guard %+v", m, g.opts)
	}
	// defaults: two SDK retries, 60 s per request, the guard bounds the worst case
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		s, err := FromConfig(Config{Kind: kind, Model: "m", BaseURL: "http://127.0.0.1:1"}, tc)
		if err != nil {
			t.Fatal(err)
		}
		g := s.(*Guard)
		m := g.inner.(*Model)
		if m.retries != DefaultMaxRetries || m.timeout != DefaultTimeout || m.retryDelay != DefaultMaxRetryDelay ||
			g.opts.Timeout != 3*DefaultTimeout+2*DefaultMaxRetryDelay {
			t.Fatalf("%s defaults: model %+v guard timeout %v", kind, m, g.opts.Timeout)
		}
	}
	host, err := FromConfig(Config{Kind: KindHost, MaxRetries: 5, TimeoutMs: 2000}, tc)
	if err != nil {
		t.Fatal(err)
	}
	if hm := host.(*Guard).inner.(*Model); hm.retries != 0 || hm.callTimeout != 2*time.Second {
		t.Fatalf("host: %+v", hm)
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

// allowN reports whether s allows n requests in a row.
func allowN(s *SpendGuard, n int) bool {
	for i := 0; i < n; i++ {
		if !s.Allow() {
			return false
		}
	}
	return true
}

// TestGuardOverHostRefusesCannedReplies: the host's model (OpenClaw's
// llm.complete) answering canned replies gets the stricter prompt once,
// then the extractive summarizer answers; a model whose stricter answer is
// a summary is taken.
func TestGuardOverHostRefusesCannedReplies(t *testing.T) {
	var systems []string
	answers := []string{"Noted.", ""}
	host := func(ctx context.Context, system, user string, maxTokens int) (string, error) {
		systems = append(systems, system)
		return answers[min(len(systems), len(answers))-1], nil
	}
	g := guardOver(t, NewHost(0, 0), GuardOptions{})
	want, _ := NewExtractive(counter(t)).Summarize(context.Background(), guardReq)
	var rep core.SummarizeReport
	out, err := g.Summarize(core.WithSummarizeReport(WithHostLLM(context.Background(), host), &rep), guardReq)
	if err != nil || out != want || len(systems) != 2 {
		t.Fatalf("out %q err %v after %d calls; want the extractive summary after 2", out, err, len(systems))
	}
	if systems[0] == systems[1] || !strings.Contains(systems[1], `was refused: the answer (`) || !strings.Contains(systems[1], `"Noted.") is too short`) {
		t.Fatalf("the second prompt does not say what was wrong:\n%s", systems[1])
	}
	if !strings.Contains(rep.Refused, "empty") || rep.By != KindExtractive {
		t.Fatalf("report %+v", rep)
	}
	// The stricter retry's summary is the model's answer.
	systems, answers = nil, []string{"Sure!", goodSummary}
	rep = core.SummarizeReport{}
	out, err = g.Summarize(core.WithSummarizeReport(WithHostLLM(context.Background(), host), &rep), guardReq)
	if err != nil || out != goodSummary || len(systems) != 2 || rep.Refused != "" {
		t.Fatalf("out %q err %v after %d calls, report %+v", out, err, len(systems), rep)
	}
	if st := g.Stats(); st.Calls != 4 || st.Refused != 3 || st.RefusedFallbacks != 1 || st.Fallbacks != 1 {
		t.Fatalf("stats %+v", st)
	}
}
