package dag_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
)

var soakRoles = []string{"user", "assistant", "assistant", "toolResult", "toolResult", "bashExecution"}

// randomHistory appends n random messages.
func randomHistory(rng *rand.Rand, m *dag.Memory, n int) {
	for i := 0; i < n; i++ {
		role := soakRoles[rng.IntN(len(soakRoles))]
		tok := 1 + rng.IntN(200)
		if rng.IntN(20) == 0 {
			tok = 200 + rng.IntN(1500)
		}
		seq := len(m.MessageSeqs()) + 1
		text := role + strconv.Itoa(seq) + strings.Repeat(" x", tok-1)
		m.Append(role, text, tok, 1_700_000_000_000+int64(seq)*1000)
	}
}

func tailTokensOK(t *testing.T, items []dag.Item, tail int) {
	t.Helper()
	sum := 0
	for i := len(items) - 1; i >= 0 && sum < tail; i-- {
		if items[i].IsSummary() {
			break
		}
		sum += items[i].Tokens
	}
	if sum != tail {
		t.Fatalf("TailTokens %d is not the tokens of a raw suffix of the context (%d)", tail, sum)
	}
}

// checkResult asserts what every Run must guarantee.
func checkResult(t *testing.T, c *dag.Compactor, m *dag.Memory, tgt dag.Target, res dag.Result) {
	t.Helper()
	ctx := context.Background()
	if err := dag.Check(ctx, m, m.MessageSeqs()); err != nil {
		t.Fatalf("after Run(%+v): %v", tgt, err)
	}
	items, _ := m.Items(ctx)
	total := 0
	for _, it := range items {
		total += it.Tokens
	}
	if total != res.TokensAfter {
		t.Fatalf("TokensAfter %d, items hold %d", res.TokensAfter, total)
	}
	if res.TokensAfter > res.TokensBefore {
		t.Fatalf("tokens grew: %d -> %d", res.TokensBefore, res.TokensAfter)
	}
	if res.Compacted() != (len(res.NewSummaryIDs) > 0) {
		t.Fatalf("Compacted %v with %d new summaries (before %d after %d)", res.Compacted(), len(res.NewSummaryIDs), res.TokensBefore, res.TokensAfter)
	}
	if !tgt.Force && res.TokensBefore <= res.Goal && res.TokensAfter != res.TokensBefore {
		t.Fatalf("under the goal without force, yet compacted")
	}
	tailTokensOK(t, items, res.TailTokens)
	if res.TokensAfter > res.Goal {
		if res.Reason == "" {
			t.Fatalf("above goal %d with %d tokens and no reason", res.Goal, res.TokensAfter)
		}
		slack := 3 * (c.Overhead() + 16)
		if !res.TailTooLarge && res.TokensAfter-res.TailTokens > slack {
			for _, it := range items {
				t.Logf("item %+v", it)
			}
			t.Fatalf("did not converge: %d tokens > goal %d, tail %d, %d rounds, reason %q", res.TokensAfter, res.Goal, res.TailTokens, res.Rounds, res.Reason)
		}
		if res.TailTooLarge && res.TailTokens+c.Overhead() <= res.Goal-16 {
			t.Fatalf("TailTooLarge with tail %d under goal %d", res.TailTokens, res.Goal)
		}
	}
}

