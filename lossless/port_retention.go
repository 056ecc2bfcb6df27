package lossless

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/lossless-engine/contextengine/lossless/retention"
	"github.com/lossless-engine/contextengine/store"
)

// Retention: which conversations a pass deletes, their deletion and the
// periodic pass are lossless/retention's, reached through retentionPort
// below; the engine keeps the doors and starts and stops the loop in Open
// and Close.

// RetentionResult reports one retention pass (retention.Result).
type RetentionResult = retention.Result

// DeletedConversation is one conversation removed by Retain
// (retention.DeletedConversation).
type DeletedConversation = retention.DeletedConversation

// Retain applies Config.Retention (both limits are off by default) and
// removes orphaned conversations, those a stopped pass began to delete,
// and empty ones older than a day (retention.Retain says how each is
// chosen). now is the reference time (time.Now() when zero). A crash
// midway leaves a conversation that the next pass finishes deleting.
func (e *Engine) Retain(ctx context.Context, now time.Time) (RetentionResult, error) {
	return retention.Retain(ctx, retentionPort{e}, now, retention.Options{})
}

// RetainDryRun reports what Retain would delete at now, deleting nothing.
func (e *Engine) RetainDryRun(ctx context.Context, now time.Time) (RetentionResult, error) {
	return retention.Retain(ctx, retentionPort{e}, now, retention.Options{DryRun: true})
}

// retentionLoop is the open engine's periodic retention pass.
type retentionLoop = retention.Loop

// retentionFirstDelay and retentionUnit time the automatic pass: the first
// one retentionFirstDelay after Open, then every IntervalMinutes
// retentionUnits (tests shorten both: testHooks).
const retentionFirstDelay, retentionUnit = time.Minute, time.Minute

// startRetention starts the periodic retention pass (retention.Start).
func (e *Engine) startRetention() {
	e.retention = retention.Start(retentionPort{e}, retention.Timing{First: cmp.Or(e.cfg.hooks.retentionFirst, retentionFirstDelay),
		Unit: cmp.Or(e.cfg.hooks.retentionUnit, retentionUnit), DefaultIntervalMinutes: DefaultRetentionIntervalMinutes})
}

// stopRetention stops the periodic pass and waits for a pass in progress
// (cancelled) to end. Close calls it before taking the lifecycle lock that
// Retain holds shared.
func (e *Engine) stopRetention() { e.retention.Stop() }

// retiringErr is the error of a read of, or a write to, conversation c
// while it is being deleted by retention.
func retiringErr(c convID, sessionID string) error {
	return fmt.Errorf("lossless: session %q (conversation %s) is partly deleted by an interrupted retention pass; the next pass (lossless retain) finishes deleting it: %w",
		sessionID, c, ErrRetiring)
}

// retentionPort is the engine as lossless/retention's Port.
type retentionPort struct{ e *Engine }

var _ retention.Port = retentionPort{}

func (p retentionPort) Limits() retention.Limits {
	r := p.e.cfg.Retention
	return retention.Limits{MaxAgeDays: r.MaxAgeDays, MaxBytesPerAgent: r.MaxBytesPerAgent, IntervalMinutes: r.IntervalMinutes}
}

func (p retentionPort) Enter() (func(), error) { return p.e.enter() }

func (p retentionPort) View(ctx context.Context, fn func(store.Reader) error) error {
	return p.e.st.View(ctx, fn)
}

func (p retentionPort) Update(ctx context.Context, fn func(store.Tx) error) error {
	return p.e.updateMapped(ctx, fn)
}

func (p retentionPort) Batch(ctx context.Context) (store.Batch, error) { return p.e.batchMapped(ctx) }

func (retentionPort) MessageTimes(r store.Reader, c store.ConvID, rec store.Conversation) (int64, int64, error) {
	return messageTimes(r, c, rec)
}

func (p retentionPort) BeforeDelete() {
	if hook := p.e.cfg.hooks.retainBeforeDelete; hook != nil {
		hook()
	}
}

func (p retentionPort) Lock(ctx context.Context, c store.ConvID) (retention.Held, error) {
	s, err := p.e.lockShared(ctx, c)
	if err != nil {
		return nil, err
	}
	return retentionHeld{e: p.e, c: c, s: s}, nil
}

// LockNames takes metaMu, then the agent's names lock in a shared store
// (resolve's order: metaMu comes before a conversation's lock).
func (p retentionPort) LockNames(ctx context.Context, agent string) (func(), error) {
	return p.e.lockNames(ctx, agent)
}

func (p retentionPort) Unindex(ctx context.Context, c store.ConvID) error {
	return p.e.unindexConversation(ctx, c)
}

// retentionHeld is conversation c's state s, locked by lockShared.
type retentionHeld struct {
	e *Engine
	c convID
	s *convState
}

func (h retentionHeld) Unlock() { h.s.unlock() }

func (h retentionHeld) MarkRetiring() {
	if h.s.loaded {
		h.s.rec.Retiring = true
	}
}

// Forget forgets cached state: the recall index's entry, resolution
// entries and the conversation state.
func (h retentionHeld) Forget(rec store.Conversation) {
	e, s := h.e, h.s
	e.forgetIndexedConversation(rec)
	e.forgetResolved(h.c)
	s.loaded = false
	s.rec = convRecord{}
	e.noteRecord(s)
	// The window is the cached state's, which may be another than s
	// (s evicted while held: the locks are not the cache's).
	w, unlock := e.lockWindow(h.c)
	w.asmMsgs, w.asmSums = nil, nil
	unlock()
	e.asmForget(w)
}
