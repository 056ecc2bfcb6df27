package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/ingest"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// The write path (validating and preparing messages, resolving the
// conversation, storing with dedup, large content, committed turns, the
// retry of conflicting writes) is lossless/internal/ingest's; the doors below enter
// the engine, take its locks (names, conversation), check the free space,
// keep its resolution cache and hand what was stored to the recall index.

// LargeRefPrefix starts the id of stored large content in reference
// messages: "lcm-large:" + the hex message key. The full message is
// retrievable with Engine.MessageByKey.
const LargeRefPrefix = records.LargeRefPrefix

// DescribeContent returns a short deterministic description of text: the
// structure of JSON (top-level type, keys or length), CSV (rows, columns,
// header), code (its signatures), and otherwise the head and tail of the
// text. It is at most about 2,500 characters.
func DescribeContent(text string) string { return records.DescribeContent(text) }

// Ingest stores one message (idempotent: a message already stored in the
// conversation, byte for byte, is not stored again and Ingested is false).
// A message of a role outside the contract is accepted and stored verbatim
// like any other (a lossless engine keeps what it is given; refusing would
// make a guarded host quarantine the engine and lose the turn). Messages over
// Config.MaxMessageBytes are refused (core.ErrTooLarge), an empty session id
// with core.ErrEmptySessionID.
func (e *Engine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	n, err := e.ingestCall(ctx, p.SessionID, p.SessionKey, []core.Message{p.Message}, p.IsHeartbeat)
	return core.IngestResult{Ingested: n > 0}, err
}

// IngestBatch stores a turn; IngestedCount counts the messages not already
// stored. The batch is validated as a whole first: one invalid message
// refuses the batch and nothing of it is stored.
func (e *Engine) IngestBatch(ctx context.Context, p core.IngestBatchParams) (core.IngestBatchResult, error) {
	n, err := e.ingestCall(ctx, p.SessionID, p.SessionKey, p.Messages, p.IsHeartbeat)
	return core.IngestBatchResult{IngestedCount: n}, err
}

// AfterTurn stores the messages the turn added (p.NewMessages()); messages
// already stored are skipped, so replaying a turn, or passing the whole
// session with prePromptMessageCount 0, stores nothing twice.
func (e *Engine) AfterTurn(ctx context.Context, p core.AfterTurnParams) error {
	_, err := e.ingestCall(ctx, p.SessionID, p.SessionKey, p.NewMessages(), p.IsHeartbeat)
	if err == nil {
		e.afterTurnCompact(p) // proactive compaction in the background (lossless/orchestrate)
	}
	return err
}

// ingestCall is the write of one Ingest, IngestBatch or AfterTurn call,
// with the engine entered: msgs validated as a whole, the conversation
// resolved (created if new), the messages not stored yet stored
// (ingestInto, run again on a conflict: ingest.Retry). It returns how many
// it stored.
func (e *Engine) ingestCall(ctx context.Context, sessionID, sessionKey string, msgs []core.Message, heartbeat bool) (int, error) {
	done, err := e.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	if err := ingest.ValidateAll(msgs, e.cfg.MaxMessageBytes); err != nil {
		return 0, err
	}
	c, err := e.resolve(ctx, e.agentFor("", sessionKey), sessionID, sessionKey, true)
	if err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	ps, err := e.prepare(ctx, msgs, heartbeat)
	if err != nil {
		return 0, err
	}
	// A write another process's write made fail is run again.
	return ingest.Retry(ctx, func() (int, error) { return e.ingestInto(ctx, c, ps) })
}

// pending is a message ready to store (ingest.Pending).
type pending = ingest.Pending

// resolve returns the conversation of (agent, sessionID, sessionKey),
// creating it when create is set (ingest.ResolveTx, under the agent's
// names lock, behind the free-space guard), through the engine's
// resolution cache; a session id added to an existing conversation is
// recorded under its lock (addSessionID).
func (e *Engine) resolve(ctx context.Context, agent, sessionID, sessionKey string, create bool) (convID, error) {
	if err := ingest.CheckResolve(ctx, agent, sessionID, sessionKey); err != nil {
		return convID{}, err
	}
	key := ingest.CacheKey(agent, sessionID, sessionKey)
	if c, ok := e.resolvedGet(key); ok {
		return c, nil
	}
	release, err := e.lockNames(ctx, agent)
	if err != nil {
		return convID{}, err
	}
	defer release()
	if err := e.checkSpace(); err != nil {
		return convID{}, err
	}
	var res ingest.Resolution
	err = e.st.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		var err error
		res, err = ingest.ResolveTx(tx, agent, sessionID, sessionKey, create)
		return err
	})
	if err != nil {
		return convID{}, err
	}
	if res.Repointed {
		e.forgetResolved(res.Stale)
	}
	if res.AddID {
		// Under the conversation's lock, so that it does not race with a
		// write of its record; a call whose context ends first leaves it
		// to the next resolution (ResolveTx finds it missing).
		if err := e.addSessionID(ctx, res.Conv, sessionID, sessionKey); err != nil {
			return convID{}, err
		}
	}
	e.resolvedPut(key, res.Conv) // with c's state, bounded
	return res.Conv, nil
}

// preparer is what ingest.Prepare takes of the engine.
func (e *Engine) preparer() ingest.Preparer {
	return ingest.Preparer{Counter: e.tc, Counts: e.counts, LargeContentTokens: e.cfg.LargeContentTokens}
}

// prepare is ingest.Prepare with the engine's counter and count cache.
func (e *Engine) prepare(ctx context.Context, msgs []core.Message, heartbeat bool) ([]pending, error) {
	return ingest.Prepare(ctx, e.preparer(), msgs, heartbeat)
}

// ingestInto stores the prepared messages not already in conversation c
// (ingest.StoreMessages) behind the free-space guard, under c's lock, and
// hands those it stored to the recall index. It returns how many it
// stored.
func (e *Engine) ingestInto(ctx context.Context, c convID, ps []pending) (int, error) {
	if err := e.checkSpace(); err != nil {
		return 0, err
	}
	s, err := e.lockConv(ctx, c)
	if err != nil {
		return 0, err
	}
	defer s.unlock()
	stored, err := ingest.StoreMessages(ctx, e.st, c, &s.rec, e.locker != nil, ps)
	e.indexMessages(c, s.rec.Agent, stored) // recall.go
	return len(stored), err
}

// largeReference is records.LargeReference.
func largeReference(m core.Message, tokens int) []byte {
	return records.LargeReference(m, hashRaw(m.Raw()), tokens)
}

var (
	validateMessage = ingest.Validate
	checkSession    = ingest.CheckSession
	writeMessage    = ingest.WriteMessage
	convByName      = ingest.ConvByName
)

// addSessionID records sessionID on conversation c's record, under the
// conversation's lock so that it does not race with ingest.
func (e *Engine) addSessionID(ctx context.Context, c convID, sessionID, sessionKey string) error {
	s, err := e.lockShared(ctx, c)
	if err != nil {
		return err
	}
	defer s.unlock()
	return e.storeUpdate(context.WithoutCancel(ctx), func(tx store.Tx) error {
		rec, changed, err := ingest.AddSessionID(tx, c, sessionID, sessionKey)
		if err != nil || !changed {
			return err
		}
		s.rec, s.loaded = rec, true
		e.noteRecord(s)
		return nil
	})
}

// countCache is the engine's cache of token counts by message key, which
// ingest.Prepare reads and fills (ingest.TokenCache).
type countCache = ingest.TokenCache

// newCountCache returns an empty count cache.
func newCountCache() *countCache { return ingest.NewTokenCache() }
