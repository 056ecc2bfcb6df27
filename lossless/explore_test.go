package lossless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
)

func TestAssembleReport(t *testing.T) {
	e := toolFixture(t)
	ctx := context.Background()
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	p := core.AssembleParams{SessionID: "s1", SessionKey: "agent:main:cli", Messages: []core.Message{}, TokenBudget: 3000,
		Prompt: "where did we see the zebra, elsewhere?", AvailableTools: []string{ToolGrep}}
	rep, err := e.AssembleReport(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// The same call through AssembleWithDetails gives the same result.
	res, details, err := e.AssembleWithDetails(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result.EstimatedTokens != res.EstimatedTokens || len(rep.Messages) != len(res.Messages) || rep.Details != details {
		t.Fatalf("report %d tokens / %d messages / %+v; assemble %d / %d / %+v", rep.Result.EstimatedTokens, len(rep.Messages),
			rep.Details, res.EstimatedTokens, len(res.Messages), details)
	}
	if rep.Budget != 3000 || rep.SystemPromptAdditionTokens == 0 || rep.SystemPromptAdditionTokens != e.tc.CountText(res.SystemPromptAddition) {
		t.Fatalf("budget %d, addition %d tokens", rep.Budget, rep.SystemPromptAdditionTokens)
	}
	parts := map[string]ContextPart{}
	for _, pt := range rep.Parts {
		parts[pt.Part] = pt
	}
	if len(rep.Parts) != 4 || parts[PartSystem].Count != 1 || parts[PartSystem].Tokens != rep.SystemPromptAdditionTokens {
		t.Fatalf("parts %+v", rep.Parts)
	}
	if parts[PartSummaries].Count == 0 || parts[PartTail].Count == 0 || parts[PartRecall].Count != 1 || details.Recall.Status != RecallInjected {
		t.Fatalf("parts %+v, recall %+v", rep.Parts, details.Recall)
	}
	conv := mustConv(t, e, "s1")
	sum := 0
	for i, m := range rep.Messages {
		if m.Tokens != core.CountMessage(e.tc, res.Messages[i]) {
			t.Fatalf("message %d: %d tokens", i, m.Tokens)
		}
		sum += m.Tokens
		switch m.Part {
		case PartSummaries:
			if _, err := conv.Summary(ctx, m.SummaryID); err != nil {
				t.Fatalf("message %d renders summary %q: %v", i, m.SummaryID, err)
			}
		case PartTail:
			raw, err := conv.RawMessage(ctx, m.Seq)
			if err != nil || !bytes.Equal(raw, m.Message.Raw()) {
				t.Fatalf("tail message %d (seq %d) is not the stored one: %v", i, m.Seq, err)
			}
		case PartRecall:
			if i != len(rep.Messages)-1 || !strings.Contains(m.Message.Text(), "zebra") {
				t.Fatalf("recall message %d of %d: %q", i, len(rep.Messages), m.Message.Text())
			}
		}
	}
	if got := parts[PartSummaries].Tokens + parts[PartTail].Tokens + parts[PartRecall].Tokens; got != sum {
		t.Fatalf("parts hold %d tokens, messages %d", got, sum)
	}
	// A session never stored: a pass-through, no sequence numbers.
	rep, err = e.AssembleReport(ctx, core.AssembleParams{SessionID: "nowhere", Messages: []core.Message{core.UserText("hi", 1)}})
	if err != nil || len(rep.Messages) != 1 || rep.Messages[0].Seq != 0 || rep.Messages[0].Part != PartTail {
		t.Fatalf("pass-through: %+v %v", rep.Messages, err)
	}
}

func TestExploreDAG(t *testing.T) {
	e := toolFixture(t)
	ctx := context.Background()
	conv := mustConv(t, e, "s1")
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, it := range items {
		if it.IsSummary() {
			roots = append(roots, it.Ref.ID)
		}
	}
	page, err := conv.ContextSummaries(ctx, 0, 0)
	if err != nil || page.Total != len(roots) || len(page.Summaries) != len(roots) || page.Partial {
		t.Fatalf("ContextSummaries: %+v %v (roots %v)", page, err, roots)
	}
	for i, s := range page.Summaries {
		if s.ID != roots[i] || s.Text == "" {
			t.Fatalf("summary %d: %s, want %s", i, s.ID, roots[i])
		}
	}
	if len(roots) > 1 {
		p2, err := conv.ContextSummaries(ctx, 1, 1)
		if err != nil || p2.Total != len(roots) || len(p2.Summaries) != 1 || p2.Summaries[0].ID != roots[1] {
			t.Fatalf("second page: %+v %v", p2, err)
		}
	}
	// Walk the DAG down from every root: children are the sources, in
	// order; leaves reach raw messages whose bytes are the stored ones.
	var leaves int
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		cp, err := conv.SummaryChildren(ctx, id, 0, MaxPageLimit)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Summary.ID != id || cp.Summary.Depth != depth || cp.Total != len(cp.Summary.Sources) || len(cp.Children) != cp.Total {
			t.Fatalf("summary %s: %+v", id, cp)
		}
		if depth == 0 {
			leaves++
		}
		for i, ch := range cp.Children {
			src := cp.Summary.Sources[i]
			switch ch.Kind {
			case ChildSummary:
				if src.Kind != dag.RefSummary || ch.Summary.ID != src.ID || ch.Summary.Text != "" {
					t.Fatalf("child %d of %s: %+v, source %+v", i, id, ch, src)
				}
				walk(ch.Summary.ID, depth-1)
			case ChildMessage:
				m, err := conv.Message(ctx, ch.Seq)
				if err != nil || src.Seq != ch.Seq || ch.Role != m.Role() || ch.Preview == "" {
					t.Fatalf("child %d of %s: %+v (%v)", i, id, ch, err)
				}
			default:
				t.Fatalf("child kind %q", ch.Kind)
			}
		}
	}
	for _, s := range page.Summaries {
		walk(s.ID, s.Depth)
	}
	d0, err := conv.SummariesAtDepth(ctx, 0, 0, 0)
	if err != nil || d0.Total < leaves || d0.Total == 0 {
		t.Fatalf("depth 0: %d summaries, %d leaves reached: %v", d0.Total, leaves, err)
	}
	for _, s := range d0.Summaries {
		if s.Depth != 0 {
			t.Fatalf("depth 0 lists %s of depth %d", s.ID, s.Depth)
		}
	}
	if p, err := conv.SummariesAtDepth(ctx, 0, d0.Total, 5); err != nil || len(p.Summaries) != 0 || p.Total != d0.Total {
		t.Fatalf("past the end: %+v %v", p, err)
	}
	if _, err := conv.SummariesAtDepth(ctx, -1, 0, 0); !errors.Is(err, ErrBadToolArgs) {
		t.Fatalf("negative depth: %v", err)
	}
	if _, err := conv.SummaryChildren(ctx, "sum_nope", 0, 0); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("missing summary: %v", err)
	}
	// A leaf's children paged.
	if d0.Total > 0 {
		leaf := d0.Summaries[0]
		cp, err := conv.SummaryChildren(ctx, leaf.ID, 1, 2)
		if err != nil || cp.Total != len(leaf.Sources) || len(cp.Children) != min(2, len(leaf.Sources)-1) || cp.Children[0].Seq != leaf.Sources[1].Seq {
			t.Fatalf("leaf page: %+v %v", cp, err)
		}
	}
}

