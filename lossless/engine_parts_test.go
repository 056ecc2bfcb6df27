package lossless

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index/bleveindex"
)

// recaller returns the engine's recall state (Engine.recall), for the tests
// that reach the index through it.
func (e *Engine) recaller() *recaller { return e.recall }

// bleveOf returns the recall index as the Bleve index it is in tests, for
// the methods beyond index.Recall that tests look through.
func bleveOf(r *recaller) *bleveindex.Index { return r.Recall().(*bleveindex.Index) }

// countSummarizer summarises to its mark and counts its calls.
type countSummarizer struct {
	mark  string
	calls atomic.Int64
}

func (s *countSummarizer) Name() string { return s.mark }
func (s *countSummarizer) Summarize(_ context.Context, req core.SummarizeRequest) (string, error) {
	s.calls.Add(1)
	return s.mark + " " + core.Truncate(core.Chars4{}, req.Text, req.TargetTokens/4), nil
}

// openPartsTest opens an engine with recall on the store in dir; the end of
// the test checks the store's invariants and closes it.
func openPartsTest(t *testing.T, dir string) *Engine {
	t.Helper()
	cfg := testConfig(dir)
	withRecall(&cfg)
	cfg.FreshTailMessages, cfg.LeafChunkTokens = 8, 2000
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !e.closed.Load() {
			if err := checkInvariants(e); err != nil {
				t.Errorf("invariants of %s: %v", dir, err)
			}
		}
		if err := e.Close(); err != nil {
			t.Errorf("close %s: %v", dir, err)
		}
	})
	return e
}

// ingestWordParent stores n parent messages about word (the subagent tests'
// parent session).
func ingestWordParent(t *testing.T, e *Engine, word string, n int) {
	t.Helper()
	var msgs []core.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, textMsg([]string{core.RoleUser, core.RoleAssistant}[i%2],
			fmt.Sprintf("parent turn %d about the %s project", i, word), int64(1_700_000_000_000+i*1000)))
	}
	if _, err := e.IngestBatch(context.Background(), core.IngestBatchParams{SessionID: "parent", SessionKey: parentKey, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
}

func prepareFork(t *testing.T, e *Engine, key string, ttl int64) {
	t.Helper()
	if _, err := e.PrepareSubagentSpawn(context.Background(), core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
		ChildSessionKey: key, ContextMode: core.ContextModeFork, TTLMs: ttl}); err != nil {
		t.Fatal(err)
	}
}

