package lossless

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/ingest"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// The write path (validating and preparing messages, resolving the
// conversation, storing with dedup, large content, committed turns, the
// retry of conflicting writes) is lossless/ingest's, reached through
// ingestPort (port_ingest.go); the doors below enter the engine.

// LargeRefPrefix starts the id of stored large content in reference
// messages: "lcm-large:" + the hex message key. The full message is
// retrievable with Engine.MessageByKey.
const LargeRefPrefix = ingest.LargeRefPrefix

// DescribeContent returns a short deterministic description of text: the
// structure of JSON (top-level type, keys or length), CSV (rows, columns,
// header), code (its signatures), and otherwise the head and tail of the
// text. It is at most about 2,500 characters.
func DescribeContent(text string) string { return ingest.DescribeContent(text) }

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

// ingestCall is ingest.Messages with the engine entered.
func (e *Engine) ingestCall(ctx context.Context, sessionID, sessionKey string, msgs []core.Message, heartbeat bool) (int, error) {
	done, err := e.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	return ingest.Messages(ctx, ingestPort{e}, e.agentFor("", sessionKey), sessionID, sessionKey, msgs, heartbeat)
}

// addSessionID records sessionID on conversation c's record, under the
// conversation's lock so that it does not race with ingest.
func (e *Engine) addSessionID(ctx context.Context, c convID, sessionID, sessionKey string) error {
	s, err := e.lockShared(ctx, c)
	if err != nil {
		return err
	}
	defer s.unlock()
	return e.storeUpdate(context.WithoutCancel(ctx), func(tx store.Tx) error {
		rec, err := tx.Conversation(c)
		if err != nil {
			return fromStore(err)
		}
		if err := records.CheckNext(tx, c, rec); err != nil {
			return err
		}
		for _, id := range rec.SessionIDs {
			if id == sessionID {
				return nil
			}
		}
		rec.SessionIDs = append(rec.SessionIDs, sessionID)
		if rec.Key == "" {
			rec.Key = sessionKey
		}
		if err := tx.PutConversation(c, rec); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		s.rec, s.loaded = rec, true
		e.noteRecord(s)
		return nil
	})
}
