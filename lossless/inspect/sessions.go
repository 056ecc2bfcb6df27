package inspect

import (
	"context"
	"fmt"
	"sort"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// SessionInfo describes one stored conversation.
type SessionInfo struct {
	Agent string `json:"agent"`
	// ID is the conversation's id; SessionIDs every session id it has had
	// (the newest last); Key its sessionKey, if any.
	ID         string   `json:"id"`
	SessionIDs []string `json:"sessionIds"`
	Key        string   `json:"key,omitempty"`
	Messages   int64    `json:"messages"`
	Summaries  int64    `json:"summaries"`
	Bytes      int64    `json:"bytes"`
	Tokens     int64    `json:"tokens"`
	// Created and Updated are when the store created and last wrote the
	// conversation (Unix ms): for an imported history, the import's time.
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
	// FirstMessage and LastMessage are the times (Unix ms) of the first and
	// the last stored message, from the messages' own timestamps (0 when
	// neither carries one): when the conversation took place.
	FirstMessage int64 `json:"firstMessage,omitempty"`
	LastMessage  int64 `json:"lastMessage,omitempty"`
	// Retiring is true for a conversation an interrupted retention pass
	// left partly deleted (ErrRetiring); the next pass finishes it.
	Retiring bool `json:"retiring,omitempty"`
}

// Name returns the name a person (and `lossless export --session`) knows
// the conversation by: its newest session id, else its sessionKey, else
// its id.
func (s SessionInfo) Name() string {
	if n := len(s.SessionIDs); n > 0 {
		return s.SessionIDs[n-1]
	}
	if s.Key != "" {
		return s.Key
	}
	return s.ID
}

// Describe describes conversation c of record rec, with the times of its
// first and last messages (records.MessageTimes).
func Describe(r store.Reader, c store.ConvID, rec store.Conversation) (SessionInfo, error) {
	first, last, err := records.MessageTimes(r, c, rec)
	if err != nil {
		return SessionInfo{}, err
	}
	return SessionInfo{Agent: rec.Agent, ID: c.String(),
		SessionIDs: rec.SessionIDs, Key: rec.Key, Messages: rec.Messages, Summaries: rec.Summaries,
		Bytes: rec.Bytes, Tokens: rec.Tokens, Created: rec.Created, Updated: rec.Updated,
		FirstMessage: first, LastMessage: last, Retiring: rec.Retiring}, nil
}

// Sessions lists the stored conversations of agent ("" = all agents),
// ordered by agent then creation.
func Sessions(ctx context.Context, st store.Store, agent string) ([]SessionInfo, error) {
	var out []SessionInfo
	err := st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: read conversations: %w", err)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: %w", err)
			}
			rec := cr.Conversation
			if agent != "" && rec.Agent != agent {
				continue
			}
			in, err := Describe(r, cr.ID, rec)
			if err != nil {
				return err
			}
			out = append(out, in)
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Created < out[j].Created
	})
	return out, err
}

// Messages calls fn with the stored messages of conversation c (of
// session sessionID, which errors name) in order, bytes exactly as ingested. An error from fn stops and is
// returned. A gap in the sequence numbers, or a count short of the
// conversation record's, is an error wrapping store.ErrCorrupt
// (lossless.ErrCorrupt) naming the missing range, never a short list.
// A conversation a stopped retention pass left partly deleted is
// refused with records.RetiringErr.
func Messages(ctx context.Context, st store.Store, c store.ConvID, sessionID string, fn func(seq uint64, m core.Message) error) error {
	return st.View(ctx, func(r store.Reader) error {
		rec, err := r.Conversation(c)
		if err != nil {
			return fmt.Errorf("lossless: conversation %s: read record: %w", c, records.FromStore(err))
		}
		if rec.Retiring {
			return records.RetiringErr(c, sessionID)
		}
		// Sequence numbers run from 1 without a gap; a gap or a short count
		// is corruption, reported with the missing range, never a short list.
		want := uint64(1)
		for msg, err := range r.Messages(c, 0, true) {
			if err != nil {
				return fmt.Errorf("lossless: read message: %w", err)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: %w", err)
			}
			seq := msg.Seq
			if seq != want {
				return records.MissingErr(c, sessionID, want, seq-1)
			}
			want++
			m, err := core.ParseMessage(msg.Raw)
			if err != nil {
				return fmt.Errorf("lossless: stored message %d: %w", seq, err)
			}
			if err := fn(seq, m); err != nil {
				return err
			}
		}
		if last := want - 1; int64(last) != rec.Messages || rec.NextSeq != want {
			hi := rec.NextSeq - 1
			if hi < want {
				return fmt.Errorf("lossless: conversation %s (session %s): %d messages read, its record counts %d (next seq %d): %w",
					c, sessionID, last, rec.Messages, rec.NextSeq, store.ErrCorrupt)
			}
			return records.MissingErr(c, sessionID, want, hi)
		}
		return nil
	})
}
