package summarize

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// fakeHost is a HostLLM answering goodSummary and reporting usage
// in/out when in > 0; it counts its calls.
type fakeHost struct {
	calls   atomic.Int32
	in, out int
}

func (f *fakeHost) llm(ctx context.Context, system, user string, maxTokens int) (string, error) {
	f.calls.Add(1)
	if f.in > 0 {
		ReportUsage(ctx, f.in, f.out)
	}
	return goodSummary, nil
}

// capGuard returns a Guard over the host kind with cap, its clock set to clk.
func capGuard(t *testing.T, cap *SpendCap, clk *fakeClock) *Guard {
	t.Helper()
	cap.now = clk.now
	return NewGuard(NewHost(time.Second, 0), NewExtractive(counter(t)),
		GuardOptions{Spend: NewSpendGuard(-1, 0), Cap: cap, Counter: counter(t)})
}

// TestSpendCapTokens: the hourly token cap refuses the call whose estimate
// (prompt + the longest answer) would take the last hour past it; the
// extractive fallback answers, the host's model is not called; the hour
// slides and the model is called again. Calls are charged the host's
// reported usage once they end.
func TestSpendCapTokens(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	host := &fakeHost{in: 300, out: 20}
	ctx := WithHostLLM(context.Background(), host.llm)
	probe := capGuard(t, NewSpendCap(-1, -1), clk)
	_, est := probe.estimate(guardReq)
	if est <= 320 {
		t.Fatalf("estimate %d: want the prompt plus the answer cap, over the reported 320", est)
	}
	// Room for two calls settled at 320 and then one less than a third estimate.
	cap := NewSpendCap(-1, 640+est-1)
	g := capGuard(t, cap, clk)
	want, _ := NewExtractive(counter(t)).Summarize(context.Background(), guardReq)

	for i := 0; i < 2; i++ {
		if out, err := g.Summarize(ctx, guardReq); err != nil || out != goodSummary {
			t.Fatalf("call %d: %q %v", i, out, err)
		}
		clk.advance(10 * time.Minute)
	}
	if u := cap.Usage(); u.Calls != 2 || u.Tokens != 640 {
		t.Fatalf("usage after two calls: %+v, want 2 calls, 640 tokens (the host's reported usage)", u)
	}
	tally := &Tally{}
	out, err := g.Summarize(WithTally(ctx, tally), guardReq)
	if err != nil || out != want || host.calls.Load() != 2 {
		t.Fatalf("over the cap: %q %v, host called %d times; want the extractive answer and no third call", out, err, host.calls.Load())
	}
	if c := tally.Counts(); c.Fallback != 1 || c.Model != 0 || !strings.Contains(c.Reason, "maxTokensPerHour") {
		t.Fatalf("tally %+v", c)
	}
	if st := g.Stats(); st.Capped != 1 || st.Skipped != 1 || st.Fallbacks != 1 || st.Calls != 2 || st.Tokens != 640 || st.Failures != 0 {
		t.Fatalf("stats %+v", st)
	}
	if g.Breaker().State() != BreakerClosed {
		t.Fatal("a capped request counted toward the breaker")
	}
	// 59 minutes after the first call: still the same hour.
	clk.advance(39 * time.Minute)
	if out, _ := g.Summarize(ctx, guardReq); out != want || host.calls.Load() != 2 {
		t.Fatalf("59 min later: %q, %d host calls", out, host.calls.Load())
	}
	// The first call leaves the hour: room for one more.
	clk.advance(2 * time.Minute)
	if out, err := g.Summarize(ctx, guardReq); err != nil || out != goodSummary || host.calls.Load() != 3 {
		t.Fatalf("after the hour: %q %v, %d host calls", out, err, host.calls.Load())
	}
	if u := cap.Usage(); u.Calls != 2 || u.Tokens != 640 || u.Refused != 2 {
		t.Fatalf("usage after the hour slid: %+v", u)
	}
}

// TestSpendCapCountsWithoutUsage: a host that reports no usage is charged
// the prompt and answer as the Guard's counter counts them.
func TestSpendCapCountsWithoutUsage(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	host := &fakeHost{}
	cap := NewSpendCap(-1, -1)
	g := capGuard(t, cap, clk)
	if _, err := g.Summarize(WithHostLLM(context.Background(), host.llm), guardReq); err != nil {
		t.Fatal(err)
	}
	tc := counter(t)
	want := tc.CountText(SystemPrompt(guardReq)) + tc.CountText(UserPrompt(guardReq)) + tc.CountText(goodSummary)
	if u := cap.Usage(); u.Calls != 1 || u.Tokens != want {
		t.Fatalf("usage %+v, want 1 call of %d tokens", u, want)
	}
}

