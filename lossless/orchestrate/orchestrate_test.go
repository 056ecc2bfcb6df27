package orchestrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// conversation returns a conversation of n messages of 100 tokens each.
func conversation(n int) *dag.Memory {
	m := dag.NewMemory()
	for i := range n {
		role := core.RoleUser
		if i%2 == 1 {
			role = core.RoleAssistant
		}
		m.Append(role, strings.Repeat("word ", 80), 100, int64(i+1))
	}
	return m
}

// compactor is a real dag.Compactor with the extractive summarizer.
func compactor(t *testing.T) *dag.Compactor {
	t.Helper()
	comp, err := dag.NewCompactor(dag.Config{FreshTailMessages: 4}, summarize.NewExtractive(core.Chars4{}), core.Chars4{})
	if err != nil {
		t.Fatal(err)
	}
	return comp
}

// A conversation over contextThreshold × budget is due and Run compacts it
// under the threshold, measuring the window before and after; one under it
// is not due.
func TestRunCompactsOverThreshold(t *testing.T) {
	ctx := context.Background()
	conv := conversation(40) // 4,000 tokens: at 100% of 4,000
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !orchestrate.OverThreshold(items, 0.75, 4000) {
		t.Fatal("4,000 tokens are not over 0.75 × 4,000")
	}
	out, err := orchestrate.Run(ctx, compactor(t), conv, dag.Target{Budget: 4000, Mode: dag.ModeThreshold})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.NewSummaryIDs) == 0 || out.Result.TokensAfter > 3000 {
		t.Fatalf("run: %d summaries, %d tokens after, want some and at most 3000", len(out.Result.NewSummaryIDs), out.Result.TokensAfter)
	}
	after, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.WindowBefore != 4000 || out.WindowAfter != orchestrate.WindowTokens(after, 4000) || len(out.After) != len(after) {
		t.Fatalf("window %d -> %d (%d items), want 4000 -> %d (%d items)", out.WindowBefore, out.WindowAfter, len(out.After),
			orchestrate.WindowTokens(after, 4000), len(after))
	}
	small, err := conversation(10).Items(ctx) // 1,000 tokens: under
	if err != nil {
		t.Fatal(err)
	}
	if orchestrate.OverThreshold(small, 0.75, 4000) {
		t.Fatal("1,000 tokens are over 0.75 × 4,000")
	}
}

// A run that makes no summary reports the context it read, unchanged.
func TestRunUnderTargetKeepsContext(t *testing.T) {
	conv := conversation(6)
	out, err := orchestrate.Run(context.Background(), compactor(t), conv, dag.Target{Budget: 4000, Mode: dag.ModeThreshold})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.NewSummaryIDs) != 0 || len(out.After) != 6 || out.WindowBefore != 600 || out.WindowAfter != 600 {
		t.Fatalf("run under target: %d summaries, %d items, window %d -> %d", len(out.Result.NewSummaryIDs), len(out.After),
			out.WindowBefore, out.WindowAfter)
	}
}

// Begin starts one run per conversation; a second Begin asks it to go
// again once; Again ends it. After Stop nothing begins and Acquire fails.
func TestStateBackgroundRuns(t *testing.T) {
	x := orchestrate.NewState(1)
	c := store.ConvID{1}
	if !x.Begin(c) {
		t.Fatal("first Begin: not started")
	}
	for range 2 {
		if x.Begin(c) {
			t.Fatal("Begin of a running conversation started another run")
		}
	}
	if running, _ := x.Running(); running != 1 {
		t.Fatalf("%d running, want 1", running)
	}
	if !x.Acquire() {
		t.Fatal("Acquire before Stop failed")
	}
	x.Release()
	if !x.Again(c) {
		t.Fatal("a Begin during the run did not ask for another pass")
	}
	if x.Again(c) {
		t.Fatal("a second pass without a new Begin")
	}
	if err := x.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	x.Record(c, orchestrate.BackgroundResult{Err: orchestrate.ErrCompacting})
	if r, ok := x.Last(c); !ok || !errors.Is(r.Err, orchestrate.ErrCompacting) {
		t.Fatalf("Last: %v %v", r, ok)
	}
	x.Stop()
	if x.Begin(store.ConvID{2}) {
		t.Fatal("a run began after Stop")
	}
	if running, stopped := x.Running(); running != 0 || !stopped {
		t.Fatalf("after Stop: %d runs, stopped %v", running, stopped)
	}
}

