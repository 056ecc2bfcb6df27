package lossless

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/ingest"
)

// Durable turn commits (CommitTurn: lossless/internal/ingest's commit.go) and the
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
	res, c, recAgent, stored, err := e.commitTurn(ctx, agent, sessionID, sessionKey, p)
	if err == nil && stored > 0 {
		// The compaction decision, off the request path: OpenClaw's turns
		// arrive here (it never calls afterTurn on its durable path).
		e.startCompaction(&Conversation{e: e, id: c, Agent: recAgent}, e.turnBudget(agent, sessionID, sessionKey, p.RuntimeContext))
	}
	return res, err
}

// commitTurn commits turn p of agent's session (sessionID, sessionKey:
// resolved from p and its admission anchor) durably: the messages
// validated, the conversation resolved (a turn without messages makes
// none), the messages prepared, then under the conversation's lock
// ingest.CommitLocked, run again on a conflict (ingest.Retry); the
// messages stored go to the recall index. It returns the conversation, its
// record's agent and how many messages it stored.
func (e *Engine) commitTurn(ctx context.Context, agent, sessionID, sessionKey string, p core.CommitTurnParams) (core.CommitTurnResult, convID, string, int, error) {
	if err := ingest.ValidateAll(p.Messages, e.cfg.MaxMessageBytes); err != nil {
		return core.CommitTurnResult{}, convID{}, "", 0, err
	}
	// A turn without messages makes no conversation (a run that never
	// receives a message leaves no record); for a stored one its key is
	// recorded as for any turn.
	c, err := e.resolve(ctx, agent, sessionID, sessionKey, len(p.Messages) > 0)
	if len(p.Messages) == 0 && errors.Is(err, core.ErrUnknownSession) {
		return core.CommitTurnResult{Status: core.CommitCommitted}, convID{}, "", 0, nil
	}
	if err != nil {
		return core.CommitTurnResult{}, convID{}, "", 0, err
	}
	ps, err := e.prepare(ctx, p.Messages, p.IsHeartbeat)
	if err != nil {
		return core.CommitTurnResult{}, convID{}, "", 0, err
	}
	if err := e.checkSpace(); err != nil {
		return core.CommitTurnResult{}, convID{}, "", 0, fmt.Errorf("lossless: commit turn: %w", err)
	}
	// Another process's write to the conversation between this one's read
	// and its commit is retried (nothing of the attempt was written).
	var fresh []*pending
	var recAgent string
	res, err := ingest.Retry(ctx, func() (core.CommitTurnResult, error) {
		s, err := e.lockConv(ctx, c)
		if err != nil {
			return core.CommitTurnResult{}, err
		}
		defer s.unlock()
		recAgent = s.rec.Agent
		var res core.CommitTurnResult
		res, fresh, err = ingest.CommitLocked(ctx, e.st, c, &s.rec, e.locker != nil, p, ps)
		return res, err
	})
	if err != nil || res.Status == core.CommitDuplicate {
		return res, convID{}, "", 0, err
	}
	e.indexMessages(c, recAgent, fresh) // recall.go
	return res, c, recAgent, len(fresh), nil
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
