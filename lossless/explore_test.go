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
			stored, err := conv.Message(ctx, m.Seq)
			if err != nil || !bytes.Equal(stored.Raw(), m.Message.Raw()) {
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