// TestRawMessage: every message's bytes are the export's, the odd ones
// (spacing, HTML characters, unknown fields) included.
func TestRawMessage(t *testing.T) {
	e := toolFixture(t)
	ctx := context.Background()
	conv := mustConv(t, e, "s1")
	n := 0
	err := e.Messages(ctx, "", "s1", func(seq uint64, m core.Message) error {
		raw, err := conv.RawMessage(ctx, seq)
		if err != nil {
			return err
		}
		if !bytes.Equal(raw, m.Raw()) {
			return fmt.Errorf("message %d: %q, export %q", seq, raw, m.Raw())
		}
		n++
		return nil
	})
	if err != nil || n != 81 {
		t.Fatalf("%d messages: %v", n, err)
	}
	raw, _ := conv.RawMessage(ctx, 6)
	if !bytes.Contains(raw, []byte(`"odd <b>bytes</b> & spacing", "timestamp"`)) {
		t.Fatalf("message 6 is not the odd one byte for byte: %s", raw)
	}
	if _, err := conv.RawMessage(ctx, 999); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("missing message: %v", err)
	}
}

func TestExplainRecall(t *testing.T) {
	e := toolFixture(t)
	ctx := context.Background()
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	p := core.AssembleParams{SessionID: "s2", SessionKey: "agent:main:cli", Prompt: "a zebra near the build server"}
	x, err := e.ExplainRecall(ctx, p, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(x.Terms, "zebra") || x.Threshold != DefaultRecallMinScore {
		t.Fatalf("terms %v, threshold %v", x.Terms, x.Threshold)
	}
	gated, err := e.Recall(ctx, p, 8)
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	var zebra *RecallExplanation
	for i := range x.Items {
		it := &x.Items[i]
		if it.Passed {
			passed++
		}
		if it.Agent != "main" || it.Session == "" {
			t.Fatalf("item %s: agent %q session %q", it.ID, it.Agent, it.Session)
		}
		for _, term := range it.MatchedTerms {
			if !slices.Contains(x.Terms, term) {
				t.Fatalf("item %s matched %q, not a prompt term", it.ID, term)
			}
		}
		if it.Session == "s1" && it.Seq != 0 && slices.Contains(it.MatchedTerms, "zebra") {
			zebra = it
		}
	}
	if passed != len(gated) {
		t.Fatalf("%d items passed, Recall returns %d", passed, len(gated))
	}
	if zebra == nil || !slices.Contains(zebra.MatchedTerms, "build") || !strings.Contains(zebra.Snippet, "zebra near the build server") {
		t.Fatalf("the zebra message of s1 is not explained: %+v", x.Items)
	}
	// A prompt of words the history lacks matches nothing.
	x, err = e.ExplainRecall(ctx, core.AssembleParams{SessionID: "s2", SessionKey: "agent:main:cli", Prompt: "quasar"}, 8)
	if err != nil || len(x.Items) != 0 {
		t.Fatalf("quasar: %+v %v", x, err)
	}
}

// TestGrepPage: paging through a search with a small scan bound finds
// exactly what Grep finds, each hit once.
func TestGrepPage(t *testing.T) {
	e := toolFixture(t)
	ctx := context.Background()
	key := func(h GrepHit) string { return fmt.Sprintf("%s/%d/%s", h.Conversation, h.Seq, h.SummaryID) }
	for _, tc := range []struct {
		name string
		p    GrepParams
	}{
		{"agent", GrepParams{SessionID: "s1", Query: "zebra", Scope: ScopeAgent}},
		{"conversation", GrepParams{SessionID: "s1", Query: "routine", Limit: 200}},
		{"summaries", GrepParams{SessionID: "s1", Query: "summarymark", Kind: "summary", Scope: ScopeAgent}},
		{"regex", GrepParams{SessionID: "s1", Query: `message \d+ about`, Regex: true, Limit: 200, Scope: ScopeAgent}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all, err := e.Grep(ctx, tc.p)
			if err != nil || len(all) == 0 {
				t.Fatalf("Grep: %d %v", len(all), err)
			}
			want := map[string]bool{}
			for _, h := range all {
				want[key(h)] = true
			}
			// Bounded by the scan (7 items a call) and by the time (a
			// nanosecond: one item a call).
			for _, bound := range []GrepPageParams{{MaxScan: 7}, {MaxTime: time.Nanosecond}} {
				got := map[string]bool{}
				pp := bound
				pp.GrepParams = tc.p
				pp.Limit = 3
				maxRead := 7
				if bound.MaxTime > 0 {
					maxRead = 1
				}
				for pages := 0; ; pages++ {
					if pages > 500 {
						t.Fatal("no end")
					}
					res, err := e.GrepPage(ctx, pp)
					if err != nil {
						t.Fatal(err)
					}
					if res.Scanned > maxRead || len(res.Hits) > 3 || (res.Next != "" && res.Scanned == 0) {
						t.Fatalf("page %d: %d scanned, %d hits, next %q", pages, res.Scanned, len(res.Hits), res.Next)
					}
					for _, h := range res.Hits {
						if got[key(h)] {
							t.Fatalf("hit %s twice", key(h))
						}
						got[key(h)] = true
					}
					if res.Next == "" {
						break
					}
					pp.Cursor = res.Next
				}
				if len(got) != len(want) {
					t.Fatalf("%+v: pages found %d hits, Grep %d", bound, len(got), len(want))
				}
				for k := range want {
					if !got[k] {
						t.Fatalf("pages missed %s", k)
					}
				}
			}
		})
	}
	// Newest first within a conversation.
	res, err := e.GrepPage(ctx, GrepPageParams{GrepParams: GrepParams{SessionID: "s1", Query: "routine", Kind: "message", Limit: 5}})
	if err != nil || len(res.Hits) != 5 || res.Next == "" {
		t.Fatalf("first page: %+v %v", res, err)
	}
	for i := 1; i < len(res.Hits); i++ {
		if res.Hits[i].Seq >= res.Hits[i-1].Seq {
			t.Fatalf("not newest first: %d after %d", res.Hits[i].Seq, res.Hits[i-1].Seq)
		}
	}
	for _, bad := range []string{"x", "0011223344556677:q", "0011223344556677:m0", "nothex:m3"} {
		if _, err := e.GrepPage(ctx, GrepPageParams{GrepParams: GrepParams{SessionID: "s1", Query: "a"}, Cursor: bad}); !errors.Is(err, ErrBadToolArgs) {
			t.Fatalf("cursor %q: %v", bad, err)
		}
	}
	if _, err := e.GrepPage(ctx, GrepPageParams{GrepParams: GrepParams{SessionID: "s1", Query: "a"}, Cursor: "0011223344556677:m3"}); !errors.Is(err, ErrBadToolArgs) {
		t.Fatalf("cursor of another conversation: %v", err)
	}
}

