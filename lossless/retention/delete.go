package retention

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Delete removes every key of conversation c, then its mappings,
// checkpoints and record (last, so that an interrupted deletion is found
// again by the next pass).
//
// updated is the record's Updated time the decision was made on; when the
// conversation was written to since (an acknowledged ingest), nothing is
// deleted and an error is returned that Retain takes for "keep it" (as
// when another pass deleted it first).
func Delete(ctx context.Context, p Port, c store.ConvID, updated int64) error {
	s, err := p.Lock(context.WithoutCancel(ctx), c)
	if err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			s.Unlock()
		}
	}()
	// The record is read and marked whatever ctx: a pass stopped from here
	// on leaves the conversation marked for the next one to finish.
	var now store.Conversation
	err = p.View(context.WithoutCancel(ctx), func(r store.Reader) error {
		var err error
		now, err = r.Conversation(c)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return errConvGone // deleted by a concurrent pass
	}
	if err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	if now.Updated != updated {
		return errConvChanged
	}
	if !now.Retiring {
		now.Retiring = true
		if err := p.Update(context.WithoutCancel(ctx), func(tx store.Tx) error { return tx.PutConversation(c, now) }); err != nil {
			return fmt.Errorf("lossless: retain: %w", err)
		}
		s.MarkRetiring()
	}
	// The recall index's docs go first: found in the index itself, so that
	// a pass interrupted midway (Close, a crash) leaves none behind; the
	// next pass finds the conversation record (deleted last) and the docs
	// left, whatever store keys are already gone.
	if err := p.Unindex(ctx, c); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lossless: retain: %w", err)
	}
	// The conversation's data, and the links of its ended subagents, in a
	// batch (written in parts as it grows).
	var links []store.SubID
	if err := p.View(ctx, func(r store.Reader) error {
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
	wb, err := p.Batch(ctx)
	if err != nil {
		return err
	}
	defer wb.Cancel()
	if err := wb.DeleteConversationData(c); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	for _, sub := range links {
		if err := wb.DeleteSubagentLink(c, sub); err != nil {
			return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	// Names, checkpoints and the record go together, under the names
	// lock: a session resolved meanwhile either finds the conversation
	// whole or creates it afresh after, never names without a record. The
	// names lock comes before a conversation's lock (the engine's
	// resolution takes them in that order), so the conversation's lock is
	// let go and taken again; meanwhile the Retiring mark keeps every
	// writer out.
	s.Unlock()
	locked = false
	release, err := p.LockNames(context.WithoutCancel(ctx), now.Agent)
	if err != nil {
		return err
	}
	defer release()
	if s, err = p.Lock(context.WithoutCancel(ctx), c); err != nil {
		return err
	}
	locked = true
	var names []store.Name
	var files []store.CheckpointRecord
	id := c.String()
	err = p.View(ctx, func(r store.Reader) error {
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
	last, err := p.Batch(ctx)
	if err != nil {
		return err
	}
	defer last.Cancel()
	for _, n := range names {
		if err := last.DeleteName(n); err != nil {
			return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
		}
	}
	for _, cp := range files {
		var err error
		if cp.Host != nil {
			err = last.DeleteHostCheckpoint(cp.Agent, cp.HostConv)
		} else {
			err = last.DeleteFileCheckpoint(cp.Agent, cp.Path)
		}
		if err != nil {
			return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
		}
	}
	if err := last.DeleteConversation(c); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	if err := last.Flush(); err != nil {
		return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
	}
	s.Forget(now)
	return nil
}
