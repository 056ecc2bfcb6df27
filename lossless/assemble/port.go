package assemble

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/subagent"
	"github.com/lossless-engine/contextengine/store"
)

// Port is what Assemble needs from the engine (package lossless
// implements it over its *Engine).
type Port interface {
	// Enter marks the start of a call (it fails after the engine's
	// Close); done ends it.
	Enter() (done func(), err error)
	// Store is the engine's store.
	Store() store.Store
	// Counter is the engine's token counter.
	Counter() core.TokenCounter
	// Shared reports whether several processes share the store.
	Shared() bool
	// DefaultTokenBudget is the configured budget of a call that names
	// none.
	DefaultTokenBudget() int
	// DefaultProjection is the configured projection mode
	// (ProjectionMode's def).
	DefaultProjection() string
	// Budget is the token budget of a call: explicit, else the runtime
	// context's tokenBudget, else the configured default.
	Budget(explicit int, rc *core.RuntimeContext) int
	// Agent is the agent of a call with sessionKey.
	Agent(sessionKey string) string
	// Budgets is the engine's table of the host's budgets by session.
	Budgets() *BudgetTable
	// LookupCached resolves a session to its conversation through the
	// engine's resolution cache; an unknown session is an error wrapping
	// core.ErrUnknownSession.
	LookupCached(ctx context.Context, agent, sessionID, sessionKey string) (store.ConvID, error)
	// Lookup resolves a session to its conversation from the store.
	Lookup(ctx context.Context, agent, sessionID, sessionKey string) (store.ConvID, error)
	// ForgetResolved drops every cached resolution to c (c was deleted).
	ForgetResolved(c store.ConvID)
	// LockWindow locks c's cached window (the parsed messages and
	// rendered summaries of its last assembled window) and returns it;
	// put stores next (when not nil) with its size in bytes, then
	// unlocks.
	LockWindow(c store.ConvID) (prev Cached, put func(next *Cached, size int64))
	// LargeReference is the reference standing for tool result m of
	// tokens tokens (the stored original's key, size and a description).
	LargeReference(m core.Message, tokens int) []byte
	// Recall is Assemble with recall when it applies (ok false: it does
	// not; the window alone is assembled).
	Recall(ctx context.Context, call *Call) (res core.AssembleResult, ok bool, err error)
	// SweepOnce sweeps expired subagent preparations once per engine.
	SweepOnce(ctx context.Context)
	// Subagents is the engine's subagent records (a forked child's
	// record and fork caches).
	Subagents() subagent.Lifecycle
}

// Cached is a conversation's cached window: the messages and summaries the
// last assemble parsed, by sequence number and summary id, and the
// record's Created time it was assembled from (on a shared store another
// process may delete the conversation and create it again with the same
// id, whose sequence numbers then name other messages).
type Cached struct {
	Msgs    map[uint64]core.Message
	Sums    map[string]core.Message
	Created int64
}
