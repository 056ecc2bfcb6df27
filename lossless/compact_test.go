package lossless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

// allSeqs returns the conversation's message seqs in order.
func allSeqs(t testing.TB, e *Engine, agent, session string) []uint64 {
	t.Helper()
	var out []uint64
	if err := e.Messages(context.Background(), agent, session, func(seq uint64, _ core.Message) error {
		out = append(out, seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// expandAll pages through summary id and returns the raw bytes.
func expandAll(t testing.TB, e *Engine, session, id string, maxTokens int) [][]byte {
	t.Helper()
	var out [][]byte
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := e.ExpandSummary(context.Background(), tools.ExpandParams{SessionID: session, ID: id, MaxTokens: maxTokens, Cursor: cursor})
		if err != nil {
			t.Fatalf("expand %s: %v", id, err)
		}
		if len(p.Messages) == 0 {
			t.Fatalf("expand %s: empty page", id)
		}
		if maxTokens > 0 && len(p.Messages) > 1 && p.Tokens > maxTokens {
			t.Fatalf("expand %s: page of %d tokens over the cap %d", id, p.Tokens, maxTokens)
		}
		for _, m := range p.Messages {
			out = append(out, m.Message.Raw())
		}
		if cursor = p.NextCursor; cursor == "" {
			return out
		}
	}
}

// TestCompactPiMonoExpandsByteForByte imports the real before-compaction
// transcript (two imported compactions), compacts it hard with the
// extractive summarizer, checks the DAG, and expands every summary — the
// active ones give back the whole file's messages, byte for byte, in order.
func TestCompactPiMonoExpandsByteForByte(t *testing.T) {
	path := testutil.SharedFile(t, "data/pi-mono/before-compaction.jsonl")
	e := openTest(t)
	// A cheap deterministic summarizer keeps this test fast under -race;
	// the default (extractive) one is checked in TestCompactResults.
	e.SetSummarizer(markSummarizer{})
	ctx := context.Background()
	imp, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	sid := imp.SessionID
	res, err := e.Compact(ctx, core.CompactParams{SessionID: sid, TokenBudget: 40000, Force: true, CompactionTarget: core.CompactionTargetThreshold})
	if err != nil {
		t.Fatal(err)
	}
	var d orchestrate.CompactDetails
	if err := json.Unmarshal(res.Result.Details, &d); err != nil {
		t.Fatal(err)
	}
	t.Logf("compact: ok=%v compacted=%v reason=%q window %d -> %d, context %d -> %d, %d summaries, %d rounds, %d calls (%s)",
		res.OK, res.Compacted, res.Reason, res.Result.TokensBefore, res.Result.TokensAfter, d.ContextTokensBefore, d.ContextTokensAfter, len(d.NewSummaryIDs), d.Rounds, d.SummarizerCalls, d.Summarizer)
	if !res.OK || !res.Compacted || res.Result.TokensAfter >= res.Result.TokensBefore || d.ContextTokensAfter > d.Goal {
		t.Fatalf("compaction did not reach its goal: %+v %+v", res, d)
	}
	if d.Summarizer != "mark" || len(d.NewSummaryIDs) == 0 {
		t.Fatalf("details: %+v", d)
	}
	conv, err := e.Conversation(ctx, "", sid)
	if err != nil {
		t.Fatal(err)
	}
	if err := dag.Check(ctx, conv, allSeqs(t, e, "", sid)); err != nil {
		t.Fatal(err)
	}
	want := fileMessages(t, path)
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for _, it := range items {
		if it.IsSummary() {
			got = append(got, expandAll(t, e, sid, it.Ref.ID, 3000)...)
			continue
		}
		m, err := conv.Message(ctx, it.Ref.Seq)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Raw())
	}
	if len(got) != len(want) {
		t.Fatalf("expanded %d messages, the file has %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d differs from the file", i)
		}
	}
	// Every summary of the DAG (new, imported, active or not) expands to a
	// contiguous run of the file's messages.
	var every []string
	var walk func(id string)
	walk = func(id string) {
		every = append(every, id)
		s, err := conv.Summary(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range s.Sources {
			if src.Kind == dag.RefSummary {
				walk(src.ID)
			}
		}
	}
	imported := 0
	for _, it := range items {
		if it.IsSummary() {
			walk(it.Ref.ID)
		}
	}
	for _, id := range every {
		if strings.HasPrefix(id, "imp-") {
			imported++
		}
	}
	if imported != 2 || len(every) < len(d.NewSummaryIDs)+2 {
		t.Fatalf("DAG holds %d summaries (%d imported), want the 2 imported and the %d new ones", len(every), imported, len(d.NewSummaryIDs))
	}
	for _, id := range every {
		sub := expandAll(t, e, sid, id, 0)
		start := -1
		for i := range want {
			if bytes.Equal(want[i], sub[0]) {
				start = i
				break
			}
		}
		if start < 0 || start+len(sub) > len(want) {
			t.Fatalf("summary %s: first message not in the file", id)
		}
		for k := range sub {
			if !bytes.Equal(sub[k], want[start+k]) {
				t.Fatalf("summary %s: message %d differs", id, k)
			}
		}
		s, err := conv.Summary(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Tokens != core.CountMessage(e.TokenCounter(), RenderSummary(s)) {
			t.Fatalf("summary %s: tokens %d are not the rendered message's count", id, s.Tokens)
		}
		if strings.Contains(s.Text, "<think") {
			t.Fatalf("summary %s holds reasoning", id)
		}
	}
}

// gateSummarizer blocks every call until gate is closed.
type gateSummarizer struct {
	gate    chan struct{}
	entered chan struct{}
	calls   atomic.Int64
}

func (g *gateSummarizer) Name() string { return "gate" }
func (g *gateSummarizer) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	if g.calls.Add(1) == 1 {
		close(g.entered)
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return core.Truncate(core.Chars4{}, req.Text, req.TargetTokens/2), nil
}

func textMsg(role, text string, ts int64) core.Message {
	if role == core.RoleUser {
		return core.UserText(text, ts)
	}
	return core.AssistantText(text, ts)
}

func turnMessages(n, words int, ts0 int64) []core.Message {
	var msgs []core.Message
	for i := 0; i < n; i++ {
		role := []string{core.RoleUser, core.RoleAssistant}[i%2]
		msgs = append(msgs, textMsg(role, fmt.Sprintf("turn %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", words)), ts0+int64(i)*1000))
	}
	return msgs
}

// TestProactiveCompactionDoesNotBlock: AfterTurn over the threshold starts
// a background compaction; while its summarizer hangs, Assemble and Ingest
// on the same session return promptly; when it is let go, the context has
// been compacted under the threshold.
func TestProactiveCompactionDoesNotBlock(t *testing.T) {
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 8; c.LeafChunkTokens = 2000 })
	g := &gateSummarizer{gate: make(chan struct{}), entered: make(chan struct{})}
	e.SetSummarizer(g)
	ctx := context.Background()
	msgs := turnMessages(120, 20, 1_700_000_000_000)
	budget := 8000
	if err := e.AfterTurn(ctx, core.AfterTurnParams{SessionID: "s1", Messages: msgs, TokenBudget: budget}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("no background compaction started")
	}
	start := time.Now()
	a, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s1", TokenBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s1", Message: core.UserText("one more", 1_700_000_999_000)}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("assemble+ingest took %v during a background compaction", took)
	}
	// A foreground Compact waits for the running one, but honours its
	// context.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = e.Compact(short, core.CompactParams{SessionID: "s1", TokenBudget: budget})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Compact during a background run: want DeadlineExceeded, got %v", err)
	}
	close(g.gate)
	e.waitBackground()
	conv, err := e.Conversation(ctx, "", "s1")
	if err != nil {
		t.Fatal(err)
	}
	bg, ok := e.lastBackground(conv)
	if !ok || bg.Err != nil || len(bg.Result.NewSummaryIDs) == 0 {
		t.Fatalf("background result: %+v %v", bg, ok)
	}
	items, _ := conv.Items(ctx)
	if total := itemTokens(items); float64(total) > 0.75*float64(budget) {
		t.Fatalf("context %d tokens after background compaction, threshold %v", total, 0.75*float64(budget))
	}
	a2, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s1", TokenBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("assembled %d tokens before, %d after the background compaction", a.EstimatedTokens, a2.EstimatedTokens)
	if err := dag.Check(ctx, conv, allSeqs(t, e, "", "s1")); err != nil {
		t.Fatal(err)
	}
}

