package summarize_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
	"github.com/lossless-engine/contextengine/internal/locomo"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/summarize"
)

// This file measures how much of a LoCoMo conversation's facts survive in
// its summaries alone: the share of QA evidence turns whose content words
// (lower-case words minus stop words) are at least 80% present in the
// summaries. It is a quick stand-in for lossless-bench's window suite
// (window.summary_covered_pct), run without the engine: the turns are
// rendered as the engine hands them to a summarizer ("user: text" /
// "assistant: text", speaker A as user, no speaker name, no date), cut into
// leaf chunks, summarized, then condensed four at a time until one summary
// is left, with the engine's default size rules (see sizesFor).
//
//	go test ./summarize -run TestLocomoSummaryCoverage -v
//
// The questions are used only to pick the evidence turns to look for; no
// constant of the summarizer is tuned on them.

// coverageStop are the stop words left out of content words.
var coverageStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because
	been before being below between both but by can could did do does doing down during each few for from
	further had has have having he her here hers herself him himself his how i if in into is it its itself
	just me more most my myself no nor not now of off on once only or other our ours ourselves out over own
	same she should so some such than that the their theirs them themselves then there these they this those
	through to too under until up very was we were what when where which while who whom why will with would
	you your yours yourself yourselves i'm it's that's you're i've don't can't i'll let's s t ll ve re d m`) {
		m[w] = true
	}
	return m
}()

// contentWords returns the distinct lower-case content words of s.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		w = strings.Trim(w, "'")
		if len(w) > 1 && !coverageStop[w] {
			out[w] = true
		}
	}
	return out
}

// covered reports whether at least 80% of turn's content words are in have;
// ok is false when the turn has no content words.
func covered(turn string, have map[string]bool) (yes, ok bool) {
	ws := contentWords(turn)
	if len(ws) == 0 {
		return false, false
	}
	n := 0
	for w := range ws {
		if have[w] {
			n++
		}
	}
	return float64(n) >= 0.8*float64(len(ws)), true
}

// sizes are the DAG's size rules for one budget.
type sizes struct {
	budget, chunk, leafTarget, condTarget int
}

// sizesFor mirrors the lossless engine's defaults at a budget: a goal of
// 0.75 × budget, leaf chunks of about the goal (what one compaction under
// pressure takes outside the fresh tail), leaf summaries of min(2400,
// goal/4) tokens and condensed ones of min(2000, goal/4) (dag.Compactor's
// target rule).
func sizesFor(budget int) sizes {
	goal := budget * 3 / 4
	return sizes{budget: budget, chunk: goal, leafTarget: min(2400, goal/4), condTarget: min(2000, goal/4)}
}

// summarizeFn is a summarizer under test: the extractive one, or a
// baseline.
type summarizeFn func(ctx context.Context, req core.SummarizeRequest) (string, error)

// hierarchy summarizes msgs (rendered messages) as the DAG would: leaf
// chunks of at most sz.chunk tokens, then condensed groups of four joined
// summaries until one is left. It returns the leaf summaries and the final
// condensed one.
func hierarchy(t testing.TB, tc core.TokenCounter, fn summarizeFn, msgs []string, sz sizes) (leaves []string, top string) {
	t.Helper()
	ctx := context.Background()
	var chunk []string
	tok := 0
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		text := strings.Join(chunk, "\n\n")
		target := min(sz.leafTarget, tc.CountText(text)/2)
		out, err := fn(ctx, core.SummarizeRequest{Text: text, TargetTokens: target, Kind: core.SummaryLeaf})
		if err != nil {
			t.Fatalf("leaf summary: %v", err)
		}
		leaves = append(leaves, out)
		chunk, tok = nil, 0
	}
	for _, m := range msgs {
		n := tc.CountText(m)
		if tok > 0 && tok+n > sz.chunk {
			flush()
		}
		chunk = append(chunk, m)
		tok += n
	}
	flush()
	level := leaves
	for len(level) > 1 {
		var next []string
		for i := 0; i < len(level); i += 4 {
			group := level[i:min(i+4, len(level))]
			if len(group) == 1 {
				next = append(next, group[0])
				continue
			}
			text := strings.Join(group, "\n\n")
			target := min(sz.condTarget, tc.CountText(text)/2)
			out, err := fn(ctx, core.SummarizeRequest{Text: text, TargetTokens: target, Kind: core.SummaryCondensed})
			if err != nil {
				t.Fatalf("condensed summary: %v", err)
			}
			next = append(next, out)
		}
		level = next
	}
	return leaves, level[0]
}

// coverageResult is the evidence coverage of one summarizer at one size.
type coverageResult struct {
	leafCovered, topCovered, evidence int
	leafTokens, topTokens             int
	// allLeaf and allTop count the turns of at least five content words
	// covered (of allTurns), the question-free figure the summarizer's
	// constants were tuned on.
	allLeaf, allTop, allTurns int
}