// Stop ends a run between passes: Again reports no further pass.
func TestStateStopEndsRun(t *testing.T) {
	x := orchestrate.NewState(1)
	c := store.ConvID{1}
	if !x.Begin(c) {
		t.Fatal("not started")
	}
	x.Begin(c) // asks for another pass
	done := make(chan struct{})
	go func() { x.Stop(); close(done) }()
	for {
		if _, stopped := x.Running(); stopped {
			break
		}
		runtime.Gosched()
	}
	if x.Again(c) {
		t.Fatal("another pass after Stop")
	}
	<-done
}

// The summarizer set with SetSummarizer wins and is not the host's; else
// the configured one is made once.
func TestStateSummarizer(t *testing.T) {
	x := orchestrate.NewState(1)
	t.Cleanup(x.Stop)
	host := summarize.Config{Kind: summarize.KindHost}
	if !x.HostSummarizer(host) || x.HostSummarizer(summarize.Config{Kind: summarize.KindExtractive}) {
		t.Fatal("HostSummarizer does not follow the configured kind")
	}
	s1, err := x.Summarizer(summarize.Config{Kind: summarize.KindExtractive}, core.Chars4{})
	if err != nil || s1 == nil {
		t.Fatalf("Summarizer: %v, %v", s1, err)
	}
	s2, err := x.Summarizer(host, core.Chars4{})
	if err != nil || s2 != s1 {
		t.Fatalf("Summarizer made twice: %v then %v (%v)", s1, s2, err)
	}
	o := summarize.NewExtractive(core.Chars4{})
	x.SetSummarizer(o)
	if got, _ := x.Summarizer(host, core.Chars4{}); got != o || x.HostSummarizer(host) || x.Override() != o {
		t.Fatal("SetSummarizer's summarizer not used, or taken for the host's")
	}
}

// KeptTail keeps the messages after the last summary and every summary id.
func TestKeptTail(t *testing.T) {
	msg := func(seq uint64) dag.Item { return dag.Item{Ref: dag.MessageRef(seq), Depth: -1} }
	sum := func(id string) dag.Item { return dag.Item{Ref: dag.Ref{Kind: dag.RefSummary, ID: id}} }
	seqs, ids := orchestrate.KeptTail([]dag.Item{msg(1), sum("a"), msg(2), msg(3), sum("b"), msg(4), msg(5)})
	if !slices.Equal(seqs, []uint64{4, 5}) || !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("KeptTail: %v %v", seqs, ids)
	}
	seqs, ids = orchestrate.KeptTail([]dag.Item{msg(1), msg(2)})
	if !slices.Equal(seqs, []uint64{1, 2}) || ids != nil {
		t.Fatalf("KeptTail without summaries: %v %v", seqs, ids)
	}
}