func TestCompactResults(t *testing.T) {
	ctx := context.Background()
	t.Run("unknown session", func(t *testing.T) {
		e := openTest(t)
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "nope"})
		if err != nil || res.OK || res.Compacted {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("nothing to compact", func(t *testing.T) {
		e := openTest(t)
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turnMessages(6, 5, 1)}); err != nil {
			t.Fatal(err)
		}
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "s", Force: true})
		if err != nil || !res.OK || res.Compacted || res.Result.TokensAfter != res.Result.TokensBefore {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("compacted only when tokens went down", func(t *testing.T) {
		e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 4 })
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turnMessages(200, 30, 1)}); err != nil {
			t.Fatal(err)
		}
		p := core.CompactParams{SessionID: "s", TokenBudget: 6000, CompactionTarget: core.CompactionTargetBudget}
		res, err := e.Compact(ctx, p)
		if err != nil || !res.OK || !res.Compacted || res.Result.TokensAfter >= res.Result.TokensBefore || res.Result.TokensAfter > 6000 {
			t.Fatalf("first: %+v %v", res, err)
		}
		var d orchestrate.CompactDetails
		if err := json.Unmarshal(res.Result.Details, &d); err != nil || d.Summarizer != "extractive" || d.SummarizerCalls == 0 {
			t.Fatalf("default summarizer: %+v %v", d, err)
		}
		res2, err := e.Compact(ctx, p)
		if err != nil || !res2.OK || res2.Compacted {
			t.Fatalf("second compaction of a context already under target: %+v %v", res2, err)
		}
	})
	t.Run("budget from runtime context", func(t *testing.T) {
		e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 4 })
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turnMessages(100, 30, 1)}); err != nil {
			t.Fatal(err)
		}
		rc := &core.RuntimeContext{Values: map[string]json.RawMessage{"tokenBudget": json.RawMessage("5000")}}
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "s", RuntimeContext: rc, CompactionTarget: core.CompactionTargetThreshold})
		if err != nil {
			t.Fatal(err)
		}
		var d orchestrate.CompactDetails
		_ = json.Unmarshal(res.Result.Details, &d)
		if d.Goal != 3750 || d.ContextTokensAfter > 3750 || !res.Compacted {
			t.Fatalf("goal %d after %d: %+v", d.Goal, d.ContextTokensAfter, res)
		}
	})
	t.Run("tail too large", func(t *testing.T) {
		e := openTest(t)
		msgs := append(turnMessages(10, 30, 1), core.UserText(strings.Repeat("huge prompt ", 4000), 99_000))
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "s", TokenBudget: 2000, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		// At its floor: no failure (a host would fail its preflight), but
		// "nothing to compact" and why.
		var d orchestrate.CompactDetails
		_ = json.Unmarshal(res.Result.Details, &d)
		if !res.OK || !d.TailTooLarge || !strings.HasPrefix(res.Reason, "nothing to compact") || !strings.Contains(res.Reason, "floor") {
			t.Fatalf("want ok, tailTooLarge and 'nothing to compact … floor', got %+v %+v", res, d)
		}
	})
}