func (r coverageResult) leafPct() float64 { return 100 * float64(r.leafCovered) / float64(r.evidence) }
func (r coverageResult) topPct() float64  { return 100 * float64(r.topCovered) / float64(r.evidence) }

// locomoMessages renders a conversation's turns as the engine hands them
// to a summarizer, and indexes the turn bodies by dia id.
func locomoMessages(c *locomo.Conversation) (msgs []string, byID map[string]string) {
	byID = map[string]string{}
	for _, s := range c.Sessions {
		for _, turn := range s.Turns {
			role := "assistant"
			if turn.Speaker == c.SpeakerA {
				role = "user"
			}
			body := locomo.TurnBody(turn)
			msgs = append(msgs, role+": "+body)
			byID[turn.DiaID] = body
		}
	}
	return msgs, byID
}

// measureCoverage runs fn over every conversation at sz.
func measureCoverage(t testing.TB, tc core.TokenCounter, convs []locomo.Conversation, fn summarizeFn, sz sizes) coverageResult {
	t.Helper()
	var r coverageResult
	for i := range convs {
		c := &convs[i]
		msgs, byID := locomoMessages(c)
		leaves, top := hierarchy(t, tc, fn, msgs, sz)
		leafWords := contentWords(strings.Join(leaves, "\n"))
		topWords := contentWords(top)
		for _, l := range leaves {
			r.leafTokens += tc.CountText(l)
		}
		r.topTokens += tc.CountText(top)
		for _, body := range byID {
			if len(contentWords(body)) < 5 {
				continue // "Thanks!", "Wow, great!": covered by any summary
			}
			if yes, ok := covered(body, leafWords); ok {
				r.allTurns++
				if yes {
					r.allLeaf++
				}
				if yes, _ := covered(body, topWords); yes {
					r.allTop++
				}
			}
		}
		seen := map[string]bool{}
		for _, q := range c.QA {
			for _, id := range q.Evidence {
				body, ok := byID[id]
				if !ok || seen[id] {
					continue
				}
				seen[id] = true
				yes, ok := covered(body, leafWords)
				if !ok {
					continue
				}
				r.evidence++
				if yes {
					r.leafCovered++
				}
				if yes, _ := covered(body, topWords); yes {
					r.topCovered++
				}
			}
		}
	}
	return r
}

// firstSentences is the trivial baseline: the input cut to the target.
func firstSentences(tc core.TokenCounter) summarizeFn {
	return func(_ context.Context, req core.SummarizeRequest) (string, error) {
		return core.Truncate(tc, req.Text, req.TargetTokens), nil
	}
}

func loadLocomo(t testing.TB) []locomo.Conversation {
	t.Helper()
	path := testutil.SharedFile(t, "data/locomo/locomo-dev3.json")
	convs, err := locomo.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return convs
}

// TestLocomoSummaryCoverage asserts that the extractive summarizer keeps
// more of a chat than cutting each input to its target (the first
// sentences): more evidence turns in the leaf summaries, more of the turns
// of five or more content words in the condensed ones (summed over the
// budgets), and logs the figures per budget.
func TestLocomoSummaryCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: summarizes three LoCoMo conversations")
	}
	convs := loadLocomo(t)
	tc, err := core.NewTiktoken(core.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	ext := summarize.NewExtractive(tc)
	var base, got coverageResult // summed over the budgets
	for _, budget := range []int{2000, 4000, 8000} {
		sz := sizesFor(budget)
		b := measureCoverage(t, tc, convs, firstSentences(tc), sz)
		g := measureCoverage(t, tc, convs, ext.Summarize, sz)
		t.Logf("budget %d (chunk %d, leaf target %d, condensed target %d), %d evidence turns:", budget, sz.chunk, sz.leafTarget, sz.condTarget, g.evidence)
		for _, r := range []struct {
			name string
			c    coverageResult
		}{{"first sentences", b}, {"extractive", g}} {
			t.Logf("  %-15s: evidence: leaves %.1f%%, condensed %.1f%%; %d turns of 5+ words: leaves %.1f%%, condensed %.1f%%; tokens: leaves %d, condensed %d",
				r.name, r.c.leafPct(), r.c.topPct(), r.c.allTurns, pct(r.c.allLeaf, r.c.allTurns), pct(r.c.allTop, r.c.allTurns), r.c.leafTokens, r.c.topTokens)
		}
		base.leafCovered += b.leafCovered
		base.allTop += b.allTop
		got.leafCovered += g.leafCovered
		got.allTop += g.allTop
	}
	if got.leafCovered <= base.leafCovered {
		t.Errorf("leaf summaries cover %d evidence turns over the budgets, first sentences %d", got.leafCovered, base.leafCovered)
	}
	if got.allTop <= base.allTop {
		t.Errorf("condensed summaries cover %d turns of 5+ words over the budgets, first sentences %d", got.allTop, base.allTop)
	}
}

