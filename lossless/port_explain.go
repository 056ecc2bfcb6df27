package lossless

// The engine's explanations (package lossless/explain): an assembled
// context part by part and the recall ranking item by item, re-exported
// here as the methods and types they always were, and explainPort, the
// engine's side of explain.Port.

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/explain"
	"github.com/lossless-engine/contextengine/lossless/internal/recalled"
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
	return explain.Assemble(ctx, explainPort{e}, p)
}

// ExplainRecall ranks p.Prompt as Recall does, twice: without the
// relevance gate (the bare ranking, k items) and with it (what Recall
// returns), and explains each item: passed or not, the prompt's terms it
// matched, its session and a snippet. p's session (when stored) is the one
// recall runs for: what its last assembled window showed is left out, as
// in Assemble.
func (e *Engine) ExplainRecall(ctx context.Context, p core.AssembleParams, k int) (RecallExplained, error) {
	return explain.Recall(ctx, explainPort{e}, p, k)
}

// explainPort is the engine as lossless/explain's Port: what the
// explanations need of it.
type explainPort struct{ e *Engine }

var _ explain.Port = explainPort{}

// AssembleWithDetails is Engine.AssembleWithDetails.
func (p explainPort) AssembleWithDetails(ctx context.Context, ap core.AssembleParams) (core.AssembleResult, recalled.Details, error) {
	return p.e.AssembleWithDetails(ctx, ap)
}

// Budget is the budget assemble uses for ap (budgetFor).
func (p explainPort) Budget(ap core.AssembleParams) int {
	return p.e.budgetFor(ap.TokenBudget, ap.RuntimeContext)
}

// Counter is the engine's token counter.
func (p explainPort) Counter() core.TokenCounter { return p.e.tc }

// Conversation is the id of ConversationFor's conversation.
func (p explainPort) Conversation(ctx context.Context, sessionID, sessionKey string) (store.ConvID, error) {
	conv, err := p.e.ConversationFor(ctx, "", sessionID, sessionKey)
	if err != nil {
		return store.ConvID{}, err
	}
	return conv.id, nil
}

// View is Engine.View.
func (p explainPort) View(ctx context.Context, fn func(r store.Reader) error) error {
	return p.e.View(ctx, fn)
}

// SeqOf finds the message of c whose bytes are raw by their key
// (hashRaw).
func (p explainPort) SeqOf(r store.Reader, c store.ConvID, raw []byte) (uint64, error) {
	return r.SeqByHash(c, hashRaw(raw))
}

// RecallWith is Engine.RecallWith.
func (p explainPort) RecallWith(ctx context.Context, ap core.AssembleParams, o recalled.Options) ([]recalled.Item, error) {
	return p.e.RecallWith(ctx, ap, o)
}

// RecallConfig is Config.Recall.
func (p explainPort) RecallConfig() config.Recall { return p.e.cfg.Recall }

// MessageText is the text getMsgText reads.
func (p explainPort) MessageText(r store.Reader, c store.ConvID, seq uint64) ([]byte, error) {
	_, raw, err := getMsgText(r, c, seq)
	return raw, err
}

// SessionName is SessionInfo.Name of conversation c of record rec.
func (p explainPort) SessionName(c store.ConvID, rec store.Conversation) string {
	return SessionInfo{ID: c.String(), SessionIDs: rec.SessionIDs, Key: rec.Key}.Name()
}

// Snippet is the snippet grep shows (lossless/tools).
func (p explainPort) Snippet(text string, at int) string { return snippet(text, at) }