// TestCompactReservesHostTokens: a host count above the assembled context
// (system prompt, tools) is reserved, capped at half the budget (OpenClaw's
// system prompt and tool schemas take ~40% of a 24K window by default).
func TestCompactReservesHostTokens(t *testing.T) {
	ctx := context.Background()
	run := func(current int) (orchestrate.CompactDetails, int) {
		e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 4 })
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turnMessages(100, 30, 1)}); err != nil {
			t.Fatal(err)
		}
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "s", TokenBudget: 8000, CurrentTokenCount: current, CompactionTarget: core.CompactionTargetBudget})
		if err != nil {
			t.Fatal(err)
		}
		var d orchestrate.CompactDetails
		_ = json.Unmarshal(res.Result.Details, &d)
		return d, res.Result.TokensBefore
	}
	if d, _ := run(0); d.Goal != 8000 {
		t.Fatalf("no host count: goal %d, want 8000", d.Goal)
	}
	if d, window := run(9000); d.Goal != 8000-(9000-window) || d.ContextTokensAfter > d.Goal {
		t.Fatalf("host count 9000 over a window of %d: goal %d after %d, want %d", window, d.Goal, d.ContextTokensAfter, 8000-(9000-window))
	}
	if d, _ := run(1_000_000); d.Goal != 4000 {
		t.Fatalf("huge host count: goal %d, want 4000 (half the budget reserved at most)", d.Goal)
	}
}

