package inspect

import (
	"context"
	"errors"
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

// MessageTimes returns the timestamps (Unix ms) of the first and the last
// stored message of c (sequence numbers 1 and rec.Messages), the earlier
// first; a message without a timestamp counts as the other one, and 0, 0
// means neither has one.
func MessageTimes(r store.Reader, c store.ConvID, rec store.Conversation) (first, last int64, err error) {
	if rec.Messages <= 0 {
		return 0, 0, nil
	}
	at := func(seq uint64) (int64, error) {
		m, err := r.MessageHeader(c, seq)
		switch {
		case err == nil:
			return m.Timestamp, nil
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCorrupt):
			// A missing record, or one that does not decode, has no
			// time: Check reports it.
			return 0, nil
		}
		return 0, fmt.Errorf("lossless: conversation %s: read message %d: %w", c, seq, err)
	}
	if first, err = at(1); err != nil {
		return 0, 0, err
	}
	if last, err = at(uint64(rec.Messages)); err != nil {
		return 0, 0, err
	}
	switch {
	case first == 0:
		first = last
	case last == 0:
		last = first
	case last < first:
		first, last = last, first
	}
	return first, last, nil
}

// Describe describes conversation c of record rec, with the times of its
// first and last messages (MessageTimes).
func Describe(r store.Reader, c store.ConvID, rec store.Conversation) (SessionInfo, error) {
	first, last, err := MessageTimes(r, c, rec)
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
func Sessions(ctx context.Context, p Port, agent string) ([]SessionInfo, error) {
	done, err := p.Enter()
	if err != nil {
		return nil, err
	}
	defer done()
	var out []SessionInfo
	err = p.View(ctx, func(r store.Reader) error {
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

// Messages calls fn with the stored messages of agent's session sessionID
// in order, bytes exactly as ingested. An error from fn stops and is
// returned. A gap in the sequence numbers, or a count short of the
// conversation record's, is an error wrapping store.ErrCorrupt
// (lossless.ErrCorrupt) naming the missing range, never a short list.
func Messages(ctx context.Context, p Port, agent, sessionID string, fn func(seq uint64, m core.Message) error) error {
	c, err := p.Resolve(ctx, agent, sessionID)
	if err != nil {
		return err
	}
	done, err := p.Enter()
	if err != nil {
		return err
	}
	defer done()
	return p.View(ctx, func(r store.Reader) error {
		rec, err := r.Conversation(c)
		if err != nil {
			return fmt.Errorf("lossless: conversation %s: read record: %w", c, records.FromStore(err))
		}
		if rec.Retiring {
			return p.Retiring(c, sessionID)
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
