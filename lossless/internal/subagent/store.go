package subagent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/internal/diskspace"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Lifecycle is the subagent records of one engine's store, with what
// changing them takes: the store, its free-space guard, the fork caches
// and the lock of record changes. The engine makes one per call from its
// own fields; a nil Space or Locker is none (Lock then needs only Mu).
// The caller of Remove, Snapshot, Prepare, End, Activate and Sweep holds
// Lock.
type Lifecycle struct {
	// St is the engine's store.
	St store.Store
	// Space refuses writes when the store's filesystem is too full
	// (store.ErrDiskFull); nil refuses nothing.
	Space *diskspace.Guard
	// Forks is the engine's fork caches.
	Forks *Forks
	// Mu serialises subagent record changes in this process.
	Mu *sync.Mutex
	// Locker, when the store is shared by several processes, serialises
	// them across processes (the lock records.SubagentsLockName); nil
	// otherwise.
	Locker store.Locker
}

// Lock takes the lock of subagent record changes: l.Mu, then the store's
// (on a shared store, the lock other processes take). The returned func
// releases both.
func (l Lifecycle) Lock(ctx context.Context) (func(), error) {
	l.Mu.Lock()
	if l.Locker == nil {
		return l.Mu.Unlock, nil
	}
	release, err := l.Locker.Lock(ctx, records.SubagentsLockName)
	if err != nil {
		l.Mu.Unlock()
		return nil, fmt.Errorf("lossless: take lock %q in the shared store: %w", records.SubagentsLockName, err)
	}
	return func() {
		release()
		l.Mu.Unlock()
	}, nil
}

// checkSpace returns an error wrapping store.ErrDiskFull when the store's
// filesystem is too full to write.
func (l Lifecycle) checkSpace() error {
	if err := l.Space.Check(); err != nil {
		return fmt.Errorf("lossless: %w: %w", store.ErrDiskFull, err)
	}
	return nil
}

// update runs fn in a write transaction behind the free-space guard, its
// error mapped by records.FromStore.
func (l Lifecycle) update(ctx context.Context, fn func(store.Tx) error) error {
	if err := l.checkSpace(); err != nil {
		return err
	}
	return records.FromStore(l.St.Update(ctx, fn))
}

// batch starts a write batch behind the free-space guard.
func (l Lifecycle) batch(ctx context.Context) (store.Batch, error) {
	if err := l.checkSpace(); err != nil {
		return nil, err
	}
	b, err := l.St.NewBatch(ctx)
	if err != nil {
		return nil, records.FromStore(err)
	}
	return b, nil
}

// Snapshot copies the parent's context item records (references) to the
// fork snapshot of sub, in transactions of at most 2048 items. It returns
// how many items it copied and the tokens of those the context shows.
func (l Lifecycle) Snapshot(ctx context.Context, parent store.ConvID, sub store.SubID) (int, int, error) {
	const snapshotTxnItems = 2048
	var all []store.Item
	tokens := 0
	err := l.St.View(ctx, func(r store.Reader) error {
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
		err := l.update(ctx, func(tx store.Tx) error {
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
func (l Lifecycle) Remove(ctx context.Context, sub store.SubID, token string) error {
	var rec store.Subagent
	var have bool
	err := l.St.View(ctx, func(r store.Reader) error {
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
	l.Forks.Drop(sub)
	// Snapshot first (possibly many items, in a batch), the record last: a
	// crash in between leaves a record whose snapshot is partly gone, which
	// the next removal finishes.
	snapshot := false
	err = l.St.View(ctx, func(r store.Reader) error {
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
		wb, err := l.batch(ctx)
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
	return l.update(ctx, func(tx store.Tx) error {
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
func (l Lifecycle) Sweep(ctx context.Context) (int, error) {
	now := time.Now().UnixMilli()
	var expired []store.SubID
	orphans := map[store.SubID]bool{}
	err := l.St.View(ctx, func(r store.Reader) error {
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
		if err := l.Remove(ctx, sub, ""); err != nil {
			return 0, err
		}
	}
	for sub := range orphans {
		if err := l.Remove(ctx, sub, ""); err != nil {
			return 0, err
		}
	}
	return len(expired), nil
}
