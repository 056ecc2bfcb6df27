package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/store"
)

// Inspection: the list of conversations, a session's messages, the
// store's totals and the doctor's check are lossless/inspect's, reached
// through inspectPort below; the engine keeps the doors and the types
// under their names.

// SessionInfo describes one stored conversation (inspect.SessionInfo).
type SessionInfo = inspect.SessionInfo

// AgentStats are one agent's totals (inspect.AgentStats).
type AgentStats = inspect.AgentStats

// Stats are the store's totals (inspect.Stats).
type Stats = inspect.Stats

// CheckProblem is one thing Check found wrong in one conversation
// (inspect.CheckProblem).
type CheckProblem = inspect.CheckProblem

// CheckResult is what Check read and found (inspect.CheckResult).
type CheckResult = inspect.CheckResult

// Sessions lists the stored conversations of agent ("" = all agents),
// ordered by agent then creation.
func (e *Engine) Sessions(ctx context.Context, agent string) ([]SessionInfo, error) {
	return inspect.Sessions(ctx, inspectPort{e}, agent)
}

// Messages calls fn with the stored messages of agent's session sessionID
// in order, bytes exactly as ingested. An error from fn stops and is
// returned.
func (e *Engine) Messages(ctx context.Context, agent, sessionID string, fn func(seq uint64, m core.Message) error) error {
	return inspect.Messages(ctx, inspectPort{e}, agent, sessionID, fn)
}

// Stats returns per-agent totals and the disk size. It reads the
// conversation records only.
func (e *Engine) Stats(ctx context.Context) (Stats, error) {
	return inspect.ReadStats(ctx, inspectPort{e})
}

// Check verifies the store's invariants, reading only (inspect.Check says
// what it reads): for every conversation, the summary DAG (dag.Check), the
// records that are not one per message, and with deep every message
// record as well. It changes nothing: no index rebuild, no retention pass.
func (e *Engine) Check(ctx context.Context, deep bool) (CheckResult, error) {
	return inspect.Check(ctx, inspectPort{e}, deep)
}

// messageTimes returns the timestamps of the first and the last stored
// message of c (inspect.MessageTimes).
func messageTimes(r store.Reader, c convID, rec convRecord) (first, last int64, err error) {
	return inspect.MessageTimes(r, c, rec)
}

// inspectPort is inspect.Port over the engine.
type inspectPort struct{ e *Engine }

var _ inspect.Port = inspectPort{}

// Enter admits a call into the open engine.
func (p inspectPort) Enter() (func(), error) { return p.e.enter() }

// View reads a snapshot of the store.
func (p inspectPort) View(ctx context.Context, fn func(store.Reader) error) error {
	return p.e.st.View(ctx, fn)
}

// Resolve returns the conversation of agent's session sessionID
// (Engine.Conversation).
func (p inspectPort) Resolve(ctx context.Context, agent, sessionID string) (store.ConvID, error) {
	conv, err := p.e.Conversation(ctx, agent, sessionID)
	if err != nil {
		return store.ConvID{}, err
	}
	return conv.id, nil
}

// DAG returns conversation c of agent as a *Conversation.
func (p inspectPort) DAG(c store.ConvID, agent string) dag.Store {
	return &Conversation{e: p.e, id: c, Agent: agent}
}

// Retiring is retiringErr.
func (inspectPort) Retiring(c store.ConvID, sessionID string) error { return retiringErr(c, sessionID) }

// Size is the store's size on disk.
func (p inspectPort) Size(ctx context.Context) (int64, error) { return p.e.st.Size(ctx) }

// IndexDir is the recall index's directory, "" without a store directory.
func (p inspectPort) IndexDir() string {
	if p.e.cfg.StoreDir == "" {
		return ""
	}
	return p.e.indexDir()
}

// Format is FormatVersion.
func (inspectPort) Format() int { return FormatVersion }
