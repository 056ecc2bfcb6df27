package lossless

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/ingest"
)

// Durable turn commits (CommitTurn: lossless/ingest's commit.go) and the
// lifecycle declarations of Info (transcriptSemantics, hostRequirements).

// UnsupportedAgentRunMessage is the engine's hostRequirements
// unsupportedMessage for "agent-run": what a host that cannot call assemble
// before the prompt tells its user after the contract's fail-closed error.
const UnsupportedAgentRunMessage = ingest.UnsupportedAgentRunMessage

// declareLifecycle is ingest.DeclareLifecycle (Engine.Info calls it).
func declareLifecycle(info *core.Info) { ingest.DeclareLifecycle(info) }

var _ core.TurnCommitter = (*Engine)(nil)

// CommitTurn commits a turn durably: the messages of p (from the admitted
// user entry through the terminal entry) not already stored and the
// advancement key are written in one store transaction, so a crash leaves
// either the whole turn with its key or nothing. A commit whose
// advancement key is already recorded for the conversation stores nothing
// and returns status "duplicate" — also after a restart — when its messages
// are those of the recorded turn (or some of them); one that brings a
// message the recorded turn lacks is refused (ErrKeyReused), nothing
// stored, rather than answered "duplicate" with the message dropped. Messages already
// stored by ingest are not stored twice (they are identified by their
// bytes, as everywhere in the engine).
//
// The session is p.SessionID (else the admission anchor's), keyed by
// p.SessionKey as for Ingest. An empty advancement key is refused
// (ErrBadParams), invalid messages as for IngestBatch; a turn too large for
// one transaction is refused and stores nothing.
func (e *Engine) CommitTurn(ctx context.Context, p core.CommitTurnParams) (core.CommitTurnResult, error) {
	done, err := e.enter()
	if err != nil {
		return core.CommitTurnResult{}, err
	}
	defer done()
	if strings.TrimSpace(p.AdvancementKey) == "" {
		return core.CommitTurnResult{}, fmt.Errorf("lossless: commit turn: empty advancementKey: %w", ErrBadParams)
	}
	explicit, sessionID, sessionKey := p.Admission.AgentID, p.SessionID, p.SessionKey
	if sessionID == "" {
		sessionID = p.Admission.SessionID
	}
	if sessionKey == "" {
		sessionKey = p.Admission.SessionKey
	}
	agent, sessionID, sessionKey := e.sessionIdentity(explicit, sessionID, sessionKey, p.SessionTarget)
	res, t, err := ingest.CommitTurn(ctx, ingestPort{e}, agent, sessionID, sessionKey, p)
	if err == nil && t.Stored > 0 {
		// The compaction decision, off the request path: OpenClaw's turns
		// arrive here (it never calls afterTurn on its durable path).
		e.startCompaction(&Conversation{e: e, id: t.Conv, Agent: t.Agent}, e.turnBudget(agent, sessionID, sessionKey, p.RuntimeContext))
	}
	return res, err
}

// TurnCommitted reports whether advancementKey is recorded as committed in
// the conversation of sessionID/sessionKey (agent as for every call), and
// the sequence numbers of the turn's messages.
func (e *Engine) TurnCommitted(ctx context.Context, sessionID, sessionKey, advancementKey string) (bool, []uint64, error) {
	done, err := e.enter()
	if err != nil {
		return false, nil, err
	}
	defer done()
	c, err := e.lookup(ctx, e.agentFor("", sessionKey), sessionID, sessionKey)
	if errors.Is(err, core.ErrUnknownSession) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return ingest.TurnCommitted(ctx, e.st, c, advancementKey)
}
