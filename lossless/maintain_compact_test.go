package lossless

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// TestMaintainCompact: with the host's model as summarizer (kind "host"),
// committed turns do not compact in the background (no model there);
// Maintain after the turn compacts with the host's model when the context
// is over contextThreshold of the turn's budget. Maintain before the model
// call (reason bootstrap) and Maintain without the host's model compact
// nothing.
func TestMaintainCompact(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, func(c *config.Config) {
		c.Summarizer = json.RawMessage(`{"kind":"host"}`)
		c.FreshTailMessages = 4
		c.LeafChunkTokens = 300
	})
	var calls atomic.Int64
	withModel := &core.RuntimeContext{Values: map[string]json.RawMessage{"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)},
		LLMComplete: func(_ context.Context, req core.LLMRequest) (core.LLMResponse, error) {
			calls.Add(1)
			return core.LLMResponse{Text: modelSummary(req, "HOST-SUMMARY")}, nil
		}}
	withoutModel := &core.RuntimeContext{Values: withModel.Values}
	commit := func(i int) {
		t.Helper()
		p := commitParams("sess-1", fmt.Sprintf("adv-%d", i), i)
		p.SessionKey, p.SessionTarget = hostKey, hostTarget
		if _, err := e.CommitTurn(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	commit(0)
	const budget = 1000
	if _, err := e.Assemble(ctx, core.AssembleParams{SessionID: "sess-1", SessionKey: hostKey, TokenBudget: budget}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 60; i++ {
		commit(i)
	}
	e.waitBackground()
	conv, err := e.ConversationFor(ctx, "", "sess-1", hostKey)
	if err != nil {
		t.Fatal(err)
	}
	summaries := func() (n int, text string, tokens int) {
		t.Helper()
		items, err := conv.Items(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.IsSummary() {
				n++
				s, err := conv.Summary(ctx, it.Ref.ID)
				if err != nil {
					t.Fatal(err)
				}
				text += s.Text
			}
		}
		return n, text, itemTokens(items)
	}
	n, _, tokens := summaries()
	if n != 0 || float64(tokens) <= e.cfg.ContextThreshold*budget {
		t.Fatalf("before maintain: %d summaries, %d tokens; want none (no background compaction with the host's model) and over the threshold", n, tokens)
	}
	maintain := func(reason string, rc *core.RuntimeContext) {
		t.Helper()
		if _, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
			SessionFile: hostKey, Reason: reason, RuntimeContext: rc}); err != nil {
			t.Fatal(err)
		}
	}
	maintain(core.MaintainReasonBootstrap, withModel) // before the user's model call: never
	maintain(core.MaintainReasonTurn, withoutModel)   // no model to summarize with
	if n, _, _ := summaries(); n != 0 || calls.Load() != 0 {
		t.Fatalf("maintain compacted (%d summaries, %d host calls) before the turn or without the host's model", n, calls.Load())
	}
	maintain(core.MaintainReasonTurn, withModel)
	n, text, tokens := summaries()
	if n == 0 || calls.Load() == 0 || !strings.Contains(text, "HOST-SUMMARY") {
		t.Fatalf("maintain after the turn: %d summaries, %d host calls, text %q", n, calls.Load(), text)
	}
	if float64(tokens) > budget {
		t.Fatalf("context %d tokens after maintain's compaction, budget %d", tokens, budget)
	}
}
