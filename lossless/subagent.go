package lossless

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/subagent"
	"github.com/lossless-engine/contextengine/store"
)

// Subagents: PrepareSubagentSpawn, OnSubagentEnded, SweepSubagents — the
// engine's doors and locks. The records, fork snapshots, removal, sweep and
// fork caches are lossless/subagent's (its package doc describes the
// records), reached through subagentPort below. The child's own messages
// are stored under the child's conversation by the ordinary write path.
// Assemble of a forked child returns its own context after the parent's
// snapshot (the snapshot fills what the child's own context leaves of the
// budget, newest first; nothing of the parent is read beyond that).
// Nothing of the parent is ever written.

// Subagent states (SubagentInfo.State).
const (
	// SubagentPrepared: prepared, the child has not started; the TTL runs.
	SubagentPrepared = subagent.Prepared
	// SubagentActive: the child started (assembled or stored a message).
	SubagentActive = subagent.Active
	// SubagentEnded: the child completed or was released; its history is
	// linked to the parent.
	SubagentEnded = subagent.Ended
)

type subID = store.SubID

// subIDOf is subagent.ID.
var subIDOf = subagent.ID

// SubagentInfo is the stored record of a subagent preparation
// (store.Subagent).
type SubagentInfo = store.Subagent

var (
	_ core.SubagentSpawner     = (*Engine)(nil)
	_ core.SubagentEndListener = (*Engine)(nil)
)

// subagents is the subagent state of one Engine (its subagents field; the
// zero value is ready).
type subagents struct {
	// mu serialises subagent record changes.
	mu sync.Mutex
	// swept sweeps expired preparations once since open (Open, or the
	// first subagent call or Assemble of a read-only engine).
	swept sync.Once
	// forks holds the fork caches of the most recently assembled forks
	// (maxForkCaches; a forgotten one is parsed again at its next assemble).
	forks subagent.Forks
}

// subagentPort is the engine as lossless/subagent's Port.
type subagentPort struct{ e *Engine }

var _ subagent.Port = subagentPort{}

func (p subagentPort) View(ctx context.Context, fn func(store.Reader) error) error {
	return p.e.st.View(ctx, fn)
}

func (p subagentPort) Update(ctx context.Context, fn func(store.Tx) error) error {
	return p.e.updateMapped(ctx, fn)
}

func (p subagentPort) Batch(ctx context.Context) (store.Batch, error) { return p.e.batchMapped(ctx) }

func (p subagentPort) Forks() *subagent.Forks { return &p.e.subagents.forks }

// lockSubagents serialises subagent record changes: the engine's lock and,
// on a shared store, the store's. The returned func releases both.
func (e *Engine) lockSubagents(ctx context.Context) (func(), error) {
	mu := &e.subagents.mu
	mu.Lock()
	release, err := e.storeLock(ctx, subagentsLockName)
	if err != nil {
		mu.Unlock()
		return nil, err
	}
	return func() {
		release()
		mu.Unlock()
	}, nil
}

func (e *Engine) sweepOnce(ctx context.Context) {
	e.subagents.swept.Do(func() { _, _ = e.SweepSubagents(ctx) })
}

