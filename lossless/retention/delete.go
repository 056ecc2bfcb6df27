package retention

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Deleting a conversation takes three steps, each over the store alone;
// the caller (package lossless's door) holds the conversation's locks
// around them and keeps its caches right:
//
//  1. Recheck, under the conversation's lock: the record is read again and
//     the deletion given up (ErrChanged, ErrGone) when the conversation
//     was written to since the decision or deleted; else, unless already
//     so, the caller stores it marked Retiring (readers and writers then
//     refuse it) and removes the conversation's recall index docs;
//  2. DeleteData, under the same lock: the conversation's data and the
//     links of its ended subagents;
//  3. DeleteRecord, under the names lock and the conversation's lock again
//     (the names lock comes before a conversation's lock, so the caller
//     lets the latter go in between; the Retiring mark keeps every writer
//     out meanwhile): its session names, import checkpoints and the
//     record last.
//
// A pass stopped at any point leaves the Retiring record, which the next
// pass finds (Plan: "interrupted") and finishes.

// Recheck reads conversation c's record in r and returns it when its
// Updated time is still updated, the one the pass decided on: ErrChanged
// when it was written to since (an acknowledged ingest), ErrGone when a
// concurrent pass deleted it.
func Recheck(r store.Reader, c store.ConvID, updated int64) (store.Conversation, error) {
	now, err := r.Conversation(c)
	if errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, ErrGone
	}
	if err != nil {
		return store.Conversation{}, fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	if now.Updated != updated {
		return store.Conversation{}, ErrChanged
	}
	return now, nil
}

// DeleteData deletes conversation c's data and the links of its ended
// subagents from st, in batch b (written in parts as it grows; flushed
// here).
func DeleteData(ctx context.Context, st store.Store, b store.Batch, c store.ConvID) error {
	var links []store.SubID
	if err := st.View(ctx, func(r store.Reader) error {
		for l, err := range r.SubagentLinks(c) {
			if err != nil {
				return err
			}
			links = append(links, l.ID)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	if err := b.DeleteConversationData(c); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	for _, sub := range links {
		if err := b.DeleteSubagentLink(c, sub); err != nil {
			return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
		}
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	return nil
}

// DeleteRecord deletes conversation c's session names, its import
// checkpoints and its record (last) from st, in batch b (flushed here).
func DeleteRecord(ctx context.Context, st store.Store, b store.Batch, c store.ConvID) error {
	var names []store.Name
	var files []store.CheckpointRecord
	id := c.String()
	err := st.View(ctx, func(r store.Reader) error {
		for n, err := range r.Names() {
			if err != nil {
				return err
			}
			if n.Conv == c {
				names = append(names, n.Name)
			}
		}
		for cp, err := range r.Checkpoints() {
			if err != nil {
				return err
			}
			if (cp.File != nil && cp.File.Conv == id) || (cp.Host != nil && cp.Host.Conv == id) {
				files = append(files, cp)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	for _, n := range names {
		if err := b.DeleteName(n); err != nil {
			return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
		}
	}
	for _, cp := range files {
		var err error
		if cp.Host != nil {
			err = b.DeleteHostCheckpoint(cp.Agent, cp.HostConv)
		} else {
			err = b.DeleteFileCheckpoint(cp.Agent, cp.Path)
		}
		if err != nil {
			return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
		}
	}
	if err := b.DeleteConversation(c); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	return nil
}
