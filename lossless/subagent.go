package lossless

import (
	"context"
	"sync"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/subagent"
	"github.com/lossless-engine/contextengine/store"
)

// Subagents: PrepareSubagentSpawn, OnSubagentEnded, SweepSubagents — the
// engine's doors, thin wrappers of lossless/subagent's calls (Spawn, OnEnded,
// SweepExpired; its package doc describes the records), reached through
// subagentPort (port_subagent.go), which holds the engine's lock. The
// child's own messages are stored under the child's conversation by the
// ordinary write path. Assemble of a forked child returns its own context
// after the parent's snapshot (lossless/assemble's fork prefix: the
// snapshot fills what the child's own context leaves of the budget, newest
// first; nothing of the parent is read beyond that). Nothing of the parent
// is ever written.

// Subagent states (SubagentInfo.State).
const (
	// SubagentPrepared: prepared, the child has not started; the TTL runs.
	SubagentPrepared = subagent.Prepared
	// SubagentActive: the child started (assembled or stored a message).
	SubagentActive = subagent.Active
	// SubagentEnded: the child completed or was released; its history is
	// linked to the parent.
	SubagentEnded = subagent.Ended
)

// SubagentInfo is the stored record of a subagent preparation
// (store.Subagent).
type SubagentInfo = store.Subagent

var (
	_ core.SubagentSpawner     = (*Engine)(nil)
	_ core.SubagentEndListener = (*Engine)(nil)
)

// subagents is the subagent state of one Engine (its subagents field; the
// zero value is ready).
type subagents struct {
	// mu serialises subagent record changes.
	mu sync.Mutex
	// swept sweeps expired preparations once since open (Open, or the
	// first subagent call or Assemble of a read-only engine).
	swept sync.Once
	// forks holds the fork caches of the most recently assembled forks
	// (maxForkCaches; a forgotten one is parsed again at its next assemble).
	forks subagent.Forks
}

// PrepareSubagentSpawn sets up the state of a child run. contextMode
// "fork": the child's context starts from the parent's active context at
// this moment — a snapshot of references to the parent's messages and
// summaries, not copies — followed by the child's own messages, which are
// stored under the child's session; "isolated" (the default): the child
// starts empty. ttlMs > 0 bounds how long the preparation lives if the
// child never starts (first Assemble or stored message of the child): an
// expired preparation is removed by the next access or SweepSubagents.
// The returned Rollback removes everything this preparation created and is
// safe to call more than once. Preparing a child again replaces its
// previous preparation. Nothing of the parent is written.
func (e *Engine) PrepareSubagentSpawn(ctx context.Context, p core.SubagentSpawnParams) (*core.SubagentPreparation, error) {
	return subagent.Spawn(ctx, subagentPort{e}, p)
}

// OnSubagentEnded handles the end of a child run. "deleted" and "swept"
// remove the child's prepared state (record and fork snapshot; messages
// the child stored stay in its own conversation, unlinked). "completed"
// and "released" keep the child's history and link it to the parent: the
// parent's Grep (conversation scope) searches it, the parent's
// DescribeSummary/ExpandSummary resolve its summaries and large-content
// ids, and recall finds it as another conversation of the agent. A child
// the engine never prepared is not an error.
func (e *Engine) OnSubagentEnded(ctx context.Context, p core.SubagentEndedParams) error {
	return subagent.OnEnded(ctx, subagentPort{e}, p)
}

// SweepSubagents removes the preparations whose TTL expired while their
// child never started, and fork snapshots left without a record by a
// crash. It returns how many preparations it removed. The engine also
// sweeps once after open (first Assemble or subagent call) and whenever it
// meets an expired preparation.
func (e *Engine) SweepSubagents(ctx context.Context) (int, error) {
	return subagent.SweepExpired(ctx, subagentPort{e})
}

// Subagent returns the record of the child with session key childKey.
func (e *Engine) Subagent(ctx context.Context, childKey string) (SubagentInfo, bool, error) {
	return subagent.Info(ctx, subagentPort{e}, childKey)
}

// LinkedChildren returns the conversation ids (hex) of the ended subagents
// linked to the session's conversation.
func (e *Engine) LinkedChildren(ctx context.Context, sessionID, sessionKey string) ([]string, error) {
	return subagent.Linked(ctx, subagentPort{e}, sessionID, sessionKey)
}
