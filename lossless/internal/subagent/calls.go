package subagent

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// What the engine's subagent doors (package lossless's
// PrepareSubagentSpawn, OnSubagentEnded, SweepSubagents, Subagent and
// LinkedChildren) run once they have entered the engine, resolved the
// call's agent and sessions and, when they change records, taken
// Lifecycle.Lock: CheckSpawn and NewPreparation before the parent is
// looked up, Prepare (lifecycle.go) and Remove for a rollback, Ended,
// Sweep, Info, Children; for the rest of the engine Started and Holder.

// CheckSpawn refuses spawn parameters the engine cannot use (an error
// wrapping records.ErrBadParams, or core.ErrInvalidSessionID for a name no
// store keeps) and returns the context mode (core.ContextModeIsolated
// when none is given).
func CheckSpawn(sp core.SubagentSpawnParams) (string, error) {
	if sp.ChildSessionKey == "" {
		return "", fmt.Errorf("lossless: prepare subagent: empty childSessionKey: %w", records.ErrBadParams)
	}
	mode := sp.ContextMode
	switch mode {
	case "":
		mode = core.ContextModeIsolated
	case core.ContextModeIsolated, core.ContextModeFork:
	default:
		return "", fmt.Errorf("lossless: prepare subagent: context mode %q (want isolated or fork): %w", mode, records.ErrBadParams)
	}
	if sp.TTLMs < 0 {
		return "", fmt.Errorf("lossless: prepare subagent: negative ttlMs %d: %w", sp.TTLMs, records.ErrBadParams)
	}
	for _, f := range [...]struct{ field, v string }{{"childSessionKey", sp.ChildSessionKey}, {"childSessionId", sp.ChildSessionID},
		{"parentSessionKey", sp.ParentSessionKey}, {"parentSessionId", sp.ParentSessionID}} {
		if err := records.CheckName(f.field, f.v); err != nil {
			return "", err
		}
	}
	return mode, nil
}

// NewPreparation returns the id and the record of the preparation of
// spawn sp (checked by CheckSpawn, of context mode mode) of a child of
// agent whose parent is of parentAgent, made at now (Unix milliseconds)
// with a fresh token; the caller sets its ParentConv when the parent is
// stored.
func NewPreparation(agent, parentAgent, mode string, sp core.SubagentSpawnParams, now int64) (store.SubID, store.Subagent) {
	rec := store.Subagent{Agent: agent, ChildSessionKey: sp.ChildSessionKey, ChildSessionID: sp.ChildSessionID,
		ParentAgent: parentAgent, ParentKey: sp.ParentSessionKey, ParentSessionID: sp.ParentSessionID,
		Mode: mode, State: Prepared, Created: now, Token: NewToken()}
	if sp.TTLMs > 0 {
		rec.ExpiresAt = now + sp.TTLMs
	}
	return ID(agent, sp.ChildSessionKey), rec
}

// ImportsParent reports whether a spawn of mode whose parent session is
// not stored imports the parent's transcript (sp.ParentSessionFile) and
// looks the parent up again: a fork with a transcript file and a parent
// session id.
func ImportsParent(sp core.SubagentSpawnParams, mode string) bool {
	return mode == core.ContextModeFork && sp.ParentSessionFile != "" && !core.IsSessionRef(sp.ParentSessionFile) && sp.ParentSessionID != ""
}

// CheckEnded refuses end parameters without a child session key (an error
// wrapping records.ErrBadParams).
func CheckEnded(ep core.SubagentEndedParams) error {
	if ep.ChildSessionKey == "" {
		return fmt.Errorf("lossless: subagent ended: empty childSessionKey: %w", records.ErrBadParams)
	}
	return nil
}

// Ended handles the end of sub's child run for reason:
// core.SubagentDeleted and core.SubagentSwept remove the child's prepared
// state (Remove); core.SubagentCompleted and core.SubagentReleased keep
// its history and link it to the parent (End); another reason is refused
// (records.ErrBadParams). A child the engine never prepared is not an
// error. The caller holds Lock.
func (l Lifecycle) Ended(ctx context.Context, sub store.SubID, reason string) error {
	switch reason {
	case core.SubagentDeleted, core.SubagentSwept:
		return l.Remove(ctx, sub, "")
	case core.SubagentCompleted, core.SubagentReleased:
	default:
		return fmt.Errorf("lossless: subagent ended: reason %q (want deleted, completed, swept or released): %w", reason, records.ErrBadParams)
	}
	return l.End(ctx, sub, reason)
}

