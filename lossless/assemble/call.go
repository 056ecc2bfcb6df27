package assemble

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/subagent"
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
	// Sub is the session's subagent lookup, made with the window's read
	// (Sub.Done) or else by the fork prefix.
	Sub subagent.Lookup
}

// Resolve resolves an Assemble call at its door: its agent, its
// conversation (once: everything after takes the call) and p.TokenBudget
// set to the budget the call really has (HostBudgets.AssembleBudget),
// noted for the turn's compaction decision. An unknown session gets the
// same budget rules without notes.
func Resolve(ctx context.Context, port Port, p core.AssembleParams) (*Call, error) {
	tb := port.Budget(p.TokenBudget, p.RuntimeContext)
	agent := port.Agent(p.SessionKey)
	outCap, _ := p.RuntimeContext.Int(ModelMaxTokensKey)
	hints := RequestHints{OutputCap: outCap, Available: p.AvailableTools,
		Addition: core.Chars4{}.CountText(SystemPromptAddition(p.AvailableTools))}
	p.TokenBudget = port.Budgets().Of(agent, p.SessionID, p.SessionKey).AssembleBudget(tb, p.RuntimeSettings, p.Prompt, hints)
	call := &Call{Params: p, Agent: agent, Mode: ProjectionMode(p.RuntimeSettings, p.RuntimeContext, port.DefaultProjection())}
	// A shared store's cached resolution is checked by the window's read
	// (readWindow reads the record there).
	c, err := port.LookupCached(ctx, agent, p.SessionID, p.SessionKey)
	switch {
	case err == nil:
		call.Conv, call.Known = c, true
	case !errors.Is(err, core.ErrUnknownSession):
		return nil, err
	}
	return call, nil
}

// windowRefs returns what the window's read fetches beside the items:
// the conversation's record when the store is shared or the host is a
// thread-bootstrap one, and the session's subagent records.
func (call *Call) windowRefs(shared bool) []store.Ref {
	var refs []store.Ref
	if shared || call.Mode == core.ProjectionThreadBootstrap {
		refs = append(refs, store.Ref{Kind: store.RefConversation, Conv: call.Conv})
	}
	return append(refs, subagent.Refs(call.Agent, call.Params.SessionID, call.Params.SessionKey)...)
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
	call.Sub = subagent.Found(call.Agent, call.Params.SessionKey, subs)
	return nil
}
