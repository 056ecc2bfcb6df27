package lossless

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/store"
)

// RetentionResult reports one retention pass.
type RetentionResult struct {
	// Deleted lists the deleted conversations (hex ids) with the reason:
	// "age", "size", "orphan", or "interrupted" (one a stopped pass had
	// begun to delete).
	Deleted []DeletedConversation `json:"deleted,omitempty"`
	// Messages and Bytes are the totals of the deleted conversations.
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
}

// DeletedConversation is one conversation removed by Retain.
type DeletedConversation struct {
	Agent string `json:"agent"`
	ID    string `json:"id"`
	// Session names it as the user knows it: its session key, else its
	// latest session id ("" for an orphan without either).
	Session string `json:"session,omitempty"`
	Reason  string `json:"reason"`
}

// Retain applies Config.Retention (both limits are off by default) and
// removes orphaned conversations:
//   - age: conversations whose last message is older than
//     retention.maxAgeDays, by the message's own timestamp (an imported
//     history ages from when it took place, not from its import); by the
//     conversation's last write when that message has no timestamp or an
//     implausible one (before 2000, or a day after the write);
//   - size: an agent's conversations with the oldest last message (same
//     time) while the agent's stored bytes exceed retention.maxBytesPerAgent;
//   - orphan: conversations no session id or key maps to any more, and
//     empty conversations (no message) older than a day.
//
// now is the reference time (time.Now() when zero). Deleting a
// conversation removes its messages, items, summaries, session mappings and
// import checkpoints, in batches, under the conversation's lock; a crash
// midway leaves a conversation that the next pass finishes deleting.
func (e *Engine) Retain(ctx context.Context, now time.Time) (RetentionResult, error) {
	return e.retain(ctx, now, false, false)
}

// RetainDryRun reports what Retain would delete at now, deleting nothing.
func (e *Engine) RetainDryRun(ctx context.Context, now time.Time) (RetentionResult, error) {
	return e.retain(ctx, now, true, false)
}

// retain is Retain (dry: RetainDryRun); with interruptedOnly it only
// finishes the deletions a stopped pass began (whatever the limits).
func (e *Engine) retain(ctx context.Context, now time.Time, dry, interruptedOnly bool) (RetentionResult, error) {
	done, err := e.enter()
	if err != nil {
		return RetentionResult{}, err
	}
	defer done()
	if now.IsZero() {
		now = time.Now()
	}
	type conv struct {
		id  convID
		rec convRecord
		// last is the time of the last message (messageTimes), else
		// rec.Updated.
		last int64
	}
	var convs []conv
	mapped := map[convID]bool{}
	err = e.st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				if errors.Is(err, store.ErrCorrupt) {
					return fmt.Errorf("%w: conversation: %w", errBadRecord, err)
				}
				return fromStore(err)
			}
			c := conv{id: cr.ID, rec: cr.Conversation}
			_, last, err := messageTimes(r, c.id, c.rec)
			if err != nil {
				return err
			}
			c.last = last
			if c.last < plausibleSince || c.last > c.rec.Updated+24*3600*1000 {
				// No timestamp, or one no message of this store can have
				// (seconds taken for milliseconds, a clock far ahead).
				c.last = c.rec.Updated
			}
			convs = append(convs, c)
		}
		// A name that does not decode fails the pass: skipping it could
		// take its conversation for an orphan.
		for n, err := range r.Names() {
			if err != nil {
				return fmt.Errorf("lossless: retain: %w", fromStore(err))
			}
			mapped[n.Conv] = true
		}
		return nil
	})
	if err != nil {
		return RetentionResult{}, err
	}
	var res RetentionResult
	del := func(c conv, reason string) error {
		if hook := e.cfg.hooks.retainBeforeDelete; hook != nil && !dry {
			hook()
		}
		if !dry {
			if err := e.deleteConversation(ctx, c.id, c.rec.Updated); err != nil {
				if errors.Is(err, errConvChanged) || errors.Is(err, errConvGone) {
					return nil // written to since the decision, or deleted by another pass
				}
				return err
			}
		}
		session := c.rec.Key
		if session == "" && len(c.rec.SessionIDs) > 0 {
			session = c.rec.SessionIDs[len(c.rec.SessionIDs)-1]
		}
		res.Deleted = append(res.Deleted, DeletedConversation{Agent: c.rec.Agent, ID: c.id.String(), Session: session, Reason: reason})
		res.Messages += c.rec.Messages
		res.Bytes += c.rec.Bytes
		return nil
	}
	nowMs := now.UnixMilli()
	maxAge := int64(e.cfg.Retention.MaxAgeDays) * 24 * 3600 * 1000
	var kept []conv
	for _, c := range convs {
		switch {
		case c.rec.Retiring:
			err = del(c, "interrupted") // a pass stopped midway: finish it
		case interruptedOnly:
		case !mapped[c.id]:
			err = del(c, "orphan")
		case c.rec.Messages == 0 && nowMs-c.rec.Created > 24*3600*1000:
			err = del(c, "orphan")
		case maxAge > 0 && nowMs-c.last > maxAge:
			err = del(c, "age")
		default:
			kept = append(kept, c)
		}
		if err != nil {
			return res, err
		}
	}
	if limit := e.cfg.Retention.MaxBytesPerAgent; limit > 0 && !interruptedOnly {
		byAgent := map[string][]conv{}
		for _, c := range kept {
			byAgent[c.rec.Agent] = append(byAgent[c.rec.Agent], c)
		}
		agents := make([]string, 0, len(byAgent))
		for a := range byAgent {
			agents = append(agents, a)
		}
		sort.Strings(agents)
		for _, a := range agents {
			cs := byAgent[a]
			var total int64
			for _, c := range cs {
				total += c.rec.Bytes
			}
			sort.Slice(cs, func(i, j int) bool { return cs[i].last < cs[j].last })
			// Never delete the agent's most recent conversation.
			for i := 0; total > limit && i < len(cs)-1; i++ {
				if err := del(cs[i], "size"); err != nil {
					return res, err
				}
				total -= cs[i].rec.Bytes
			}
		}
	}
	return res, nil
}