// TestCompactWhileIngesting: compactions and ingests race on one
// conversation; nothing is lost and the DAG invariants hold.
func TestCompactWhileIngesting(t *testing.T) {
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 6; c.LeafChunkTokens = 800 })
	e.SetSummarizer(markSummarizer{})
	ctx := context.Background()
	const n = 300
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i += 3 {
			time.Sleep(time.Millisecond)
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turnMessages(3, 20, int64(i)*10_000)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	compactions := 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "s", TokenBudget: 3000, Force: compactions%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		if res.Compacted {
			compactions++
		}
	}
	if compactions == 0 {
		t.Fatal("no compaction ran during the ingests")
	}
	seqs := allSeqs(t, e, "", "s")
	if len(seqs) != n {
		t.Fatalf("%d messages stored, want %d", len(seqs), n)
	}
	if err := dag.Check(ctx, mustConv(t, e, "s"), seqs); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d compactions interleaved with %d stored messages", compactions, len(seqs))
}

// summarizerConcurrency reaches the compactor (0 keeps dag's default).
func TestSummarizerConcurrencyConfig(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, 4}, {1, 1}, {6, 6}} {
		e := openTest(t, func(c *config.Config) { c.SummarizerConcurrency = tc.set })
		comp, err := e.Compactor()
		if err != nil {
			t.Fatal(err)
		}
		if got := comp.Config().Concurrency; got != tc.want {
			t.Fatalf("summarizerConcurrency %d: compactor runs %d calls at once, want %d", tc.set, got, tc.want)
		}
	}
}

// A compaction request that arrives after Close (afterTurn's proactive
// compaction runs after the call's lifecycle ends) starts no background
// run on the closed engine.
func TestNoBackgroundRunAfterClose(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turnMessages(40, 20, 1)}); err != nil {
		t.Fatal(err)
	}
	conv := mustConv(t, e, "s")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e.afterTurnCompact(core.AfterTurnParams{SessionID: "s"})
	e.startCompaction(conv, 100) // over the threshold: a run if one could start
	running, stopped := e.compaction.runs.Running()
	if running != 0 || !stopped {
		t.Fatalf("after Close: %d background runs, stopped %v", running, stopped)
	}
	e.waitBackground()
	if _, ok := e.lastBackground(conv); ok {
		t.Fatal("a background compaction ran on a closed engine")
	}
}

// TestCompactUnknownSessionTokensAfter: a compact for a session the engine
// stored nothing of (OpenClaw's preflight or overflow recovery before the
// session's first commit) says so and still returns a finite tokensAfter,
// the host's own count (OpenClaw records it).
func TestCompactUnknownSessionTokensAfter(t *testing.T) {
	e := openTest(t)
	res, err := e.Compact(context.Background(), core.CompactParams{SessionID: "never-seen", SessionKey: "agent:main:never-seen",
		TokenBudget: 24000, CurrentTokenCount: 18500})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Compacted || res.Result == nil || res.Result.TokensAfter != 18500 {
		t.Fatalf("compact of an unknown session: %+v (result %+v), want not compacted, tokensAfter 18500", res, res.Result)
	}
	if !strings.Contains(res.Reason, "nothing stored") {
		t.Fatalf("reason %q does not say nothing is stored", res.Reason)
	}
}
