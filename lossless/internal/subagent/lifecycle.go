package subagent

import (
	"context"
	"fmt"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Prepare stores the preparation rec of sub, replacing a previous
// preparation of the child: for a fork with a parent (parent non-nil and
// rec.Mode core.ContextModeFork), the parent's snapshot first (its item
// count and tokens set in the stored record), then the record and, when the
// child has a session id, its alias. On an error everything it wrote is
// removed again. The caller holds Lock.
func (l Lifecycle) Prepare(ctx context.Context, sub store.SubID, rec store.Subagent, parent *store.ConvID) error {
	if err := l.Remove(ctx, sub, ""); err != nil { // a previous preparation of this child
		return err
	}
	if rec.Mode == core.ContextModeFork && parent != nil {
		n, tokens, err := l.Snapshot(ctx, *parent, sub)
		if err != nil {
			_ = l.Remove(context.WithoutCancel(ctx), sub, "")
			return err
		}
		rec.SnapshotItems, rec.SnapshotTokens = n, tokens
	}
	err := l.update(ctx, func(tx store.Tx) error {
		if err := tx.PutSubagent(sub, rec); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		if rec.ChildSessionID != "" {
			if err := tx.PutSubagentByChild(rec.Agent, rec.ChildSessionID, sub); err != nil {
				return fmt.Errorf("lossless: prepare subagent: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		_ = l.Remove(context.WithoutCancel(ctx), sub, "")
		return fmt.Errorf("lossless: prepare subagent: %w", err)
	}
	return nil
}

// End marks sub's record ended for reason (core.SubagentCompleted or
// core.SubagentReleased), links the child to its parent and forgets its
// fork cache. A child never prepared is not an error. The caller holds Lock.
func (l Lifecycle) End(ctx context.Context, sub store.SubID, reason string) error {
	defer l.Forks.Drop(sub) // the child is done: its parsed fork prefix goes
	return l.update(ctx, func(tx store.Tx) error {
		rec, ok, err := Get(tx, sub)
		if err != nil || !ok {
			return err
		}
		rec.State, rec.EndReason, rec.EndedAt, rec.ExpiresAt = Ended, reason, time.Now().UnixMilli(), 0
		if err := tx.PutSubagent(sub, rec); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		if pc, ok := records.ParseConvID(rec.ParentConv); ok {
			if err := tx.PutSubagentLink(pc, sub, rec.ChildSessionKey); err != nil {
				return fmt.Errorf("lossless: subagent ended: link: %w", err)
			}
		}
		return nil
	})
}

// Activate marks a prepared sub (rec, as read before the lock) active (its
// child started) and returns its current record. An expired preparation is
// removed instead and reported not found, as is a record gone meanwhile.
// The caller holds Lock.
func (l Lifecycle) Activate(ctx context.Context, sub store.SubID, rec store.Subagent) (store.Subagent, bool, error) {
	now := time.Now().UnixMilli()
	found := true
	err := l.update(ctx, func(tx store.Tx) error {
		cur, ok, err := Get(tx, sub)
		if err != nil || !ok {
			found = false
			return err
		}
		rec = cur
		if rec.State != Prepared {
			return nil
		}
		if Expired(tx, rec, now) {
			found = false
			return nil
		}
		rec.State, rec.ExpiresAt = Active, 0
		if err := tx.PutSubagent(sub, rec); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
	})
	if err != nil {
		return rec, false, err
	}
	if !found {
		return rec, false, l.Remove(ctx, sub, "")
	}
	return rec, true, nil
}
