package lossless

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/explain"
	"github.com/lossless-engine/contextengine/lossless/recalled"
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
	parts := map[string]explain.ContextPart{}
	for _, pt := range rep.Parts {
		parts[pt.Part] = pt
	}
	if len(rep.Parts) != 4 || parts[explain.PartSystem].Count != 1 || parts[explain.PartSystem].Tokens != rep.SystemPromptAdditionTokens {
		t.Fatalf("parts %+v", rep.Parts)
	}
	if parts[explain.PartSummaries].Count == 0 || parts[explain.PartTail].Count == 0 || parts[explain.PartRecall].Count != 1 || details.Recall.Status != recalled.Injected {
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
		case explain.PartSummaries:
			if _, err := conv.Summary(ctx, m.SummaryID); err != nil {
				t.Fatalf("message %d renders summary %q: %v", i, m.SummaryID, err)
			}
		case explain.PartTail:
			stored, err := conv.Message(ctx, m.Seq)
			if err != nil || !bytes.Equal(stored.Raw(), m.Message.Raw()) {
				t.Fatalf("tail message %d (seq %d) is not the stored one: %v", i, m.Seq, err)
			}
		case explain.PartRecall:
			if i != len(rep.Messages)-1 || !strings.Contains(m.Message.Text(), "zebra") {
				t.Fatalf("recall message %d of %d: %q", i, len(rep.Messages), m.Message.Text())
			}
		}
	}
	if got := parts[explain.PartSummaries].Tokens + parts[explain.PartTail].Tokens + parts[explain.PartRecall].Tokens; got != sum {
		t.Fatalf("parts hold %d tokens, messages %d", got, sum)
	}
	// A session never stored: a pass-through, no sequence numbers.
	rep, err = e.AssembleReport(ctx, core.AssembleParams{SessionID: "nowhere", Messages: []core.Message{core.UserText("hi", 1)}})
	if err != nil || len(rep.Messages) != 1 || rep.Messages[0].Seq != 0 || rep.Messages[0].Part != explain.PartTail {
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
	if !slices.Contains(x.Terms, "zebra") || x.Threshold != config.DefaultRecallMinScore {
		t.Fatalf("terms %v, threshold %v", x.Terms, x.Threshold)
	}
	gated, err := e.Recall(ctx, p, 8)
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	var zebra *explain.RecallExplanation
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