// TestSoak runs thousands of random compactions with every summarizer
// failure mode and checks the invariants after each. DAG_SOAK=n runs n.
func TestSoak(t *testing.T) {
	n := 1500
	if v := os.Getenv("DAG_SOAK"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if testing.Short() {
		n = 200
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("DAG_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	modes := []string{"ok", "ok", "ok", "fail", "empty", "think", "longer", "hang", "aggronly", "mixed"}
	ctx := context.Background()
	done := 0
	for done < n {
		m := dag.NewMemory()
		for step := 0; step < 25 && done < n; step++ {
			randomHistory(rng, m, 1+rng.IntN(20))
			cfg := dag.Config{
				FreshTailMessages: 1 + rng.IntN(12),
				LeafChunkTokens:   100 + rng.IntN(800),
				LeafTargetTokens:  10 + rng.IntN(80),
				MinFanIn:          2 + rng.IntN(4),
				Concurrency:       1 + rng.IntN(4),
				CallTimeout:       2 * time.Millisecond,
				NewID:             seqIDs(),
				MaxRounds:         8 + rng.IntN(30),
			}
			cfg.CondensedTargetTokens = cfg.LeafTargetTokens
			prefix := fmt.Sprintf("c%d_", done)
			ids := cfg.NewID
			cfg.NewID = func() string { return prefix + ids() }
			if rng.IntN(3) == 0 {
				cfg.FreshTailMaxTokens = 50 + rng.IntN(1000)
			}
			sum := &fakeSum{mode: modes[rng.IntN(len(modes))]}
			c, err := dag.NewCompactor(cfg, sum, words{})
			if err != nil {
				t.Fatal(err)
			}
			tgt := dag.Target{Budget: 100 + rng.IntN(4000), Force: rng.IntN(3) == 0}
			if rng.IntN(2) == 0 {
				tgt.Mode = dag.ModeBudget
			}
			res, err := c.Run(ctx, m, tgt)
			if err != nil {
				t.Fatalf("run %d (%s, %+v): %v", done, sum.mode, tgt, err)
			}
			checkResult(t, c, m, tgt, res)
			done++
		}
	}
}

// TestBudgetProperty: random histories and budgets, the ok summarizer and
// default-shaped config: the result is under the goal unless the tail alone
// is too large.
func TestBudgetProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	ctx := context.Background()
	for i := 0; i < 300; i++ {
		m := dag.NewMemory()
		randomHistory(rng, m, 1+rng.IntN(300))
		c, err := dag.NewCompactor(dag.Config{FreshTailMessages: 16, LeafChunkTokens: 2000, LeafTargetTokens: 120, CondensedTargetTokens: 100, NewID: seqIDs()}, &fakeSum{mode: "ok"}, words{})
		if err != nil {
			t.Fatal(err)
		}
		tgt := dag.Target{Budget: 200 + rng.IntN(20000), Force: rng.IntN(4) == 0, Mode: dag.ModeThreshold}
		if rng.IntN(2) == 0 {
			tgt.Mode = dag.ModeBudget
		}
		res, err := c.Run(ctx, m, tgt)
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, c, m, tgt, res)
		if res.TokensAfter > res.Goal && !res.TailTooLarge {
			t.Fatalf("case %d: %d tokens over goal %d without TailTooLarge: %s", i, res.TokensAfter, res.Goal, res.Reason)
		}
	}
}

// TestConcurrentLeafSummaries: 8 chunks with Concurrency 4 keep 4 calls in
// flight (and never more), so a slow summarizer costs ~2 calls of wall time,
// not 8.
func TestConcurrentLeafSummaries(t *testing.T) {
	for _, conc := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("conc", conc), func(t *testing.T) {
			m := dag.NewMemory()
			appendMsgs(m, 8*10+2, 50, []string{"user", "assistant"}, 0)
			sum := &fakeSum{mode: "ok", delay: 50 * time.Millisecond}
			c, err := dag.NewCompactor(dag.Config{FreshTailMessages: 2, FreshTailMaxTokens: 100, LeafChunkTokens: 500, LeafTargetTokens: 40, Concurrency: conc}, sum, words{})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := c.Run(context.Background(), m, dag.Target{Budget: 100000, Force: true})
			wall := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.NewSummaryIDs) != 8 || sum.calls.Load() != 8 {
				t.Fatalf("want 8 leaf summaries from 8 calls, got %d from %d", len(res.NewSummaryIDs), sum.calls.Load())
			}
			if got := sum.maxIn.Load(); got != int64(conc) {
				t.Fatalf("max calls in flight %d, want %d", got, conc)
			}
			t.Logf("concurrency %d: wall %v for 8 calls of 50ms (%.2f of serial)", conc, wall, float64(wall)/float64(400*time.Millisecond))
			if err := dag.Check(context.Background(), m, m.MessageSeqs()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEscalationRejects: each kind of bad output is rejected, escalated,
// and the summary made is shorter than its input; reasoning never lands
// in a summary.
func TestEscalationRejects(t *testing.T) {
	for _, mode := range []string{"fail", "empty", "think", "longer", "hang", "aggronly", "ok"} {
		t.Run(mode, func(t *testing.T) {
			m := dag.NewMemory()
			appendMsgs(m, 20, 30, []string{"user", "assistant"}, 0)
			sum := &fakeSum{mode: mode}
			c, _ := dag.NewCompactor(dag.Config{FreshTailMessages: 2, FreshTailMaxTokens: 60, LeafChunkTokens: 10000, LeafTargetTokens: 50, CallTimeout: 20 * time.Millisecond, NewID: seqIDs()}, sum, words{})
			start := time.Now()
			res, err := c.Run(context.Background(), m, dag.Target{Budget: 10000, Force: true})
			if err != nil {
				t.Fatal(err)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("hung")
			}
			if len(res.NewSummaryIDs) != 1 {
				t.Fatalf("want 1 summary, got %v", res.NewSummaryIDs)
			}
			s, _ := m.Summary(context.Background(), res.NewSummaryIDs[0])
			want := map[string]string{"ok": "normal", "aggronly": "aggressive"}[mode]
			if want == "" {
				want = "truncate"
			}
			if s.Method != want {
				t.Fatalf("method %q, want %q", s.Method, want)
			}
			if strings.Contains(s.Text, "<think>") || strings.Contains(s.Text, "plan") {
				t.Fatalf("reasoning in summary: %q", s.Text)
			}
			if s.Tokens >= s.DescendantTokens {
				t.Fatalf("summary %d tokens not shorter than its %d", s.Tokens, s.DescendantTokens)
			}
			if words.CountText(words{}, dag.RenderText(s)) != s.Tokens {
				t.Fatalf("Tokens %d is not the rendered count", s.Tokens)
			}
			calls := map[string]int64{"ok": 1}[mode]
			if calls == 0 {
				calls = 2
			}
			if sum.calls.Load() != calls {
				t.Fatalf("%d calls, want %d", sum.calls.Load(), calls)
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	m := dag.NewMemory()
	appendMsgs(m, 50, 30, []string{"user", "assistant"}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	sum := &fakeSum{mode: "hang"}
	c, _ := dag.NewCompactor(dag.Config{FreshTailMessages: 2, LeafChunkTokens: 200}, sum, words{})
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := c.Run(ctx, m, dag.Target{Budget: 500})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if err := dag.Check(context.Background(), m, m.MessageSeqs()); err != nil {
		t.Fatal(err)
	}
}

// conflictStore makes the first Replace fail with ErrConflict after
// changing the items underneath, like a concurrent compaction would.
// conflictStore fails the first Replace with a conflict. Replace is called
// from concurrent summarizer jobs, so the counter is atomic.
type conflictStore struct {
	*dag.Memory
	n atomic.Int64
}

func (s *conflictStore) Replace(ctx context.Context, old []dag.Item, sum dag.Summary, item dag.Item) error {
	if s.n.Add(1) == 1 {
		return fmt.Errorf("wrapped: %w", dag.ErrConflict)
	}
	return s.Memory.Replace(ctx, old, sum, item)
}

func TestConflictReplans(t *testing.T) {
	m := dag.NewMemory()
	appendMsgs(m, 40, 30, []string{"user", "assistant"}, 0)
	st := &conflictStore{Memory: m}
	c, _ := dag.NewCompactor(dag.Config{FreshTailMessages: 2, LeafChunkTokens: 300, LeafTargetTokens: 20}, &fakeSum{mode: "ok"}, words{})
	res, err := c.Run(context.Background(), st, dag.Target{Budget: 800})
	if err != nil {
		t.Fatal(err)
	}
	if res.Conflicts != 1 || res.TokensAfter > res.Goal {
		t.Fatalf("conflicts %d, after %d goal %d", res.Conflicts, res.TokensAfter, res.Goal)
	}
	if err := dag.Check(context.Background(), m, m.MessageSeqs()); err != nil {
		t.Fatal(err)
	}
}

func TestTargetGoal(t *testing.T) {
	for _, tc := range []struct {
		tgt  dag.Target
		want int
	}{
		{dag.Target{Budget: 1000}, 750},
		{dag.Target{Budget: 1000, Mode: dag.ModeThreshold}, 750},
		{dag.Target{Budget: 1000, Mode: dag.ModeBudget}, 1000},
		{dag.Target{Budget: 1000, Mode: dag.ModeBudget, Reserved: 300}, 700},
	} {
		if got := tc.tgt.Goal(0.75); got != tc.want {
			t.Errorf("%+v: goal %d, want %d", tc.tgt, got, tc.want)
		}
	}
	c, _ := dag.NewCompactor(dag.Config{}, nil, words{})
	if _, err := c.Run(context.Background(), dag.NewMemory(), dag.Target{}); err == nil {
		t.Fatal("zero budget accepted")
	}
	if _, err := dag.NewCompactor(dag.Config{}, nil, nil); err == nil {
		t.Fatal("nil counter accepted")
	}
}

func TestStripThinking(t *testing.T) {
	for in, want := range map[string]string{
		"<think>a b</think>":                  "",
		"<think>a</think>\nReal summary.":     "Real summary.",
		"Before <THINKING>x</THINKING> after": "Before  after",
		"<think>never closed":                 "",
		"  plain  ":                           "plain",
	} {
		if got := dag.StripThinking(in); got != want {
			t.Errorf("StripThinking(%q) = %q, want %q", in, got, want)
		}
	}
}

var _ core.Summarizer = (*fakeSum)(nil)

func TestSumTokens(t *testing.T) {
	items := []dag.Item{{Tokens: 50}, {Tokens: 30}, {Tokens: 20}}
	for _, tc := range []struct {
		items []dag.Item
		want  int
	}{{nil, 0}, {items[:1], 50}, {items[1:], 50}, {items, 100}} {
		if got := dag.SumTokens(tc.items); got != tc.want {
			t.Errorf("SumTokens(%v) = %d, want %d", tc.items, got, tc.want)
		}
	}
}
