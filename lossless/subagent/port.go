package subagent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Port is what the subagent lifecycle needs from the engine (package
// lossless implements it over its *Engine). The caller of Remove, Snapshot
// and Sweep holds the engine's subagent lock; the calls (calls.go) take it.
type Port interface {
	// View runs fn in a read transaction of the engine's store.
	View(ctx context.Context, fn func(store.Reader) error) error
	// Update runs fn in a write transaction behind the engine's free-space
	// guard, its error mapped to the engine's sentinels.
	Update(ctx context.Context, fn func(store.Tx) error) error
	// Batch starts a write batch behind the engine's free-space guard.
	Batch(ctx context.Context) (store.Batch, error)
	// Forks is the engine's fork caches.
	Forks() *Forks
	// Enter marks the start of an engine call (it fails after the
	// engine's Close); done ends it.
	Enter() (done func(), err error)
	// Lock takes the engine's subagent lock (and the store's, on a shared
	// store); unlock releases both.
	Lock(ctx context.Context) (unlock func(), err error)
	// SweepOnce sweeps expired preparations once per engine (SweepExpired).
	SweepOnce(ctx context.Context)
	// Agent is the agent of a call with sessionKey.
	Agent(sessionKey string) string
	// Lookup resolves a session to its conversation; an unknown session
	// is an error wrapping core.ErrUnknownSession.
	Lookup(ctx context.Context, agent, sessionID, sessionKey string) (store.ConvID, error)
	// Import imports the transcript file at path as the session's
	// conversation (a missing file is an error wrapping os.ErrNotExist).
	Import(ctx context.Context, agent, sessionID, sessionKey, path string) error
	// BadParams is the engine's sentinel for refused call parameters
	// (lossless.ErrBadParams), wrapped by the calls' errors.
	BadParams() error
}

// Snapshot copies the parent's context item records (references) to the
// fork snapshot of sub, in transactions of at most 2048 items. It returns
// how many items it copied and the tokens of those the context shows.
func Snapshot(ctx context.Context, p Port, parent store.ConvID, sub store.SubID) (int, int, error) {
	const snapshotTxnItems = 2048
	var all []store.Item
	tokens := 0
	err := p.View(ctx, func(r store.Reader) error {
		for it, err := range r.Items(parent, 0, math.MaxUint64, false) {
			if err != nil {
				if errors.Is(err, store.ErrCorrupt) {
					return records.FromStore(err)
				}
				return fmt.Errorf("lossless: prepare subagent: read item: %w", records.FromStore(err))
			}
			if len(all)%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("lossless: prepare subagent: %w", err)
				}
			}
			if it.Flags&(store.FlagHeartbeat|store.FlagHidden|store.FlagSuperseded) == 0 {
				tokens += it.Tokens
			}
			all = append(all, it)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	count := len(all)
	for len(all) > 0 {
		n := min(len(all), snapshotTxnItems)
		err := p.Update(ctx, func(tx store.Tx) error {
			for _, it := range all[:n] {
				if err := tx.PutForkItem(sub, it); err != nil {
					return fmt.Errorf("lossless: prepare subagent: write snapshot: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
		all = all[n:]
	}
	return count, tokens, nil
}

// Remove deletes sub's record, alias, snapshot and parent link, and
// forgets its fork cache. With a non-empty token it removes only the
// preparation that token names (a rollback of an older preparation leaves
// a newer one alone). Absent state is not an error.
func Remove(ctx context.Context, p Port, sub store.SubID, token string) error {
	var rec store.Subagent
	var have bool
	err := p.View(ctx, func(r store.Reader) error {
		var err error
		rec, have, err = Get(r, sub)
		return err
	})
	if err != nil {
		return err
	}
	if token != "" && (!have || rec.Token != token) {
		return nil
	}
	p.Forks().Drop(sub)
	// Snapshot first (possibly many items, in a batch), the record last: a
	// crash in between leaves a record whose snapshot is partly gone, which
	// the next removal finishes.
	snapshot := false
	err = p.View(ctx, func(r store.Reader) error {
		for _, err := range r.ForkItems(sub) {
			if err != nil && !errors.Is(err, store.ErrCorrupt) {
				return err
			}
			snapshot = true // an item, whole or not
			break
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lossless: remove subagent: %w", records.FromStore(err))
	}
	if snapshot {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", err)
		}
		wb, err := p.Batch(ctx)
		if err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", err)
		}
		defer wb.Cancel()
		if err := wb.DeleteForkItems(sub); err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", records.FromStore(err))
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", records.FromStore(err))
		}
	}
	if !have {
		return nil
	}
	return p.Update(ctx, func(tx store.Tx) error {
		if rec.ChildSessionID != "" {
			if err := tx.DeleteSubagentByChild(rec.Agent, rec.ChildSessionID); err != nil {
				return fmt.Errorf("lossless: remove subagent: %w", err)
			}
		}
		if pc, ok := records.ParseConvID(rec.ParentConv); ok {
			if err := tx.DeleteSubagentLink(pc, sub); err != nil {
				return fmt.Errorf("lossless: remove subagent: %w", err)
			}
		}
		if err := tx.DeleteSubagent(sub); err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", err)
		}
		return nil
	})
}

// Sweep removes the preparations whose TTL expired while their child never
// started, and fork snapshots left without a record by a crash. It returns
// how many preparations it removed.
func Sweep(ctx context.Context, p Port) (int, error) {
	now := time.Now().UnixMilli()
	var expired []store.SubID
	orphans := map[store.SubID]bool{}
	err := p.View(ctx, func(r store.Reader) error {
		for sr, err := range r.Subagents() {
			if err != nil {
				if errors.Is(err, store.ErrCorrupt) {
					return fmt.Errorf("%w: subagent: %w", records.ErrBadRecord, err)
				}
				return records.FromStore(err)
			}
			if Expired(r, sr.Subagent, now) {
				expired = append(expired, sr.ID)
			}
		}
		// One look-up per snapshot, not per item.
		for sub, err := range r.ForkSnapshots() {
			if err != nil {
				return records.FromStore(err)
			}
			if _, err := r.Subagent(sub); errors.Is(err, store.ErrNotFound) {
				orphans[sub] = true
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, sub := range expired {
		if err := Remove(ctx, p, sub, ""); err != nil {
			return 0, err
		}
	}
	for sub := range orphans {
		if err := Remove(ctx, p, sub, ""); err != nil {
			return 0, err
		}
	}
	return len(expired), nil
}