// Info returns the record of agent's child with session key childKey.
func (l Lifecycle) Info(ctx context.Context, agent, childKey string) (store.Subagent, bool, error) {
	var rec store.Subagent
	var ok bool
	err := l.St.View(ctx, func(r store.Reader) error {
		var err error
		rec, ok, err = Get(r, ID(agent, childKey))
		return err
	})
	return rec, ok, err
}

// Started returns the subagent record of an Assemble call's session (by
// key, else by the child session id alias): l when the call's window read
// it (l.Done), else read here in one batched read (Find). An expired
// preparation is swept and not returned; a prepared one is marked active
// under Lock, which it takes (the child started: Activate).
func (l Lifecycle) Started(ctx context.Context, lk Lookup, agent, sessionID, sessionKey string) (store.SubID, store.Subagent, bool, error) {
	if !lk.Done {
		var err error
		lk, err = l.Find(ctx, agent, sessionID, sessionKey)
		if err != nil || !lk.Done {
			return store.SubID{}, store.Subagent{}, false, err
		}
	}
	sub, rec, found := lk.ID, lk.Rec, lk.Found
	if !found || rec.State != Prepared {
		return sub, rec, found, nil
	}
	unlock, err := l.Lock(ctx)
	if err != nil {
		return sub, rec, false, err
	}
	defer unlock()
	rec, found, err = l.Activate(ctx, sub, rec)
	return sub, rec, found, err
}

// Children returns the conversations of the ended children linked to
// conversation parent (LinkedChildren, in a read of its own).
func (l Lifecycle) Children(ctx context.Context, parent store.ConvID) ([]store.ConvID, error) {
	var out []store.ConvID
	err := l.St.View(ctx, func(r store.Reader) error {
		var err error
		out, err = LinkedChildren(r, parent)
		return err
	})
	return out, err
}

// Holder returns the conversation that holds summary id (or the
// large-content reference records.LargeRefPrefix+"<key>") for a tool call
// made in conv, when it is not conv itself: a forked child's parent (the
// child sees the parent's summaries) when conv does not hold it, else an
// ended child linked to conv. ok is false when none of them does (the
// caller reads conv). A read that fails is returned: the holder is not
// guessed past it.
func (l Lifecycle) Holder(ctx context.Context, conv store.ConvID, id string) (holder store.ConvID, ok bool, err error) {
	// has reports whether c holds the record (whole or not: a damaged one
	// is c's too).
	has := func(r store.Reader, c store.ConvID) (bool, error) {
		if key, ok := bytes.CutPrefix([]byte(id), []byte(records.LargeRefPrefix)); ok {
			b, err := hex.DecodeString(string(key))
			if err != nil || len(b) != 16 {
				return false, nil // not a reference any conversation holds
			}
			var h store.Hash
			copy(h[:], b)
			_, err = r.SeqByHash(c, h)
			return found(err)
		}
		_, err := r.Summary(c, id)
		return found(err)
	}
	if err := l.St.View(ctx, func(r store.Reader) error {
		in, err := has(r, conv)
		if in || err != nil {
			return err
		}
		if pc, okp := ForkParent(r, conv); okp {
			in, err := has(r, pc)
			if err != nil {
				return err
			}
			holder, ok = pc, in
		}
		return nil
	}); err != nil {
		return store.ConvID{}, false, fmt.Errorf("subagent: which conversation holds %q: %w", id, err)
	}
	if ok {
		return holder, ok, nil
	}
	// The linked children are looked at even when conv holds it: a child
	// holding the same id wins.
	kids, err := l.Children(ctx, conv)
	if err != nil {
		return store.ConvID{}, false, fmt.Errorf("subagent: which conversation holds %q: %w", id, err)
	}
	for _, c := range kids {
		var in bool
		if err := l.St.View(ctx, func(r store.Reader) error {
			var err error
			in, err = has(r, c)
			return err
		}); err != nil {
			return store.ConvID{}, false, fmt.Errorf("subagent: which conversation holds %q: %w", id, err)
		}
		if in {
			return c, true, nil
		}
	}
	return store.ConvID{}, false, nil
}

// found maps a point read's error to "held": a record read whole or
// damaged is held (a damaged one is reported by the caller's own read); a
// missing one is not; any other error is returned.
func found(err error) (bool, error) {
	switch {
	case err == nil, errors.Is(err, store.ErrCorrupt):
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
}
