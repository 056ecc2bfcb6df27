package records

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// NewConvID derives a conversation id from its agent and first name.
func NewConvID(agent, name string) store.ConvID {
	h := sha256.Sum256([]byte(agent + "\x00" + name))
	var c store.ConvID
	copy(c[:], h[:8])
	return c
}

// LookupName returns the conversation agent's session is known by in the
// names records: its sessionKey, then its session id, then the id as a
// sessionKey (a key may also be passed as the id); an error wrapping
// core.ErrUnknownSession when none names one.
func LookupName(r store.Reader, agent, sessionID, sessionKey string) (store.ConvID, error) {
	for _, n := range [...]store.Name{{Agent: agent, Kind: store.NameSessionKey, Value: sessionKey},
		{Agent: agent, Kind: store.NameSessionID, Value: sessionID}, {Agent: agent, Kind: store.NameSessionKey, Value: sessionID}} {
		if n.Value == "" {
			continue
		}
		got, err := r.ConvByName(n)
		if err == nil {
			return got, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return store.ConvID{}, fmt.Errorf("lossless: read session map: %w", err)
		}
	}
	return store.ConvID{}, fmt.Errorf("lossless: session %q of agent %q: %w", sessionID+sessionKey, agent, core.ErrUnknownSession)
}

// GetSummary returns summary id of conversation c: an error wrapping
// dag.ErrNotFound when absent.
func GetSummary(r store.Reader, c store.ConvID, id string) (dag.Summary, error) {
	s, err := r.Summary(c, id)
	if errors.Is(err, store.ErrNotFound) {
		return s, fmt.Errorf("lossless: summary %q: %w", id, dag.ErrNotFound)
	}
	if err != nil {
		return s, fmt.Errorf("lossless: summary %q: %w", id, err)
	}
	return s, nil
}

// ReadMessage returns stored message seq of c, parsed from its bytes as
// ingested (dag.ErrNotFound when there is none).
func ReadMessage(r store.Reader, c store.ConvID, seq uint64) (core.Message, error) {
	rec, err := GetMsg(r, c, seq)
	if err != nil {
		return core.Message{}, err
	}
	return core.ParseMessage(rec.Raw)
}

// ReadPlainText returns message seq of c rendered by PlainText, large
// content given as its reference description (GetMsgText).
func ReadPlainText(r store.Reader, c store.ConvID, seq uint64) (string, error) {
	_, raw, err := GetMsgText(r, c, seq)
	if err != nil {
		return "", err
	}
	m, err := core.ParseMessage(raw)
	if err != nil {
		return "", fmt.Errorf("lossless: stored message %d: %w", seq, err)
	}
	return PlainText(m), nil
}

// ReadMessageMeta returns the metadata of message seq of c (its header
// only): dag.ErrNotFound when there is none.
func ReadMessageMeta(r store.Reader, c store.ConvID, seq uint64) (dag.MessageMeta, error) {
	m, err := GetMsgHeader(r, c, seq)
	if err != nil {
		return dag.MessageMeta{}, err
	}
	return dag.MessageMeta{Seq: seq, Tokens: m.Tokens, Timestamp: m.Timestamp, Role: m.Role}, nil
}

// Replace, within tx, checks that the items at old's positions are still
// exactly old and contiguous (CheckRange: else dag.ErrConflict) and that
// no summary s.ID exists, even one that does not decode (else
// dag.ErrConflict), then stores s, deletes old[1:], writes item (at
// old[0]'s position) over old[0] and writes rec with one summary more
// (and one refused summary more for a dag.MethodRefused one).
func Replace(tx store.Tx, c store.ConvID, old []dag.Item, s dag.Summary, item dag.Item, rec *store.Conversation) error {
	if err := CheckRange(tx, c, old); err != nil {
		return err
	}
	// A summary record that exists, even one that does not decode, is
	// never overwritten.
	if _, err := tx.Summary(c, s.ID); err == nil || errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("lossless: replace: summary %q exists: %w", s.ID, dag.ErrConflict)
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("lossless: replace: read summary %q: %w", s.ID, err)
	}
	if err := tx.PutSummary(c, s); err != nil {
		return fmt.Errorf("lossless: write summary: %w", err)
	}
	for _, o := range old[1:] {
		if err := tx.DeleteItem(c, o.Pos); err != nil {
			return fmt.Errorf("lossless: delete item: %w", err)
		}
	}
	if err := tx.PutItem(c, store.Item{Item: item}); err != nil {
		return fmt.Errorf("lossless: write item: %w", err)
	}
	rec.Summaries++
	if s.Method == dag.MethodRefused {
		rec.RefusedSummaries++
	}
	if err := tx.PutConversation(c, *rec); err != nil {
		return fmt.Errorf("lossless: write: %w", err)
	}
	return nil
}

// Agent returns the agent whose conversation c is, from its record.
func Agent(ctx context.Context, st store.Store, c store.ConvID) (string, error) {
	var agent string
	err := st.View(ctx, func(r store.Reader) error {
		rec, err := r.Conversation(c)
		if err != nil {
			return fmt.Errorf("lossless: conversation %s: %w", c, FromStore(err))
		}
		agent = rec.Agent
		return nil
	})
	return agent, err
}