// TestGrepEscapedText: a message's raw JSON may spell its text with
// escapes (\u003c for <, \u00e9 for é, \" and \/): words with such
// characters still match, as the text holds them, and a word missing
// from the raw bytes is not searched for in the parsed text.
func TestGrepEscapedText(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	var msgs []core.Message
	for _, raw := range []string{
		`{"role":"user","content":"the \u003cb\u003eBOLD\u003c/b\u003e tag and caf\u00e9 \"quoted\" a\/b","timestamp":1}`,
		`{"role":"assistant","content":[{"type":"text","text":"plain words only"}],"timestamp":2}`,
	} {
		m, err := core.ParseMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "esc", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    string
		want int
	}{
		{"<b>bold</b>", 1}, {"café", 1}, {`"quoted"`, 1}, {"a/b", 1}, {"bold tag", 1},
		{"plain WORDS", 1}, {"plain bold", 0}, {"user:", 1}, {"assistant: plain", 1},
	} {
		hits, err := e.Grep(ctx, GrepParams{SessionID: "esc", Query: tc.q})
		if err != nil || len(hits) != tc.want {
			t.Errorf("grep %q: %d hits, want %d (%v)", tc.q, len(hits), tc.want, err)
		}
		page, err := e.GrepPage(ctx, GrepPageParams{GrepParams: GrepParams{SessionID: "esc", Query: tc.q}})
		if err != nil || len(page.Hits) != tc.want {
			t.Errorf("grep page %q: %d hits, want %d (%v)", tc.q, len(page.Hits), tc.want, err)
		}
	}
}
