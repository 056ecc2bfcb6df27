package lossless

// The engine's explanations (package lossless/explain): an assembled
// context part by part and the recall ranking item by item, re-exported
// here as the methods and types they always were. The doors assemble and
// rank as the engine does, then hand explain what they got and a
// snapshot of the store; the session's name and the snippet are the
// engine's (SessionInfo.Name, grep's snippet).

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/explain"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// AssembleReport assembles p (AssembleWithDetails) and explains the
// result. Assemble changes nothing in the store.
func (e *Engine) AssembleReport(ctx context.Context, p core.AssembleParams) (explain.AssembleReport, error) {
	res, details, err := e.AssembleWithDetails(ctx, p)
	if err != nil {
		return explain.AssembleReport{}, err
	}
	rep := explain.Assemble(res, details, e.budgetFor(p.TokenBudget, p.RuntimeContext), e.tc)
	conv, err := e.ConversationFor(ctx, "", p.SessionID, p.SessionKey)
	if err != nil {
		return rep, nil // a pass-through: nothing is stored
	}
	if err := e.View(ctx, func(r store.Reader) error { return explain.TailSeqs(r, conv.id, rep.Messages) }); err != nil {
		return explain.AssembleReport{}, err
	}
	return rep, nil
}

// ExplainRecall ranks p.Prompt as Recall does, twice: without the
// relevance gate (the bare ranking, k items) and with it (what Recall
// returns), and explains each item: passed or not, the prompt's terms it
// matched, its session and a snippet. p's session (when stored) is the one
// recall runs for: what its last assembled window showed is left out, as
// in Assemble.
func (e *Engine) ExplainRecall(ctx context.Context, p core.AssembleParams, k int) (explain.RecallExplained, error) {
	out := explain.NewRecall(p.Prompt, e.cfg.Recall)
	ranked, err := e.RecallWith(ctx, p, recalled.Options{K: k, MinScore: -1})
	if err != nil {
		return out, err
	}
	gated, err := e.RecallWith(ctx, p, recalled.Options{K: k})
	if err != nil {
		return out, err
	}
	var src []explain.Source
	err = e.View(ctx, func(r store.Reader) error {
		var err error
		src, err = explain.Items(r, &out, ranked, gated)
		return err
	})
	for i, s := range src {
		x := &out.Items[i]
		if s.HaveRec {
			x.Session = inspect.SessionInfo{ID: s.Conv.String(), SessionIDs: s.Rec.SessionIDs, Key: s.Rec.Key}.Name()
		}
		if s.HaveText {
			x.Snippet = snippet(s.Text, s.At)
		}
	}
	return out, err
}