// PrepareSubagentSpawn sets up the state of a child run. contextMode
// "fork": the child's context starts from the parent's active context at
// this moment — a snapshot of references to the parent's messages and
// summaries, not copies — followed by the child's own messages, which are
// stored under the child's session; "isolated" (the default): the child
// starts empty. ttlMs > 0 bounds how long the preparation lives if the
// child never starts (first Assemble or stored message of the child): an
// expired preparation is removed by the next access or SweepSubagents.
// The returned Rollback removes everything this preparation created and is
// safe to call more than once. Preparing a child again replaces its
// previous preparation. Nothing of the parent is written.
func (e *Engine) PrepareSubagentSpawn(ctx context.Context, p core.SubagentSpawnParams) (*core.SubagentPreparation, error) {
	e.sweepOnce(ctx)
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if p.ChildSessionKey == "" {
		return nil, fmt.Errorf("lossless: prepare subagent: empty childSessionKey: %w", ErrBadParams)
	}
	mode := p.ContextMode
	switch mode {
	case "":
		mode = core.ContextModeIsolated
	case core.ContextModeIsolated, core.ContextModeFork:
	default:
		return nil, fmt.Errorf("lossless: prepare subagent: context mode %q (want isolated or fork): %w", mode, ErrBadParams)
	}
	if p.TTLMs < 0 {
		return nil, fmt.Errorf("lossless: prepare subagent: negative ttlMs %d: %w", p.TTLMs, ErrBadParams)
	}
	for _, f := range [...]struct{ field, v string }{{"childSessionKey", p.ChildSessionKey}, {"childSessionId", p.ChildSessionID},
		{"parentSessionKey", p.ParentSessionKey}, {"parentSessionId", p.ParentSessionID}} {
		if err := checkName(f.field, f.v); err != nil {
			return nil, err
		}
	}
	agent := e.agentFor("", p.ChildSessionKey)
	parentAgent := e.agentFor("", p.ParentSessionKey)
	sub := subIDOf(agent, p.ChildSessionKey)
	now := time.Now().UnixMilli()
	rec := SubagentInfo{Agent: agent, ChildSessionKey: p.ChildSessionKey, ChildSessionID: p.ChildSessionID,
		ParentAgent: parentAgent, ParentKey: p.ParentSessionKey, ParentSessionID: p.ParentSessionID,
		Mode: mode, State: SubagentPrepared, Created: now, Token: subagent.NewToken()}
	if p.TTLMs > 0 {
		rec.ExpiresAt = now + p.TTLMs
	}
	var parent convID
	haveParent := false
	if p.ParentSessionID != "" || p.ParentSessionKey != "" {
		parent, err = e.lookup(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey)
		if errors.Is(err, core.ErrUnknownSession) && mode == core.ContextModeFork && p.ParentSessionFile != "" && !core.IsSessionRef(p.ParentSessionFile) && p.ParentSessionID != "" {
			// A parent the engine never saw: import its transcript first.
			if _, ierr := e.importFile(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey, p.ParentSessionFile); ierr != nil && !errors.Is(ierr, os.ErrNotExist) {
				return nil, ierr
			}
			parent, err = e.lookup(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey)
		}
		switch {
		case err == nil:
			haveParent = true
			rec.ParentConv = parent.String()
		case !errors.Is(err, core.ErrUnknownSession):
			return nil, err
		}
	}
	unlock, err := e.lockSubagents(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var parentOf *convID
	if haveParent {
		parentOf = &parent
	}
	if err := subagent.Prepare(ctx, subagentPort{e}, sub, rec, parentOf); err != nil {
		return nil, err
	}
	token := rec.Token
	return &core.SubagentPreparation{Rollback: func(ctx context.Context) error {
		done, err := e.enter()
		if err != nil {
			return err
		}
		defer done()
		unlock, err := e.lockSubagents(ctx)
		if err != nil {
			return err
		}
		defer unlock()
		return e.removeSub(ctx, sub, token)
	}}, nil
}

// getSub is subagent.Get.
var getSub = subagent.Get

// removeSub is subagent.Remove.
func (e *Engine) removeSub(ctx context.Context, sub subID, token string) error {
	return subagent.Remove(ctx, subagentPort{e}, sub, token)
}

// OnSubagentEnded handles the end of a child run. "deleted" and "swept"
// remove the child's prepared state (record and fork snapshot; messages
// the child stored stay in its own conversation, unlinked). "completed"
// and "released" keep the child's history and link it to the parent: the
// parent's Grep (conversation scope) searches it, the parent's
// DescribeSummary/ExpandSummary resolve its summaries and large-content
// ids, and recall finds it as another conversation of the agent. A child
// the engine never prepared is not an error.
func (e *Engine) OnSubagentEnded(ctx context.Context, p core.SubagentEndedParams) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	if p.ChildSessionKey == "" {
		return fmt.Errorf("lossless: subagent ended: empty childSessionKey: %w", ErrBadParams)
	}
	agent := e.agentFor("", p.ChildSessionKey)
	sub := subIDOf(agent, p.ChildSessionKey)
	unlock, err := e.lockSubagents(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	switch p.Reason {
	case core.SubagentDeleted, core.SubagentSwept:
		return e.removeSub(ctx, sub, "")
	case core.SubagentCompleted, core.SubagentReleased:
	default:
		return fmt.Errorf("lossless: subagent ended: reason %q (want deleted, completed, swept or released): %w", p.Reason, ErrBadParams)
	}
	return subagent.End(ctx, subagentPort{e}, sub, p.Reason)
}

// SweepSubagents removes the preparations whose TTL expired while their
// child never started, and fork snapshots left without a record by a
// crash. It returns how many preparations it removed. The engine also
// sweeps once after open (first Assemble or subagent call) and whenever it
// meets an expired preparation.
func (e *Engine) SweepSubagents(ctx context.Context) (int, error) {
	done, err := e.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	unlock, err := e.lockSubagents(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return subagent.Sweep(ctx, subagentPort{e})
}

// Subagent returns the record of the child with session key childKey.
func (e *Engine) Subagent(ctx context.Context, childKey string) (SubagentInfo, bool, error) {
	done, err := e.enter()
	if err != nil {
		return SubagentInfo{}, false, err
	}
	defer done()
	var rec SubagentInfo
	var ok bool
	err = e.st.View(ctx, func(r store.Reader) error {
		var err error
		rec, ok, err = getSub(r, subIDOf(e.agentFor("", childKey), childKey))
		return err
	})
	return rec, ok, err
}

// subFor finds the subagent record of an Assemble call's session (by key,
// else by the child session id alias), read with the call's window when
// it had one (call.sub), else here in one batched read. An expired
// preparation is swept and not returned; a prepared one is marked active
// (the child started).
func (e *Engine) subFor(ctx context.Context, call *assembleCall) (subID, SubagentInfo, bool, error) {
	l := call.Sub
	if !l.Done {
		var err error
		l, err = subagent.Find(ctx, subagentPort{e}, call.Agent, call.Params.SessionID, call.Params.SessionKey)
		if err != nil || !l.Done {
			return subID{}, SubagentInfo{}, false, err
		}
	}
	sub, rec, found := l.ID, l.Rec, l.Found
	if !found || rec.State != SubagentPrepared {
		return sub, rec, found, nil
	}
	unlock, err := e.lockSubagents(ctx)
	if err != nil {
		return sub, rec, false, err
	}
	defer unlock()
	rec, found, err = subagent.Activate(ctx, subagentPort{e}, sub, rec)
	return sub, rec, found, err
}

// forkPrefix prepends a forked child's parent snapshot to res, newest
// first within what res leaves of budget, starting at a whole turn (never
// a tool result whose call is cut off).
func (e *Engine) forkPrefix(ctx context.Context, call *assembleCall, budget int, res *core.AssembleResult) error {
	sub, rec, ok, err := e.subFor(ctx, call)
	if err != nil || !ok || rec.Mode != core.ContextModeFork || rec.SnapshotItems == 0 {
		return err
	}
	parent, okp := parseConvID(rec.ParentConv)
	if !okp {
		return nil
	}
	avail := budget - res.EstimatedTokens
	if avail <= 0 {
		return nil
	}
	// The messages of the last assembly of this fork, reused (the
	// snapshot never changes; only the budget's cut moves).
	cache := e.forkCache(sub)
	cache.Mu.Lock()
	defer cache.Mu.Unlock()
	if cache.Token != rec.Token {
		// Another preparation of the child (by another process of a
		// shared store, or before a removal this one missed).
		cache.Msgs, cache.Sums, cache.Token = nil, nil, rec.Token
	}
	nextMsgs := make(map[uint64]core.Message, len(cache.Msgs))
	nextSums := make(map[string]core.Message, len(cache.Sums))
	var win window
	err = e.st.View(ctx, func(r store.Reader) (err error) {
		// The store scans a snapshot forward only: its items (small
		// records, references) are read first, then walked newest first.
		var items []store.Item
		for it, err := range r.ForkItems(sub) {
			if err != nil {
				return fromStore(err)
			}
			items = append(items, it)
		}
		win, err = budgetWalk(ctx, subagent.Reversed(items), avail, "assemble fork",
			func(_ int, item dag.Item, flags byte) (core.Message, error) {
				var m core.Message
				var err error
				if item.IsSummary() {
					m, err = e.summaryMessage(r, parent, item.Ref.ID, cache.Sums)
					nextSums[item.Ref.ID] = m
				} else {
					m, err = e.itemMessage(r, parent, item.Ref.Seq, flags, cache.Msgs)
					nextMsgs[item.Ref.Seq] = m
				}
				if err != nil {
					return m, fmt.Errorf("lossless: assemble fork of %s: %w", rec.ChildSessionKey, err)
				}
				return m, nil
			}, nil)
		return err
	})
	if err != nil || len(win.rev) == 0 {
		return err
	}
	cache.Msgs, cache.Sums = nextMsgs, nextSums
	prefix, used := win.chronological()
	res.Messages = append(prefix, res.Messages...)
	res.EstimatedTokens += used
	return nil
}

// maxForkCaches bounds the fork caches kept (subagent.MaxForkCaches).
const maxForkCaches = subagent.MaxForkCaches

// forkCache returns sub's fork cache (subagent.Forks.Get).
func (e *Engine) forkCache(sub subID) *subagent.ForkCache { return e.subagents.forks.Get(sub) }

// linkedChildren returns the conversations of the ended children linked to
// conversation parent (subagent.LinkedChildren).
func (e *Engine) linkedChildren(ctx context.Context, parent convID) ([]convID, error) {
	var out []convID
	err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		out, err = subagent.LinkedChildren(r, parent)
		return err
	})
	return out, err
}