// TestSpendCapCalls: the hourly call cap lets maxCallsPerHour requests
// through, the fallback answers the next ones until the hour slides; a
// request without the host's model in its context is not charged.
func TestSpendCapCalls(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	host := &fakeHost{}
	cap := NewSpendCap(2, -1)
	g := capGuard(t, cap, clk)
	ctx := WithHostLLM(context.Background(), host.llm)
	// no host model: the fallback, nothing charged
	if _, err := g.Summarize(context.Background(), guardReq); err != nil || cap.Usage().Calls != 0 {
		t.Fatalf("no host model: %v, usage %+v", err, cap.Usage())
	}
	for i := 0; i < 4; i++ {
		out, err := g.Summarize(ctx, guardReq)
		if err != nil || (i < 2) != (out == goodSummary) {
			t.Fatalf("request %d: %q %v", i, out, err)
		}
	}
	if host.calls.Load() != 2 || g.Stats().Capped != 2 {
		t.Fatalf("%d host calls, stats %+v", host.calls.Load(), g.Stats())
	}
	clk.advance(time.Hour)
	if out, _ := g.Summarize(ctx, guardReq); out != goodSummary || host.calls.Load() != 3 {
		t.Fatalf("after the hour: %q, %d host calls", out, host.calls.Load())
	}
}

// TestSpendCapLogsTransitions: reaching the cap is logged once (a warning
// naming the cap), not at every refused request, and room again once.
func TestSpendCapLogsTransitions(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := capGuard(t, NewSpendCap(1, -1), clk)
	ctx := WithHostLLM(context.Background(), (&fakeHost{}).llm)
	for i := 0; i < 4; i++ {
		_, _ = g.Summarize(ctx, guardReq)
	}
	clk.advance(time.Hour)
	_, _ = g.Summarize(ctx, guardReq)
	log := buf.String()
	if strings.Count(log, "spend cap reached") != 1 || !strings.Contains(log, "maxCallsPerHour 1") ||
		!strings.Contains(log, "level=WARN") || strings.Count(log, "spend cap has room again") != 1 {
		t.Fatalf("log:\n%s", log)
	}
}

// TestSpendCaps: one cap per limits in a Spend, the defaults filled in,
// none shared between two Spends; FromConfig gives a model its Spend's cap
// for its limits, and a Spend of its own when given none.
func TestSpendCaps(t *testing.T) {
	sp := NewSpend()
	if sp.Cap(0, 0) != sp.Cap(DefaultMaxCallsPerHour, DefaultMaxTokensPerHour) ||
		sp.Cap(-1, 5) != sp.Cap(-7, 5) || sp.Cap(3, 5) == sp.Cap(3, 6) {
		t.Fatal("a Spend's caps not keyed by their limits")
	}
	if NewSpend().Cap(0, 0) == sp.Cap(0, 0) {
		t.Fatal("two Spends share a cap")
	}
	if u := sp.Cap(0, 0).Usage(); u.MaxCalls != DefaultMaxCallsPerHour || u.MaxTokens != DefaultMaxTokensPerHour {
		t.Fatalf("defaults %+v", u)
	}
	s, err := FromConfig(Config{Kind: KindHost, MaxCallsPerHour: 7, MaxTokensPerHour: 5000, Spend: sp}, core.Chars4{})
	if err != nil {
		t.Fatal(err)
	}
	if s.(*Guard).Cap() != sp.Cap(7, 5000) {
		t.Fatal("FromConfig: the cap of the configured limits not used")
	}
	s, _ = FromConfig(Config{Kind: KindHost, Spend: sp}, core.Chars4{})
	if s.(*Guard).Cap() != sp.Cap(0, 0) {
		t.Fatal("FromConfig: the default cap not used")
	}
	a, _ := FromConfig(Config{Kind: KindHost}, core.Chars4{})
	b, _ := FromConfig(Config{Kind: KindHost}, core.Chars4{})
	if a.(*Guard).Cap() == b.(*Guard).Cap() || a.(*Guard).Cap() == sp.Cap(0, 0) {
		t.Fatal("FromConfig without a Spend: summarizers share a cap")
	}
}

// TestConfigValidate: bad limits and kinds are refused with ErrConfig,
// naming the setting.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxTokensPerHour: -2}, "maxTokensPerHour -2"},
		{Config{Kind: KindHost, MaxCallsPerHour: -5}, "maxCallsPerHour -5"},
		{Config{MaxCallsPerWindow: -3}, "maxCallsPerWindow -3"},
		{Config{TimeoutMs: -1}, "timeoutMs -1"},
		{Config{Kind: "gemini"}, `unknown summarizer kind "gemini"`},
		{Config{Kind: KindOpenAI}, "needs a model"},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrConfig naming %q", tc.cfg, err, tc.want)
		}
		if _, ferr := FromConfig(tc.cfg, core.Chars4{}); !errors.Is(ferr, ErrConfig) {
			t.Errorf("%+v: FromConfig %v", tc.cfg, ferr)
		}
	}
	for _, ok := range []Config{{}, {Kind: KindHost, MaxCallsPerHour: -1, MaxTokensPerHour: -1}, {Kind: KindExtractive, MaxTokensPerHour: 10}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}
