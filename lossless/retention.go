package lossless

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/retention"
	"github.com/lossless-engine/contextengine/store"
)

// Retention: which conversations a pass deletes and their deletion from
// the store are lossless/retention's, over the store; the doors below
// enter the engine, take the conversations' and the names' locks, remove
// the recall index's docs, keep the caches right, and run the periodic
// pass, started and stopped in Open and Close.

// Retain applies Config.Retention (both limits are off by default) and
// removes orphaned conversations, those a stopped pass began to delete,
// and empty ones older than a day (retention.Plan says how each is
// chosen). now is the reference time (time.Now() when zero). A crash
// midway leaves a conversation that the next pass finishes deleting.
func (e *Engine) Retain(ctx context.Context, now time.Time) (retention.Result, error) {
	return e.retain(ctx, now, retention.Options{})
}

// RetainDryRun reports what Retain would delete at now, deleting nothing.
func (e *Engine) RetainDryRun(ctx context.Context, now time.Time) (retention.Result, error) {
	return e.retain(ctx, now, retention.Options{DryRun: true})
}

// retentionLimits are Config.Retention as lossless/retention takes them.
func (e *Engine) retentionLimits() retention.Limits {
	r := e.cfg.Retention
	return retention.Limits{MaxAgeDays: r.MaxAgeDays, MaxBytesPerAgent: r.MaxBytesPerAgent, IntervalMinutes: r.IntervalMinutes}
}

// retain runs one pass at now: the plan read from one snapshot
// (retention.Plan), then each candidate deleted (retireConversation)
// unless o.DryRun. A candidate written to since the plan, or deleted by
// another pass, is kept out of the result.
func (e *Engine) retain(ctx context.Context, now time.Time, o retention.Options) (retention.Result, error) {
	done, err := e.enter()
	if err != nil {
		return retention.Result{}, err
	}
	defer done()
	if now.IsZero() {
		now = time.Now()
	}
	var plan []retention.Candidate
	err = e.st.View(ctx, func(r store.Reader) error {
		var err error
		plan, err = retention.Plan(r, e.retentionLimits(), now, o)
		return err
	})
	if err != nil {
		return retention.Result{}, err
	}
	var res retention.Result
	for _, c := range plan {
		if !o.DryRun {
			if hook := e.cfg.hooks.retainBeforeDelete; hook != nil {
				hook()
			}
			if err := e.retireConversation(ctx, c.ID, c.Rec.Updated); err != nil {
				if errors.Is(err, retention.ErrChanged) || errors.Is(err, retention.ErrGone) {
					continue // written to since the decision, or deleted by another pass
				}
				return res, err
			}
		}
		res.Add(c)
	}
	return res, nil
}

// retireConversation deletes conversation c, decided on at its record's
// Updated time updated, in the steps lossless/retention's delete.go
// lays out: marked Retiring and its index docs removed, then its data,
// then (under the names lock) its names, checkpoints and record; then
// the engine forgets what it caches of it. The record is read and marked
// whatever ctx: a pass stopped from there on leaves the conversation
// marked for the next one to finish.
func (e *Engine) retireConversation(ctx context.Context, c convID, updated int64) error {
	keep := context.WithoutCancel(ctx)
	s, err := e.lockShared(keep, c)
	if err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			s.unlock()
		}
	}()
	var rec store.Conversation
	if err := e.st.View(keep, func(r store.Reader) error {
		var err error
		rec, err = retention.Recheck(r, c, updated)
		return err
	}); err != nil {
		return err
	}
	if !rec.Retiring {
		rec.Retiring = true
		if err := e.updateMapped(keep, func(tx store.Tx) error { return tx.PutConversation(c, rec) }); err != nil {
			return fmt.Errorf("lossless: retain: %w", err)
		}
		if s.loaded {
			s.rec.Retiring = true
		}
	}
	// The recall index's docs go first: found in the index itself, so that
	// a pass interrupted midway (Close, a crash) leaves none behind; the
	// next pass finds the conversation record (deleted last) and the docs
	// left, whatever store keys are already gone.
	if err := e.unindexConversation(ctx, c); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lossless: retain: %w", err)
	}
	wb, err := e.batchMapped(ctx)
	if err != nil {
		return err
	}
	defer wb.Cancel()
	if err := retention.DeleteData(ctx, e.st, wb, c); err != nil {
		return err
	}
	// The names lock comes before a conversation's lock (resolve's
	// order), so the conversation's lock is let go and taken again;
	// meanwhile the Retiring mark keeps every writer out.
	s.unlock()
	locked = false
	release, err := e.lockNames(keep, rec.Agent)
	if err != nil {
		return err
	}
	defer release()
	if s, err = e.lockShared(keep, c); err != nil {
		return err
	}
	locked = true
	last, err := e.batchMapped(ctx)
	if err != nil {
		return err
	}
	defer last.Cancel()
	if err := retention.DeleteRecord(ctx, e.st, last, c); err != nil {
		return err
	}
	e.forgetRetired(c, s, rec)
	return nil
}

// forgetRetired forgets what the engine caches of deleted conversation c
// (of record rec, state s locked): the recall index's entry, resolution
// entries, the conversation state and its window.
func (e *Engine) forgetRetired(c convID, s *convState, rec store.Conversation) {
	e.forgetIndexedConversation(rec)
	e.forgetResolved(c)
	s.loaded = false
	s.rec = convRecord{}
	e.noteRecord(s)
	// The window is the cached state's, which may be another than s
	// (s evicted while held: the locks are not the cache's).
	w, unlock := e.lockWindow(c)
	w.asmMsgs, w.asmSums = nil, nil
	unlock()
	e.asmForget(w)
}

// retentionLoop paces the open engine's periodic retention pass
// (retention.Loop).
type retentionLoop = retention.Loop

// retentionFirstDelay and retentionUnit time the automatic pass: the first
// one retentionFirstDelay after Open, then every IntervalMinutes
// retentionUnits (tests shorten both: testHooks).
const retentionFirstDelay, retentionUnit = time.Minute, time.Minute

// startRetention starts the periodic retention pass when a limit is set
// and the pass is not turned off (retention.Schedule). Otherwise, when a
// stopped pass left a conversation partly deleted (Retiring), one pass
// finishes that deletion and nothing else; none when there is nothing to
// run.
func (e *Engine) startRetention() {
	every, interruptedOnly := retention.Schedule(e.retentionLimits(), retention.Timing{
		Unit: cmp.Or(e.cfg.hooks.retentionUnit, retentionUnit), DefaultIntervalMinutes: config.DefaultRetentionIntervalMinutes})
	if !retention.Needed(context.Background(), e.st, interruptedOnly) {
		return
	}
	l := retention.NewLoop(cmp.Or(e.cfg.hooks.retentionFirst, retentionFirstDelay), every, interruptedOnly)
	e.retention = l
	go func() {
		defer l.Exit()
		for l.Next() {
			res, err := e.retain(l.Context(), time.Time{}, retention.Options{InterruptedOnly: interruptedOnly})
			l.Report(res, err)
		}
	}()
}

// stopRetention stops the periodic pass and waits for a pass in progress
// (cancelled) to end. Close calls it before taking the lifecycle lock that
// Retain holds shared.
func (e *Engine) stopRetention() { e.retention.Stop() }

// retiringErr is the error of a read of, or a write to, conversation c
// while it is being deleted by retention (records.RetiringErr).
func retiringErr(c convID, sessionID string) error { return records.RetiringErr(c, sessionID) }