// Two engines of one process, on two stores holding the same session names
// (so the same conversation and subagent ids) with different words, keep
// their own recall index, compaction state and subagent state; closing one
// leaves the other working. Any of these parts shared between the engines
// (kept per process, or looked up by something both have) fails it.
func TestEnginesKeepTheirOwnParts(t *testing.T) {
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	words := map[string]string{dirA: "granite", dirB: "basalt"}

	// Store B holds a preparation that expires before B is opened again:
	// B's engine sweeps it at Open, whatever another engine swept before.
	seed := openPartsTest(t, dirB)
	ingestWordParent(t, seed, words[dirB], 4)
	prepareFork(t, seed, "agent:main:subagent:stale", 1)
	if err := seed.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)

	a := openPartsTest(t, dirA)
	b := openPartsTest(t, dirB)
	if k := subKeys(t, b); k[pSub] != 0 || k[pForkItem] != 0 {
		t.Fatalf("B's expired preparation was not swept when B opened: %v", k)
	}
	if a.recall == nil || b.recall == nil || a.recall == b.recall || a.compaction == b.compaction {
		t.Fatalf("parts: recall %p and %p, compaction %p and %p", a.recall, b.recall, a.compaction, b.compaction)
	}

	sums := map[*Engine]*countSummarizer{}
	for _, e := range []*Engine{a, b} {
		w := words[e.cfg.StoreDir]
		ingestTurns(t, e, "old", "agent:main:old",
			"Where did we put the staging database credentials?",
			"They are in vault path secret/staging/postgres, rotated every 30 days, in the "+w+" safe.")
		ingestTurns(t, e, "other", "agent:main:other", "Let us plan the birthday party for Sam.", "Cake at 5pm, balloons are blue.")
		ingestTurns(t, e, "cur", "agent:main:cur", "Good morning", "Good morning! What are we doing today?")
		ingestWordParent(t, e, w, 6)
		prepareFork(t, e, childKey, 0)
		sums[e] = &countSummarizer{mark: "MARK-" + w}
		e.SetSummarizer(sums[e])
		if err := e.WaitRecallIndex(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Recall: each engine searches its own index.
	recalls := func(e *Engine, prompt, want string) {
		t.Helper()
		res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "cur", SessionKey: "agent:main:cur", TokenBudget: 4000, Prompt: prompt})
		if err != nil {
			t.Fatal(err)
		}
		rm := recallMessage(res)
		if !strings.Contains(rm, want) {
			t.Fatalf("%s: recall for %q lacks %q:\n%s", words[e.cfg.StoreDir], prompt, want, rm)
		}
		for _, w := range words {
			if w != words[e.cfg.StoreDir] && strings.Contains(rm, w) {
				t.Fatalf("%s: recalled the other store's %q:\n%s", words[e.cfg.StoreDir], w, rm)
			}
		}
	}
	const credentials = "where are the staging postgres credentials kept?"
	recalls(a, credentials, "granite safe")
	recalls(b, credentials, "basalt safe")

	// Fork caches: the child (same subagent id in both stores) is assembled
	// in A first, then in B; B shows B's parent.
	forkShows := func(e *Engine) {
		t.Helper()
		res := assembleChild(t, e, 100000)
		got := strings.Join(rawsOf(res.Messages), "\n")
		for _, w := range words {
			if has, want := strings.Contains(got, w), w == words[e.cfg.StoreDir]; has != want {
				t.Fatalf("%s: the fork shows %q: %v, want %v:\n%s", words[e.cfg.StoreDir], w, has, want, got)
			}
		}
	}
	forkShows(a)
	forkShows(b)

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Assemble(ctx, core.AssembleParams{SessionID: "cur", TokenBudget: 4000}); err == nil {
		t.Fatal("A assembles after Close")
	}

	// B works on: subagents,
	forkShows(b)
	prepareFork(t, b, "agent:main:subagent:c2", 0)
	if _, ok, err := b.Subagent(ctx, "agent:main:subagent:c2"); err != nil || !ok {
		t.Fatalf("B's new preparation: %v %v", ok, err)
	}
	// background compaction, with B's own summarizer,
	if err := b.AfterTurn(ctx, core.AfterTurnParams{SessionID: "long", Messages: turnMessages(120, 20, 1_700_000_000_000), TokenBudget: 8000}); err != nil {
		t.Fatal(err)
	}
	b.waitBackground()
	bg, ok := b.lastBackground(mustConv(t, b, "long"))
	if !ok || bg.Err != nil || len(bg.Result.NewSummaryIDs) == 0 {
		t.Fatalf("B's background compaction after A closed: %+v %v", bg, ok)
	}
	if sums[b].calls.Load() == 0 || sums[a].calls.Load() != 0 {
		t.Fatalf("summarizer calls: B's %d, A's %d", sums[b].calls.Load(), sums[a].calls.Load())
	}
	// and recall of what B stores now.
	ingestTurns(t, b, "gate", "agent:main:gate", "What is the code of the garden gate?", "The garden gate code is 4711.")
	if err := b.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	recalls(b, "what is the garden gate code?", "4711")
	recalls(b, credentials, "basalt safe")
	if st := b.RecallStatus(); !st.Enabled || st.Error != "" {
		t.Fatalf("B's recall status: %+v", st)
	}
}