// piMonoMessages renders the real pi-mono transcripts' messages as the
// lossless engine hands them to a summarizer (lossless.MessagePlainText's
// form: "role: text", a tool result's name, tool calls after the text).
func piMonoMessages(t testing.TB) [][]string {
	t.Helper()
	var out [][]string
	for _, p := range testutil.PiMono(t) {
		tr, err := core.ReadTranscript(p)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for _, e := range tr.Entries {
			m, ok := e.ModelMessage()
			if !ok {
				continue
			}
			var b strings.Builder
			b.WriteString(m.Role())
			if m.Role() == core.RoleToolResult {
				fmt.Fprintf(&b, " (%s)", m.ToolName())
			}
			b.WriteString(": ")
			b.WriteString(m.Text())
			for _, c := range m.ToolCalls() {
				fmt.Fprintf(&b, "\n[tool call %s(%s)]", c.Name, c.Arguments)
			}
			msgs = append(msgs, b.String())
		}
		out = append(out, msgs)
	}
	return out
}

// codingFacts are what a coding session's summary must keep, found in the
// input: file paths and code names (ident), and the user's and the
// assistant's sentences that report an error or a decision.
type codingFacts struct {
	ids, idsKept             int
	errors, errorsKept       int
	decisions, decisionsKept int
}

var (
	errorWords    = []string{"error", "failed", "fails", "cannot", "exception", "undefined", "not found"}
	decisionWords = []string{"decided", "instead of", "let's", "we'll", "i'll use", "the plan is", "should use", "go with"}
)

// codingRetention measures what one summary keeps of its input.
func codingRetention(input, summary string, f *codingFacts) {
	seen := map[string]bool{}
	for _, id := range ident.All(input) {
		if (id.Kind != ident.Path && id.Kind != ident.Name) || seen[id.Value] {
			continue
		}
		seen[id.Value] = true
		f.ids++
		if strings.Contains(summary, id.Value) {
			f.idsKept++
		}
	}
	have := contentWords(summary)
	role := ""
	for _, line := range strings.Split(input, "\n") {
		if r, _, ok := strings.Cut(line, ": "); ok && (r == "user" || r == "assistant" || strings.HasPrefix(r, "toolResult")) {
			role = r
		}
		if role != "user" && role != "assistant" {
			continue // tool output: errors there are kept by identifier and keyword, not whole
		}
		l := strings.ToLower(line)
		if len(l) < 20 || len(l) > 400 {
			continue
		}
		for _, set := range []struct {
			words   []string
			n, kept *int
		}{{errorWords, &f.errors, &f.errorsKept}, {decisionWords, &f.decisions, &f.decisionsKept}} {
			for _, w := range set.words {
				if strings.Contains(l, w) {
					if yes, ok := covered(line, have); ok {
						*set.n++
						if yes {
							*set.kept++
						}
					}
					break
				}
			}
		}
	}
}

func pct(n, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }

// TestPiMonoSummaryRetention logs what leaf summaries of the real coding
// transcripts keep (paths and code names, the error and decision lines of
// the user and the assistant), chunked as the engine's defaults chunk them
// (20,000 tokens to 2,400), and asserts the extractive summaries keep more
// identifiers than the first sentences.
func TestPiMonoSummaryRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: summarizes the pi-mono transcripts")
	}
	convs := piMonoMessages(t)
	tc, err := core.NewTiktoken(core.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	ext := summarize.NewExtractive(tc)
	for _, size := range []struct{ chunk, target int }{{20000, 2400}, {6000, 750}} {
		var got, base codingFacts
		for _, msgs := range convs {
			var chunk []string
			tok := 0
			flush := func() {
				text := strings.Join(chunk, "\n\n")
				target := min(size.target, tc.CountText(text)/2)
				req := core.SummarizeRequest{Text: text, TargetTokens: target, Kind: core.SummaryLeaf}
				out, err := ext.Summarize(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				codingRetention(text, out, &got)
				codingRetention(text, core.Truncate(tc, text, target), &base)
				chunk, tok = nil, 0
			}
			for _, m := range msgs {
				n := tc.CountText(m)
				if tok > 0 && tok+n > size.chunk {
					flush()
				}
				chunk = append(chunk, m)
				tok += n
			}
			if len(chunk) > 0 {
				flush()
			}
		}
		for _, r := range []struct {
			name string
			f    codingFacts
		}{{"first sentences", base}, {"extractive", got}} {
			t.Logf("chunk %d → %d, %-15s: identifiers %.1f%% of %d, error lines %.1f%% of %d, decision lines %.1f%% of %d",
				size.chunk, size.target, r.name, pct(r.f.idsKept, r.f.ids), r.f.ids, pct(r.f.errorsKept, r.f.errors), r.f.errors,
				pct(r.f.decisionsKept, r.f.decisions), r.f.decisions)
		}
		if got.idsKept <= base.idsKept {
			t.Errorf("chunk %d: extractive keeps %d identifiers, first sentences %d", size.chunk, got.idsKept, base.idsKept)
		}
	}
}