// Details carries the run's figures; no summary is an empty list, not null.
func TestDetails(t *testing.T) {
	d := orchestrate.Details("lossless", orchestrate.Outcome{Summarizer: "extractive",
		Result: dag.Result{TokensBefore: 10, TokensAfter: 5, Calls: 2}, Tally: summarize.TallyCounts{Fallback: 1, Reason: "x"}})
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"engine":"lossless","newSummaryIds":[],"contextTokensBefore":10,"contextTokensAfter":5,"goal":0,"tailTokens":0,"rounds":0,` +
		`"summarizer":"extractive","summarizerCalls":2,"summarizerFallbacks":1,"summarizerFallbackReason":"x","aggressive":0,"truncated":0}`
	if string(b) != want {
		t.Fatalf("details:\n%s\nwant\n%s", b, want)
	}
}

// A rewrite the host refused is deferred, not an error, unless the call's
// context ended; one that changed nothing says why.
func TestRewriteOutcome(t *testing.T) {
	ctx := context.Background()
	res, err := orchestrate.RewriteOutcome(ctx, core.RewriteResult{}, errors.New("rebuilding"))
	if err != nil || !strings.HasPrefix(res.Reason, orchestrate.MaintainRewriteDeferred) || !strings.HasSuffix(res.Reason, "rebuilding") {
		t.Fatalf("refused rewrite: %+v, %v", res, err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := orchestrate.RewriteOutcome(canceled, core.RewriteResult{}, errors.New("x")); err == nil {
		t.Fatal("a rewrite that failed with the context canceled is no error")
	}
	res, err = orchestrate.RewriteOutcome(ctx, core.RewriteResult{Reason: "guard"}, nil)
	if err != nil || res.Changed || res.Reason != "the host rewrote nothing: guard" {
		t.Fatalf("unchanged rewrite: %+v, %v", res, err)
	}
	res, err = orchestrate.RewriteOutcome(ctx, core.RewriteResult{Changed: true, BytesFreed: 7, RewrittenEntries: 2}, nil)
	if err != nil || !res.Changed || res.BytesFreed != 7 || res.RewrittenEntries != 2 || res.Reason != "" {
		t.Fatalf("rewrite: %+v, %v", res, err)
	}
}

func TestWindowTokens(t *testing.T) {
	items := []dag.Item{{Tokens: 50}, {Tokens: 30}, {Tokens: 20}}
	for _, tc := range []struct{ budget, want int }{{0, 0}, {19, 0}, {20, 20}, {49, 20}, {50, 50}, {99, 50}, {100, 100}, {1000, 100}} {
		if got := orchestrate.WindowTokens(items, tc.budget); got != tc.want {
			t.Errorf("WindowTokens(budget %d) = %d, want %d", tc.budget, got, tc.want)
		}
	}
}

func TestRewriteSuffix(t *testing.T) {
	branch := []core.Entry{{ID: "a"}, {ID: "b"}, {ID: ""}, {ID: "c"}, {ID: "d"}}
	for _, tc := range []struct {
		name     string
		replaced []string
		want     []string
	}{
		{"none", nil, nil},
		{"not on the branch", []string{"x"}, nil},
		{"from the first replaced, without empty ids", []string{"c", "b"}, []string{"b", "c", "d"}},
		{"last", []string{"d"}, []string{"d"}},
	} {
		var reps []core.TranscriptRewrite
		for _, id := range tc.replaced {
			reps = append(reps, core.TranscriptRewrite{EntryID: id})
		}
		if got := orchestrate.RewriteSuffix(branch, reps); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestShouldRotateOnRequest(t *testing.T) {
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{orchestrate.RuntimeContextRotate: json.RawMessage(" true ")}}
	if !orchestrate.ShouldRotate(core.CompactParams{RuntimeContext: rc}, 1<<40) {
		t.Fatal("rotateTranscript true: no rotation")
	}
	if orchestrate.ShouldRotate(core.CompactParams{SessionFile: "/nonexistent/s.jsonl"}, 0) {
		t.Fatal("a missing file rotates")
	}
}

// Reserved is the host's count beyond the window, capped at half the
// budget; nothing without a count.
func TestReserved(t *testing.T) {
	ctx := context.Background()
	conv := conversation(10) // 1,000 tokens
	for _, tc := range []struct{ current, budget, want int }{
		{0, 4000, 0}, {-5, 4000, 0}, {1200, 4000, 200}, {900, 4000, 0}, {5000, 4000, 2000}, {1200, 500, 250},
	} {
		if got := orchestrate.Reserved(ctx, conv, tc.current, tc.budget); got != tc.want {
			t.Errorf("Reserved(current %d, budget %d) = %d, want %d", tc.current, tc.budget, got, tc.want)
		}
	}
}

// WithHostLLM hands the summarizer the host's model: the request's system
// prompt, user text and token cap reach it, and its text comes back.
func TestWithHostLLM(t *testing.T) {
	ctx := context.Background()
	if orchestrate.WithHostLLM(ctx, nil) != ctx || orchestrate.WithHostLLM(ctx, &core.RuntimeContext{}) != ctx {
		t.Fatal("a context without a model changed")
	}
	var got core.LLMRequest
	rc := &core.RuntimeContext{LLMComplete: func(_ context.Context, req core.LLMRequest) (core.LLMResponse, error) {
		got = req
		return core.LLMResponse{Text: "summary"}, nil
	}}
	llm := summarize.HostLLMFrom(orchestrate.WithHostLLM(ctx, rc))
	if llm == nil {
		t.Fatal("no host model in the context")
	}
	text, err := llm(ctx, "sys", "user text", 77)
	if err != nil || text != "summary" {
		t.Fatalf("host model: %q, %v", text, err)
	}
	if got.System != "sys" || got.MaxTokens != 77 || len(got.Messages) != 1 || got.Messages[0].Text() != "user text" {
		t.Fatalf("request: %+v", got)
	}
}

// ShouldRotate rotates a file at or over rotateBytes.
func TestShouldRotateBySize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if !orchestrate.ShouldRotate(core.CompactParams{SessionFile: path}, 100) || orchestrate.ShouldRotate(core.CompactParams{SessionFile: path}, 101) {
		t.Fatal("ShouldRotate does not compare the size with rotateBytes")
	}
}