// plausibleSince (2000-01-01, Unix ms) is the earliest message timestamp
// retention believes: an earlier one (seconds sent as milliseconds, a test's
// small number) ages the conversation by its last write instead.
const plausibleSince = 946_684_800_000

// retentionLoop is the open engine's periodic retention pass.
type retentionLoop struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// retentionFirstDelay and retentionUnit time the automatic pass: the first
// one retentionFirstDelay after Open, then every IntervalMinutes
// retentionUnits (tests shorten both).
var (
	retentionFirstDelay = time.Minute
	retentionUnit       = time.Minute
)

// startRetention starts the periodic retention pass when a limit is set
// and the pass is not turned off (Config.Retention.IntervalMinutes -1).
// Otherwise, when a stopped pass left a conversation partly deleted
// (Retiring), one pass a retentionFirstDelay after Open finishes that
// deletion and nothing else.
func (e *Engine) startRetention() {
	r := e.cfg.Retention
	interruptedOnly := (r.MaxAgeDays <= 0 && r.MaxBytesPerAgent <= 0) || r.IntervalMinutes < 0
	if interruptedOnly {
		retiring, err := e.anyRetiring()
		if err != nil {
			// Cannot tell: the pass runs and finds out (it reports what it
			// cannot read).
			slog.Warn("lossless: retention: could not list conversations", "err", err)
		} else if !retiring {
			return
		}
	}
	every := time.Duration(r.IntervalMinutes) * retentionUnit
	if r.IntervalMinutes == 0 {
		every = DefaultRetentionIntervalMinutes * retentionUnit
	}
	e.retention = &retentionLoop{stop: make(chan struct{}), done: make(chan struct{})}
	go func(l *retentionLoop) {
		defer close(l.done)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-l.stop
			cancel()
		}()
		t := time.NewTimer(retentionFirstDelay)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
			res, err := e.retain(ctx, time.Time{}, false, interruptedOnly)
			switch {
			case err != nil && ctx.Err() == nil:
				slog.Warn("lossless: retention pass failed", "err", err)
			case len(res.Deleted) > 0:
				slog.Info("lossless: retention deleted conversations", "conversations", len(res.Deleted),
					"messages", res.Messages, "bytes", res.Bytes)
			}
			if interruptedOnly {
				return
			}
			t.Reset(every)
		}
	}(e.retention)
}

// anyRetiring reports whether a conversation is marked Retiring (a stopped
// retention pass left it partly deleted).
func (e *Engine) anyRetiring() (bool, error) {
	found := false
	err := e.st.View(context.Background(), func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			if cr.Retiring {
				found = true
				break
			}
		}
		return nil
	})
	return found, err
}

// stopRetention stops the periodic pass and waits for a pass in progress
// (cancelled) to end. Close calls it before taking the lifecycle lock that
// Retain holds shared.
func (e *Engine) stopRetention() {
	l := e.retention
	if l == nil {
		return
	}
	l.once.Do(func() { close(l.stop) })
	<-l.done
}

