package orchestrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// fakePort is an engine of one in-memory conversation: the methods the
// background runs call are implemented, the rest (the embedded nil Port)
// panic if called.
type fakePort struct {
	orchestrate.Port[*dag.Memory]
	state *orchestrate.State
	mu    sync.Mutex // the compaction lock
	busy  bool       // another process holds the shared lock
	runs  int
}

func newFakePort(t *testing.T) *fakePort {
	p := &fakePort{state: orchestrate.NewState(1)}
	p.state.SetSummarizer(summarize.NewExtractive(core.Chars4{}))
	t.Cleanup(p.state.Stop)
	return p
}

func (p *fakePort) State() *orchestrate.State { return p.state }
func (p *fakePort) Config() orchestrate.Config {
	return orchestrate.Config{Engine: "fake", ContextThreshold: 0.75, FreshTailMessages: 4}
}
func (p *fakePort) Compactor() (*dag.Compactor, error) {
	sum, err := orchestrate.Summarizer[*dag.Memory](p)
	if err != nil {
		return nil, err
	}
	return dag.NewCompactor(dag.Config{FreshTailMessages: 4}, sum, core.Chars4{})
}
func (p *fakePort) ID(*dag.Memory) store.ConvID { return store.ConvID{1} }
func (p *fakePort) LockCompaction(context.Context, store.ConvID) (func(), error) {
	p.mu.Lock()
	return p.mu.Unlock, nil
}
func (p *fakePort) SharedLock(context.Context, store.ConvID, bool) (func(), bool, error) {
	if p.busy {
		return nil, false, nil
	}
	return func() {}, true, nil
}
func (p *fakePort) RunHook(store.ConvID) func() {
	p.runs++
	return nil
}

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

// A conversation over contextThreshold × budget is compacted in the
// background under it, and its result kept; one under it is left alone.
func TestStartCompactsOverThreshold(t *testing.T) {
	p := newFakePort(t)
	conv := conversation(40)
	orchestrate.Start[*dag.Memory](p, conv, 4000) // 4,000 tokens: at 100%
	p.state.WaitIdle()
	r, ok := p.state.Last(store.ConvID{1})
	if !ok || r.Err != nil {
		t.Fatalf("no background result (%v) or it failed: %v", ok, r.Err)
	}
	if len(r.Result.NewSummaryIDs) == 0 || r.Result.TokensAfter > 3000 {
		t.Fatalf("background run: %d summaries, %d tokens after, want some and at most 3000", len(r.Result.NewSummaryIDs), r.Result.TokensAfter)
	}

	q := newFakePort(t)
	orchestrate.Start[*dag.Memory](q, conversation(10), 4000) // 1,000 tokens: under
	q.state.WaitIdle()
	if _, ok := q.state.Last(store.ConvID{1}); ok || q.runs != 0 {
		t.Fatalf("a conversation under its threshold was compacted (%d runs)", q.runs)
	}
}

// A run that finds another process compacting the conversation skips it
// (ErrCompacting), recording no result; a direct Run reports it.
func TestRunSkipsWhenSharedLockBusy(t *testing.T) {
	p := newFakePort(t)
	p.busy = true
	conv := conversation(40)
	if _, err := orchestrate.Run[*dag.Memory](context.Background(), p, conv, dag.Target{Budget: 4000}, false); !errors.Is(err, orchestrate.ErrCompacting) {
		t.Fatalf("Run with the shared lock held: %v, want ErrCompacting", err)
	}
	orchestrate.Start[*dag.Memory](p, conv, 4000)
	p.state.WaitIdle()
	if _, ok := p.state.Last(store.ConvID{1}); ok {
		t.Fatal("a skipped background run recorded a result")
	}
}

// After Stop no background run starts, and Wait returns at once.
func TestNoStartAfterStop(t *testing.T) {
	p := newFakePort(t)
	p.state.Stop()
	orchestrate.Start[*dag.Memory](p, conversation(40), 4000)
	if running, stopped := p.state.Running(); running != 0 || !stopped {
		t.Fatalf("after Stop: %d runs, stopped %v", running, stopped)
	}
	if err := p.state.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.state.Last(store.ConvID{1}); ok || p.runs != 0 {
		t.Fatal("a background run ran after Stop")
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
