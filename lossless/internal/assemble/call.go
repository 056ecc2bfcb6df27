package assemble

import (
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// ModelMaxTokensKey is the runtimeContext key under which a host (the
// OpenClaw plugin, from the model's entry in OpenClaw's config) passes the
// model's output cap (its maxTokens) with an assemble.
const ModelMaxTokensKey = "modelMaxTokens"

// Call is one Assemble call resolved at its door (Resolve).
type Call struct {
	// Params are the call's parameters, TokenBudget set to the budget it
	// really has (HostBudgets.AssembleBudget).
	Params core.AssembleParams
	// Agent is the call's agent.
	Agent string
	// Conv is the conversation, when Known (false: a session never
	// stored, which gets the host's messages).
	Conv  store.ConvID
	Known bool
	// Mode is the call's projection mode (ProjectionMode).
	Mode string
	// Rec is the conversation's record (HaveRec), read with the window
	// when the call needs it.
	Rec     store.Conversation
	HaveRec bool
	// SubRefs are the session's subagent records (package subagent's
	// Refs), read with the window; SubGot what that read found (SubRead:
	// the window read them). The engine's fork prefix makes its subagent
	// lookup from them, else reads them itself.
	SubRefs []store.Ref
	SubGot  []store.Got
	SubRead bool
}

// NewCall is an Assemble call resolved at the engine's door, but for its
// conversation (the door looks the session up and sets Conv and Known):
// agent is its agent, tb its token budget (explicit, else the runtime
// context's, else the configured default), hb its session's host budgets,
// defProjection the configured projection mode (ProjectionMode's def).
// p.TokenBudget is set to the budget the call really has
// (HostBudgets.AssembleBudget), noted for the turn's compaction decision;
// subRefs are the session's subagent records the window reads.
func NewCall(p core.AssembleParams, agent string, tb int, hb *HostBudgets, defProjection string, subRefs []store.Ref) *Call {
	outCap, _ := p.RuntimeContext.Int(ModelMaxTokensKey)
	hints := RequestHints{OutputCap: outCap, Available: p.AvailableTools,
		Addition: core.Chars4{}.CountText(SystemPromptAddition(p.AvailableTools))}
	p.TokenBudget = hb.AssembleBudget(tb, p.RuntimeSettings, p.Prompt, hints)
	return &Call{Params: p, Agent: agent, Mode: ProjectionMode(p.RuntimeSettings, p.RuntimeContext, defProjection), SubRefs: subRefs}
}

// windowRefs returns what the window's read fetches beside the items:
// the conversation's record when the store is shared or the host is a
// thread-bootstrap one, and the session's subagent records (SubRefs).
func (call *Call) windowRefs(shared bool) []store.Ref {
	var refs []store.Ref
	if shared || call.Mode == core.ProjectionThreadBootstrap {
		refs = append(refs, store.Ref{Kind: store.RefConversation, Conv: call.Conv})
	}
	return append(refs, call.SubRefs...)
}

// took notes what the window's read found for refs (windowRefs).
func (call *Call) took(refs []store.Ref, got []store.Got) error {
	var subs []store.Got
	for i, ref := range refs {
		g := got[i]
		switch ref.Kind {
		case store.RefConversation:
			if g.Err != nil {
				return fmt.Errorf("lossless: assemble: %w", records.FromStore(g.Err))
			}
			call.Rec, call.HaveRec = g.Conversation, true
		default:
			if g.Err != nil && !errors.Is(g.Err, store.ErrNotFound) {
				return fmt.Errorf("lossless: read subagent: %w", records.FromStore(g.Err))
			}
			subs = append(subs, g)
		}
	}
	call.SubGot, call.SubRead = subs, true
	return nil
}
