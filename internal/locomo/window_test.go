package locomo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

func TestContentWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		// Stop words (the index's stop_en list, contractions included) go;
		// case folds; possessives and numbers stay; repeats count once.
		{"I'm going to the Beach with Mel's dog, 3 times! The dog.", []string{"going", "beach", "mel's", "dog", "3", "times"}},
		{"Don’t you know it's 2023-05-08?", []string{"know", "2023", "05", "08"}},
		{"Yes! Thanks, and you?", []string{"yes", "thanks"}},
		{"Is it? It is.", nil},
	} {
		if got := ContentWords(c.in); !slices.Equal(got, c.want) {
			t.Errorf("ContentWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWindowTextScoring(t *testing.T) {
	turn := "I painted a sunrise over the lake last week, Melanie."
	// content words: painted sunrise lake last week melanie (6)
	for _, c := range []struct {
		name     string
		window   []string
		verbatim bool
		covered  bool
	}{
		{"the turn itself", []string{"hello", turn}, true, true},
		{"white space differs", []string{"I painted a sunrise\n over  the lake last\tweek, Melanie."}, true, true},
		{"inside a summary line", []string{"- Caroline: " + turn + " (May 2023)"}, true, true},
		{"case differs: covered, not verbatim", []string{strings.ToUpper(turn)}, false, true},
		{"5 of 6 content words, no stop words", []string{"Melanie painted at the lake; a sunrise last"}, false, true},
		{"4 of 6 content words", []string{"Melanie painted at the lake; last"}, false, false},
		{"every stop word, no content word", []string{"I a over the"}, false, false},
		{"split across two messages", []string{"I painted a sunrise over the", "lake last week, Melanie."}, false, true},
		{"empty window", nil, false, false},
	} {
		w := NewWindowText(c.window...)
		if got := w.Verbatim(turn); got != c.verbatim {
			t.Errorf("%s: Verbatim = %v, want %v", c.name, got, c.verbatim)
		}
		if got := w.Covers(turn); got != c.covered {
			t.Errorf("%s: Covers = %v (coverage %.2f), want %v", c.name, got, w.Coverage(turn), c.covered)
		}
	}
	// A turn without content words is covered only when verbatim.
	short := "Did you? I did!"
	if ContentWords(short) != nil || !NewWindowText("ok: Did  you? I did! ok").Covers(short) || NewWindowText("did you i did").Covers(short) {
		t.Error("a turn of stop words must be covered exactly when verbatim")
	}
	if NewWindowText("anything").Verbatim("") {
		t.Error("an empty turn is never verbatim")
	}
}

// fakeWindowEngine stores what it is given and assembles a fixed window:
// a compaction summary and a tail message, whatever the prompt.
type fakeWindowEngine struct {
	ingested []core.Message
	window   []core.Message
}

func (f *fakeWindowEngine) Info() core.Info {
	return core.Info{ID: "fake", Name: "fake", OwnsCompaction: true}
}

func (f *fakeWindowEngine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	f.ingested = append(f.ingested, p.Message)
	return core.IngestResult{Ingested: true}, nil
}

func (f *fakeWindowEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return core.AssembleResult{Messages: f.window}, nil
}

func (f *fakeWindowEngine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	return core.CompactResult{OK: true}, nil
}

// TestRunWindowScoring runs the suite on a hand-made conversation through
// an engine whose window is known, and checks every figure against what
// the window holds: verbatim, covered, summary-covered, the questions
// with all their evidence, unknown evidence, the token split, and the
// per-question detail.
func TestRunWindowScoring(t *testing.T) {
	turns := []Turn{
		{Speaker: "Ann", DiaID: "D1:1", Text: "I adopted a beagle named Biscuit in March."},
		{Speaker: "Bob", DiaID: "D1:2", Text: "My sister Clara moved to Lisbon for her pottery studio."},
		{Speaker: "Ann", DiaID: "D1:3", Text: "We hiked Mount Tamalpais with Biscuit and two cousins."},
		{Speaker: "Bob", DiaID: "D1:4", Text: "Nice!"},
	}
	conv := Conversation{SampleID: "fake-1", SpeakerA: "Ann", SpeakerB: "Bob",
		Sessions: []Session{{Num: 1, DateTime: "1:56 pm on 8 May, 2023", Time: ParseDate("1:56 pm on 8 May, 2023"), Turns: turns}},
		QA: []QA{
			{Question: "What pets and family news?", Evidence: []string{"D1:1", "D1:2", "D1:3"}, Category: 1},
			{Question: "What is the dog's name?", Evidence: []string{"D1:1", "D9:9"}, Category: 4},
			{Question: "Only a bad id", Evidence: []string{"D7:1"}, Category: 4},
		}}
	// The window: D1:1 verbatim inside the summary, and a tail message.
	summary, err := core.NewMessage(map[string]any{"role": core.RoleCompactionSummary,
		"summary": "Earlier: " + turns[0].Text + " Later more.", "tokensBefore": 100})
	if err != nil {
		t.Fatal(err)
	}
	// D1:2's content words: sister clara moved lisbon pottery studio (6);
	// the tail holds 5 of them (not "pottery"): covered, not verbatim.
	// D1:3's: hiked mount tamalpais biscuit two cousins (6); the window
	// holds biscuit (summary), two, cousins: 3 of 6, not covered.
	tail := core.AssistantText("Clara, my sister, moved to Lisbon; her studio has two cousins.", 0)
	fe := &fakeWindowEngine{window: []core.Message{summary, tail}}
	tc := core.Chars4{}
	var detail bytes.Buffer
	rep, err := RunWindow(context.Background(), WindowConfig{
		Data: []Conversation{conv}, Budgets: []int{1000}, Counter: tc, Dir: t.TempDir(), Detail: &detail,
		Engines: []WindowEngine{{Name: "fake", Open: func(ctx context.Context, dir string, budget int) (core.Engine, error) {
			return fe, nil
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fe.ingested) != len(turns) {
		t.Errorf("the engine was given %d messages, want the %d turns", len(fe.ingested), len(turns))
	}
	for i, m := range fe.ingested {
		if m.Text() != turns[i].Text || m.Timestamp() != conv.Sessions[0].Time.UnixMilli()+int64(i)*1000 {
			t.Errorf("message %d = %q at %d, want the turn's text (no speaker) at its session's date", i, m.Text(), m.Timestamp())
		}
	}
	if rep.Questions != 2 || rep.EvidenceTurns != 4 || rep.EvidenceUnknown != 2 || rep.Turns != 4 {
		t.Fatalf("questions %d evidence %d unknown %d turns %d, want 2, 4, 2, 4", rep.Questions, rep.EvidenceTurns, rep.EvidenceUnknown, rep.Turns)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Engine != "fake" || rep.Rows[1].Engine != RecencyRow {
		t.Fatalf("rows %+v, want fake then recency", rep.Rows)
	}
	r := rep.Rows[0]
	// Evidence: q1 D1:1 (verbatim, covered, summary), D1:2 (covered),
	// D1:3 (none); q2 D1:1 (verbatim, covered, summary).
	if r.EvidenceVerbatimPct != 50 || r.EvidenceCoveredPct != 75 || r.SummaryCoveredPct != 50 || r.QuestionsAllEvidencePct != 50 {
		t.Errorf("fake row %s, want verbatim 50 covered 75 summary-covered 50 all-evidence 50", r)
	}
	sumTok, tailTok := float64(core.CountMessage(tc, summary)), float64(core.CountMessage(tc, tail))
	if r.Tokens.Summaries != sumTok || r.Tokens.Tail != tailTok || r.Tokens.Recall != 0 || r.Tokens.Total != sumTok+tailTok {
		t.Errorf("tokens %+v, want summaries %.0f tail %.0f", r.Tokens, sumTok, tailTok)
	}
	// The whole conversation fits 1000 tokens: the recency baseline holds
	// every turn verbatim, and no summary.
	if rc := rep.Rows[1]; rc.EvidenceVerbatimPct != 100 || rc.EvidenceCoveredPct != 100 || rc.SummaryCoveredPct != 0 || rc.QuestionsAllEvidencePct != 100 {
		t.Errorf("recency row %s, want 100/100/100 and no summary", rc)
	}
	var lines []WindowDetail
	sc := bufio.NewScanner(&detail)
	for sc.Scan() {
		var d WindowDetail
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, d)
	}
	if len(lines) != 4 {
		t.Fatalf("%d detail lines, want 4 (2 questions × 2 rows)", len(lines))
	}
	d := lines[0]
	if d.Engine != "fake" || d.Question != conv.QA[0].Question || !slices.Equal(d.Evidence, []string{"D1:1", "D1:2", "D1:3"}) ||
		!slices.Equal(d.Verbatim, []string{"D1:1"}) || !slices.Equal(d.Covered, []string{"D1:1", "D1:2"}) ||
		!slices.Equal(d.SummaryCovered, []string{"D1:1"}) || d.Tokens.Summaries != sumTok {
		t.Errorf("detail %+v", d)
	}
	if len(d.Coverage) != 3 || d.Coverage[0] != 1 || d.Coverage[2] != 0.5 {
		t.Errorf("coverage %v, want 1, 5/6, 0.5", d.Coverage)
	}
}

func TestRunWindowErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := RunWindow(ctx, WindowConfig{}); err == nil || !strings.Contains(err.Error(), "no LoCoMo file") {
		t.Errorf("no file: %v", err)
	}
	if _, err := RunWindow(ctx, WindowConfig{Path: "/nonexistent/locomo.json"}); err == nil || !strings.Contains(err.Error(), "/nonexistent/locomo.json") {
		t.Errorf("missing file: %v", err)
	}
	conv := Conversation{SampleID: "x", SpeakerA: "A", Sessions: []Session{{Num: 1, Turns: []Turn{{Speaker: "A", DiaID: "D1:1", Text: "hi"}}}}}
	if _, err := RunWindow(ctx, WindowConfig{Data: []Conversation{conv}}); err == nil || !strings.Contains(err.Error(), "no question") {
		t.Errorf("no question: %v", err)
	}
	conv.QA = []QA{{Question: "q", Evidence: []string{"D1:1"}}}
	if _, err := RunWindow(ctx, WindowConfig{Data: []Conversation{conv}, Budgets: []int{0}}); err == nil || !strings.Contains(err.Error(), "budget 0") {
		t.Errorf("bad budget: %v", err)
	}
}

// locomoSlice returns the first sessions of conv-26 of locomo-dev3.json
// and the questions whose evidence lies in them.
func locomoSlice(t *testing.T, sessions int) Conversation {
	t.Helper()
	convs, err := Load(testutil.SharedFile(t, "data/locomo/locomo-dev3.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := convs[0]
	c.Sessions = c.Sessions[:sessions]
	ids := map[string]bool{}
	for _, s := range c.Sessions {
		for _, tu := range s.Turns {
			ids[tu.DiaID] = true
		}
	}
	var qs []QA
	for _, q := range c.QA {
		in := len(q.Evidence) > 0
		for _, e := range q.Evidence {
			in = in && ids[e]
		}
		if in {
			qs = append(qs, q)
		}
	}
	c.QA = qs
	return c
}

// TestWindowLoCoMoSlice replays the first sessions of a LoCoMo
// conversation through the real engines and checks what must hold
// whatever the engines' quality: figures within 0..100, verbatim and
// summary-covered never above covered; at a budget that holds the whole
// slice the recency baseline has every evidence turn verbatim, and at
// twice that (under every engine's compaction threshold) every engine
// does; more budget never gives the recency baseline fewer verbatim
// turns; the lossless windows fit the budget and its recall-off row has
// no recall tokens; and the same run twice gives the same figures, but
// for what a near tie in recall's ranking moves (see below).
//
// Whether the lossless engine beats recency is measured, not asserted: on
// a slice this short recency's tail holds most of it, and at the smaller
// budgets it does better (see docs/BENCHMARKS.md's window figures for the
// whole conversations).
func TestWindowLoCoMoSlice(t *testing.T) {
	if testing.Short() {
		t.Skip("replays LoCoMo sessions through the engines")
	}
	conv := locomoSlice(t, 5)
	tc := core.DefaultCounter()
	whole := 0
	for si := range conv.Sessions {
		for _, d := range sessionDocs(&conv, &conv.Sessions[si], true) {
			whole += core.CountMessage(tc, docMessage(d))
		}
	}
	if len(conv.QA) == 0 {
		t.Fatal("no question with its evidence in the slice")
	}
	budgets := []int{whole / 4, whole / 2, whole + 64, 2 * whole}
	cfg := WindowConfig{Data: []Conversation{conv}, Budgets: budgets, Counter: tc,
		Engines: []WindowEngine{LosslessWindowEngine(""), LegacyWindowEngine(core.CounterChars4)}}
	t0 := time.Now()
	cfg.Dir = t.TempDir()
	rep, err := RunWindow(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d turns (%d tokens), %d questions, budgets %v, in %s", rep.Turns, whole, rep.Questions, budgets, time.Since(t0).Round(time.Millisecond))
	rows := map[string]map[int]WindowRow{}
	for _, r := range rep.Rows {
		t.Log(r)
		if rows[r.Engine] == nil {
			rows[r.Engine] = map[int]WindowRow{}
		}
		rows[r.Engine][r.Budget] = r
		for _, v := range []float64{r.EvidenceVerbatimPct, r.EvidenceCoveredPct, r.QuestionsAllEvidencePct, r.SummaryCoveredPct} {
			if v < 0 || v > 100 {
				t.Errorf("%s: a figure outside 0..100", r)
			}
		}
		if r.EvidenceVerbatimPct > r.EvidenceCoveredPct || r.SummaryCoveredPct > r.EvidenceCoveredPct {
			t.Errorf("%s: verbatim or summary-covered above covered", r)
		}
		if (r.Engine == LosslessRow || r.Engine == LosslessNoRecallRow || r.Engine == RecencyRow) && (r.MaxTokens > r.Budget || r.OverBudget > 0) {
			t.Errorf("%s: a window of %d tokens over the budget", r, r.MaxTokens)
		}
	}
	for _, name := range []string{LosslessRow, LosslessNoRecallRow, LegacyRow, RecencyRow} {
		if len(rows[name]) != len(budgets) {
			t.Fatalf("engine %s has %d rows, want one per budget", name, len(rows[name]))
		}
		if r := rows[name][2*whole]; r.EvidenceVerbatimPct != 100 || r.QuestionsAllEvidencePct != 100 || r.FailedTurns != 0 {
			t.Errorf("%s at twice the slice: %s (%d failed turns), want every evidence turn verbatim", name, r, r.FailedTurns)
		}
	}
	rec := rows[RecencyRow]
	if r := rec[whole+64]; r.EvidenceVerbatimPct != 100 || r.QuestionsAllEvidencePct != 100 || r.Tokens.Total != float64(whole) {
		t.Errorf("recency at a budget holding the whole slice: %s, want 100%% verbatim over %d tokens", r, whole)
	}
	for i := 1; i < len(budgets); i++ {
		if rec[budgets[i]].EvidenceVerbatimPct < rec[budgets[i-1]].EvidenceVerbatimPct {
			t.Errorf("recency: %s has fewer verbatim turns than %s", rec[budgets[i]], rec[budgets[i-1]])
		}
	}
	for _, b := range budgets {
		if r := rows[LosslessNoRecallRow][b]; r.Tokens.Recall != 0 {
			t.Errorf("%s: recall tokens with recall off", r)
		}
	}
	// Repeatable: the same run again gives the same figures, within what
	// a near tie in recall's ranking moves. The engine's replay does not
	// depend on timing (it waits for the background work after every
	// turn), but two runs of this test rank near-tied recall candidates of
	// a few questions differently (a block of 498 tokens, then 487, for
	// the first question at the smallest budget: one turn swapped for
	// another), on a loaded machine and on an idle one alike, with
	// GOMAXPROCS=1 too: 9 of 10 runs differed so on 2026-12-07, every time
	// in the token means only (by at most 0.5 token), never in an evidence
	// figure of this slice (on the whole file, two runs of the window suite
	// differed at 2K by 0.8 point of evidence covered: docs/TUNING.md). So
	// the evidence figures may move by one evidence turn, the token means
	// by 2%, and nothing else may differ.
	cfg.Dir = t.TempDir()
	again, err := RunWindow(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Rows) != len(rep.Rows) {
		t.Fatalf("run 2 has %d rows, run 1 %d", len(again.Rows), len(rep.Rows))
	}
	oneTurn := 100 / float64(rep.EvidenceTurns)
	for i := range rep.Rows {
		a, b := rep.Rows[i], again.Rows[i]
		if d := windowRowsDiffer(a, b, oneTurn, 0.02); d != "" {
			t.Errorf("run 2 differs from run 1 beyond a near tie (%s):\n%s\n%s", d, a, b)
		}
	}
}

// windowRowsDiffer says how two rows of the same run's configuration
// differ beyond pct percentage points in an evidence figure or a share
// tokShare of a mean token figure ("" when they do not).
func windowRowsDiffer(a, b WindowRow, pct, tokShare float64) string {
	if a.Budget != b.Budget || a.Engine != b.Engine || a.FailedTurns != b.FailedTurns || a.OverBudget != b.OverBudget {
		return "budget, engine, failed turns or windows over the budget"
	}
	for _, f := range []struct {
		name string
		x, y float64
	}{{"verbatim", a.EvidenceVerbatimPct, b.EvidenceVerbatimPct}, {"covered", a.EvidenceCoveredPct, b.EvidenceCoveredPct},
		{"all evidence", a.QuestionsAllEvidencePct, b.QuestionsAllEvidencePct}, {"summary-covered", a.SummaryCoveredPct, b.SummaryCoveredPct}} {
		if math.Abs(f.x-f.y) > pct+1e-9 {
			return f.name
		}
	}
	for _, f := range []struct {
		name string
		x, y float64
	}{{"tail tokens", a.Tokens.Tail, b.Tokens.Tail}, {"summary tokens", a.Tokens.Summaries, b.Tokens.Summaries},
		{"recall tokens", a.Tokens.Recall, b.Tokens.Recall}, {"system tokens", a.Tokens.System, b.Tokens.System},
		{"total tokens", a.Tokens.Total, b.Tokens.Total}} {
		if math.Abs(f.x-f.y) > tokShare*max(f.x, f.y)+0.1 {
			return f.name
		}
	}
	return ""
}

// TestWindowRowsDiffer: the tolerance of TestWindowLoCoMoSlice's repeat
// lets a near tie through and nothing more.
func TestWindowRowsDiffer(t *testing.T) {
	a := WindowRow{Budget: 783, Engine: LosslessRow, EvidenceVerbatimPct: 75, EvidenceCoveredPct: 75, QuestionsAllEvidencePct: 76.4,
		Tokens: WindowTokens{Tail: 190.2, Summaries: 168.4, Recall: 383.7, Total: 742.3}}
	near := a
	near.Tokens.Recall, near.Tokens.Total = 383.5, 742.1
	if d := windowRowsDiffer(a, near, 100.0/60, 0.02); d != "" {
		t.Errorf("a near tie (0.2 token of recall) counted as a difference: %s", d)
	}
	for name, edit := range map[string]func(*WindowRow){
		"verbatim":      func(r *WindowRow) { r.EvidenceVerbatimPct -= 5 },
		"recall tokens": func(r *WindowRow) { r.Tokens.Recall -= 40 },
		"engine":        func(r *WindowRow) { r.Engine = LosslessNoRecallRow },
		"failed turns":  func(r *WindowRow) { r.FailedTurns++ },
	} {
		b := a
		edit(&b)
		if windowRowsDiffer(a, b, 100.0/60, 0.02) == "" {
			t.Errorf("%s: a real difference let through", name)
		}
	}
}
