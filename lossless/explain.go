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
	"github.com/lossless-engine/contextengine/store"
)

// The parts of an assembled context (ContextMessage.Part, ContextPart).
const (
	// PartSummaries: summaries of older history (RenderSummary).
	PartSummaries = explain.PartSummaries
	// PartTail: the stored messages of the window, newest last.
	PartTail = explain.PartTail
	// PartRecall: the recall block (IsRecallMessage).
	PartRecall = explain.PartRecall
	// PartSystem: the system prompt addition.
	PartSystem = explain.PartSystem
)

// ContextMessage is one message of an assembled context with its token
// count and the part it belongs to (explain.ContextMessage).
type ContextMessage = explain.ContextMessage

// ContextPart is one part's total in an AssembleReport
// (explain.ContextPart).
type ContextPart = explain.ContextPart

// AssembleReport is an assembled context explained
// (explain.AssembleReport): the result and how recall went
// (AssembleWithDetails), each message with its tokens and part, and the
// totals per part. `lossless assemble --json` and the explorer's context
// view print it, so their numbers cannot differ.
type AssembleReport = explain.AssembleReport

// RecallExplanation is one item of the recall ranking with why it ranks
// where it does (explain.RecallExplanation).
type RecallExplanation = explain.RecallExplanation

// RecallExplained is what ExplainRecall found (explain.RecallExplained).
type RecallExplained = explain.RecallExplained

// AssembleReport assembles p (AssembleWithDetails) and explains the
// result. Assemble changes nothing in the store.
func (e *Engine) AssembleReport(ctx context.Context, p core.AssembleParams) (AssembleReport, error) {
	res, details, err := e.AssembleWithDetails(ctx, p)
	if err != nil {
		return AssembleReport{}, err
	}
	rep := explain.Assemble(res, details, e.budgetFor(p.TokenBudget, p.RuntimeContext), e.tc)
	conv, err := e.ConversationFor(ctx, "", p.SessionID, p.SessionKey)
	if err != nil {
		return rep, nil // a pass-through: nothing is stored
	}
	if err := e.View(ctx, func(r store.Reader) error { return explain.TailSeqs(r, conv.id, rep.Messages) }); err != nil {
		return AssembleReport{}, err
	}
	return rep, nil
}

// ExplainRecall ranks p.Prompt as Recall does, twice: without the
// relevance gate (the bare ranking, k items) and with it (what Recall
// returns), and explains each item: passed or not, the prompt's terms it
// matched, its session and a snippet. p's session (when stored) is the one
// recall runs for: what its last assembled window showed is left out, as
// in Assemble.
func (e *Engine) ExplainRecall(ctx context.Context, p core.AssembleParams, k int) (RecallExplained, error) {
	out := explain.NewRecall(p.Prompt, e.cfg.Recall)
	ranked, err := e.RecallWith(ctx, p, RecallOptions{K: k, MinScore: -1})
	if err != nil {
		return out, err
	}
	gated, err := e.RecallWith(ctx, p, RecallOptions{K: k})
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
			x.Session = SessionInfo{ID: s.Conv.String(), SessionIDs: s.Rec.SessionIDs, Key: s.Rec.Key}.Name()
		}
		if s.HaveText {
			x.Snippet = snippet(s.Text, s.At)
		}
	}
	return out, err
}
