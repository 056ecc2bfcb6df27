package lossless

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/subagent"
	"github.com/lossless-engine/contextengine/store"
)

// An Assemble call resolves its conversation once, at its door
// (resolveAssemble), and hands the result down as an *assembleCall: the
// window's read, recall, the fork prefix of a subagent and the
// projection epoch all take it instead of looking the session up again.
// The window's read (assembleConv) fetches, in the same snapshot as the
// items and in one batched read (store.Reader.Get), what the rest of the
// call needs of the store: the conversation's record when the call needs
// it (a shared store checks its Created; a thread-bootstrap host gets
// its epoch from it) and the session's subagent records (forkPrefix). A
// warm assemble (the session resolved before, its window cached) thus
// reads the store twice — that batch and the items — and once more, in
// one batched read, for the recalled items (renderRecall).
// TestAssembleReads holds it to that.

// assembleCall is one Assemble call resolved at its door.
type assembleCall struct {
	// p is the call's parameters, TokenBudget set to the budget it really
	// has (hostBudgets.assembleBudget).
	p     core.AssembleParams
	agent string
	// c is the conversation, when known (false: a session never stored,
	// which gets the host's messages).
	c     convID
	known bool
	// mode is the call's projection mode (ProjectionMode).
	mode string
	// rec is the conversation's record (haveRec), read with the window
	// when the call needs it.
	rec     convRecord
	haveRec bool
	// sub is the session's subagent lookup, made with the window's read
	// (sub.Done) or else by forkPrefix (subFor).
	sub subagent.Lookup
}

// windowRefs returns what the window's read fetches beside the items:
// the conversation's record when the store is shared or the host is a
// thread-bootstrap one, and the session's subagent records.
func (call *assembleCall) windowRefs(shared bool) []store.Ref {
	var refs []store.Ref
	if shared || call.mode == core.ProjectionThreadBootstrap {
		refs = append(refs, store.Ref{Kind: store.RefConversation, Conv: call.c})
	}
	return append(refs, subagent.Refs(call.agent, call.p.SessionID, call.p.SessionKey)...)
}

// took notes what the window's read found for refs (windowRefs).
func (call *assembleCall) took(refs []store.Ref, got []store.Got) error {
	var subs []store.Got
	for i, ref := range refs {
		g := got[i]
		switch ref.Kind {
		case store.RefConversation:
			if g.Err != nil {
				return fmt.Errorf("lossless: assemble: %w", fromStore(g.Err))
			}
			call.rec, call.haveRec = g.Conversation, true
		default:
			if g.Err != nil && !errors.Is(g.Err, store.ErrNotFound) {
				return fmt.Errorf("lossless: read subagent: %w", fromStore(g.Err))
			}
			subs = append(subs, g)
		}
	}
	call.sub = subagent.Found(call.agent, call.p.SessionKey, subs)
	return nil
}

// lookupKey is the resolution cache's key of a look-up (lookup): apart
// from resolve's, which may create.
func lookupKey(agent, sessionID, sessionKey string) string {
	return "L\x00" + agent + "\x00" + sessionID + "\x00" + sessionKey
}

// lookupCached is lookup from the resolution cache when it holds the
// session (asmcache.go: bounded, dropped with the conversation's state
// and when the conversation is deleted). On a shared store another
// process may have deleted the conversation since: the caller then finds
// its record gone and calls forgetResolved (assembleConv does).
func (e *Engine) lookupCached(ctx context.Context, agent, sessionID, sessionKey string) (convID, error) {
	key := lookupKey(agent, sessionID, sessionKey)
	if c, ok := e.resolvedGet(key); ok {
		// Only a look-up that passed the checks below was cached.
		if err := ctx.Err(); err != nil {
			return convID{}, fmt.Errorf("lossless: %w", err)
		}
		return c, nil
	}
	c, err := e.lookup(ctx, agent, sessionID, sessionKey)
	if err == nil {
		e.resolvedPut(key, c)
	}
	return c, err
}