// deleteConversation removes every key of conversation c, then its
// mappings, checkpoints and record (last, so that an interrupted deletion
// is found again by the next pass).
//
// updated is the record's Updated time the decision was made on; when the
// conversation was written to since (an acknowledged ingest), nothing is
// deleted and errConvChanged is returned.
func (e *Engine) deleteConversation(ctx context.Context, c convID, updated int64) error {
	s, err := e.lockShared(context.WithoutCancel(ctx), c)
	if err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			s.unlock()
		}
	}()
	// The record is read and marked whatever ctx: a pass stopped from here
	// on leaves the conversation marked for the next one to finish.
	var now convRecord
	err = e.st.View(context.WithoutCancel(ctx), func(r store.Reader) error {
		var err error
		now, err = r.Conversation(c)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return errConvGone // deleted by a concurrent pass
	}
	if err != nil {
		return fmt.Errorf("lossless: retain: %w", fromStore(err))
	}
	if now.Updated != updated {
		return errConvChanged
	}
	if !now.Retiring {
		now.Retiring = true
		if err := e.updateMapped(context.WithoutCancel(ctx), func(tx store.Tx) error { return tx.PutConversation(c, now) }); err != nil {
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
	// The conversation's data, and the links of its ended subagents, in a
	// batch (written in parts as it grows).
	var links []subID
	if err := e.st.View(ctx, func(r store.Reader) error {
		for l, err := range r.SubagentLinks(c) {
			if err != nil {
				return err
			}
			links = append(links, l.ID)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("lossless: retain: %w", fromStore(err))
	}
	wb, err := e.batchMapped(ctx)
	if err != nil {
		return err
	}
	defer wb.Cancel()
	if err := wb.DeleteConversationData(c); err != nil {
		return fmt.Errorf("lossless: retain: %w", fromStore(err))
	}
	for _, sub := range links {
		if err := wb.DeleteSubagentLink(c, sub); err != nil {
			return fmt.Errorf("lossless: retain: %w", fromStore(err))
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("lossless: retain: %w", fromStore(err))
	}
	// Names, checkpoints and the record go together, under metaMu: a
	// session resolved meanwhile either finds the conversation whole or
	// creates it afresh after, never names without a record. metaMu comes
	// before a conversation's lock (resolve's order: it takes metaMu, then
	// the lock in addSessionID), so the lock is let go and taken again;
	// meanwhile the Retiring mark keeps every writer out. On a shared
	// store the agent's names lock goes with metaMu (as in resolve).
	s.unlock()
	locked = false
	e.metaMu.Lock()
	defer e.metaMu.Unlock()
	release, err := e.storeLock(context.WithoutCancel(ctx), namesLockName(now.Agent))
	if err != nil {
		return err
	}
	defer release()
	if s, err = e.lockShared(context.WithoutCancel(ctx), c); err != nil {
		return err
	}
	locked = true
	var names []store.Name
	var files []store.CheckpointRecord
	id := c.String()
	err = e.st.View(ctx, func(r store.Reader) error {
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
		return fmt.Errorf("lossless: retain: %w", fromStore(err))
	}
	last, err := e.batchMapped(ctx)
	if err != nil {
		return err
	}
	defer last.Cancel()
	for _, n := range names {
		if err := last.DeleteName(n); err != nil {
			return fmt.Errorf("lossless: retain: %w", fromStore(err))
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
			return fmt.Errorf("lossless: retain: %w", fromStore(err))
		}
	}
	if err := last.DeleteConversation(c); err != nil {
		return fmt.Errorf("lossless: retain: %w", fromStore(err))
	}
	if err := last.Flush(); err != nil {
		return fmt.Errorf("lossless: retain: %w", fromStore(err))
	}
	e.forgetIndexedConversation(now)
	// Forget cached state: resolution entries and the conversation state.
	e.forgetResolved(c)
	s.loaded = false
	s.rec = convRecord{}
	e.noteRecord(s)
	s.asmMu.Lock()
	s.asmMsgs, s.asmSums = nil, nil
	s.asmMu.Unlock()
	e.asmForget(s)
	return nil
}

// retiringErr is the error of a read of, or a write to, conversation c
// while it is being deleted by retention.
func retiringErr(c convID, sessionID string) error {
	return fmt.Errorf("lossless: session %q (conversation %s) is partly deleted by an interrupted retention pass; the next pass (lossless retain) finishes deleting it: %w",
		sessionID, c, ErrRetiring)
}