// LinkedChildren returns the conversation ids (hex) of the ended subagents
// linked to the session's conversation.
func (e *Engine) LinkedChildren(ctx context.Context, sessionID, sessionKey string) ([]string, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	c, err := e.lookup(ctx, e.agentFor("", sessionKey), sessionID, sessionKey)
	if err != nil {
		return nil, err
	}
	var out []string
	kids, err := e.linkedChildren(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		out = append(out, k.String())
	}
	return out, nil
}

// forkParent returns the parent conversation of a forked child's
// conversation (subagent.ForkParent), if any.
func (e *Engine) forkParent(r store.Reader, conv *Conversation) (convID, bool) {
	return subagent.ForkParent(r, conv.id)
}

// convHolding returns the conversation that holds summary id (or the
// large-content reference "lcm-large:<key>") for a tool call made in conv:
// conv itself, else a forked child's parent (the child sees the parent's
// summaries), else an ended child linked to conv. conv when none does.
func (e *Engine) convHolding(ctx context.Context, conv *Conversation, id string) *Conversation {
	// has reports whether c holds the record (whole or not: a damaged one
	// is c's too).
	has := func(r store.Reader, c convID) bool {
		if key, ok := bytes.CutPrefix([]byte(id), []byte(LargeRefPrefix)); ok {
			b, err := hex.DecodeString(string(key))
			if err != nil || len(b) != 16 {
				return false
			}
			var h msgHash
			copy(h[:], b)
			_, err = r.SeqByHash(c, h)
			return err == nil || errors.Is(err, store.ErrCorrupt)
		}
		_, err := r.Summary(c, id)
		return err == nil || errors.Is(err, store.ErrCorrupt)
	}
	out := conv
	_ = e.st.View(ctx, func(r store.Reader) error {
		if has(r, conv.id) {
			return nil
		}
		if pc, ok := e.forkParent(r, conv); ok && has(r, pc) {
			out = &Conversation{e: e, id: pc, Agent: conv.Agent}
			return nil
		}
		return nil
	})
	if out != conv {
		return out
	}
	kids, _ := e.linkedChildren(ctx, conv.id) // a read error: the owner is conv itself, which the caller reads next
	for _, c := range kids {
		found := false
		_ = e.st.View(ctx, func(r store.Reader) error { found = has(r, c); return nil })
		if found {
			return &Conversation{e: e, id: c, Agent: conv.Agent}
		}
	}
	return conv
}
