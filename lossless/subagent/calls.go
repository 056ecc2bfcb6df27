package subagent

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
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// The engine's subagent calls (package lossless's PrepareSubagentSpawn,
// OnSubagentEnded, SweepSubagents, Subagent and LinkedChildren are thin
// wrappers of these): each enters the engine and, when it changes records,
// takes the engine's subagent lock.

// Spawn is PrepareSubagentSpawn: it sets up the state of a child run.
// Context mode "fork": the child's context starts from the parent's active
// context at this moment (a snapshot of references, Snapshot); "isolated"
// (the default): the child starts empty. sp.TTLMs > 0 bounds how long the
// preparation lives if the child never starts. A fork of a parent the
// engine never saw imports the parent's transcript (sp.ParentSessionFile)
// first. The returned Rollback removes everything this preparation created
// and is safe to call more than once. Nothing of the parent is written.
func Spawn(ctx context.Context, p Port, sp core.SubagentSpawnParams) (*core.SubagentPreparation, error) {
	p.SweepOnce(ctx)
	done, err := p.Enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if sp.ChildSessionKey == "" {
		return nil, fmt.Errorf("lossless: prepare subagent: empty childSessionKey: %w", p.BadParams())
	}
	mode := sp.ContextMode
	switch mode {
	case "":
		mode = core.ContextModeIsolated
	case core.ContextModeIsolated, core.ContextModeFork:
	default:
		return nil, fmt.Errorf("lossless: prepare subagent: context mode %q (want isolated or fork): %w", mode, p.BadParams())
	}
	if sp.TTLMs < 0 {
		return nil, fmt.Errorf("lossless: prepare subagent: negative ttlMs %d: %w", sp.TTLMs, p.BadParams())
	}
	for _, f := range [...]struct{ field, v string }{{"childSessionKey", sp.ChildSessionKey}, {"childSessionId", sp.ChildSessionID},
		{"parentSessionKey", sp.ParentSessionKey}, {"parentSessionId", sp.ParentSessionID}} {
		if err := records.CheckName(f.field, f.v); err != nil {
			return nil, err
		}
	}
	agent := p.Agent(sp.ChildSessionKey)
	parentAgent := p.Agent(sp.ParentSessionKey)
	sub := ID(agent, sp.ChildSessionKey)
	now := time.Now().UnixMilli()
	rec := store.Subagent{Agent: agent, ChildSessionKey: sp.ChildSessionKey, ChildSessionID: sp.ChildSessionID,
		ParentAgent: parentAgent, ParentKey: sp.ParentSessionKey, ParentSessionID: sp.ParentSessionID,
		Mode: mode, State: Prepared, Created: now, Token: NewToken()}
	if sp.TTLMs > 0 {
		rec.ExpiresAt = now + sp.TTLMs
	}
	var parent store.ConvID
	haveParent := false
	if sp.ParentSessionID != "" || sp.ParentSessionKey != "" {
		parent, err = p.Lookup(ctx, parentAgent, sp.ParentSessionID, sp.ParentSessionKey)
		if errors.Is(err, core.ErrUnknownSession) && mode == core.ContextModeFork && sp.ParentSessionFile != "" && !core.IsSessionRef(sp.ParentSessionFile) && sp.ParentSessionID != "" {
			// A parent the engine never saw: import its transcript first.
			if ierr := p.Import(ctx, parentAgent, sp.ParentSessionID, sp.ParentSessionKey, sp.ParentSessionFile); ierr != nil && !errors.Is(ierr, os.ErrNotExist) {
				return nil, ierr
			}
			parent, err = p.Lookup(ctx, parentAgent, sp.ParentSessionID, sp.ParentSessionKey)
		}
		switch {
		case err == nil:
			haveParent = true
			rec.ParentConv = parent.String()
		case !errors.Is(err, core.ErrUnknownSession):
			return nil, err
		}
	}
	unlock, err := p.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var parentOf *store.ConvID
	if haveParent {
		parentOf = &parent
	}
	if err := Prepare(ctx, p, sub, rec, parentOf); err != nil {
		return nil, err
	}
	token := rec.Token
	return &core.SubagentPreparation{Rollback: func(ctx context.Context) error {
		done, err := p.Enter()
		if err != nil {
			return err
		}
		defer done()
		unlock, err := p.Lock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
		return Remove(ctx, p, sub, token)
	}}, nil
}

// OnEnded is OnSubagentEnded: it handles the end of a child run.
// core.SubagentDeleted and core.SubagentSwept remove the child's prepared
// state (Remove); core.SubagentCompleted and core.SubagentReleased keep
// its history and link it to the parent (End). A child the engine never
// prepared is not an error.
func OnEnded(ctx context.Context, p Port, ep core.SubagentEndedParams) error {
	done, err := p.Enter()
	if err != nil {
		return err
	}
	defer done()
	if ep.ChildSessionKey == "" {
		return fmt.Errorf("lossless: subagent ended: empty childSessionKey: %w", p.BadParams())
	}
	agent := p.Agent(ep.ChildSessionKey)
	sub := ID(agent, ep.ChildSessionKey)
	unlock, err := p.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	switch ep.Reason {
	case core.SubagentDeleted, core.SubagentSwept:
		return Remove(ctx, p, sub, "")
	case core.SubagentCompleted, core.SubagentReleased:
	default:
		return fmt.Errorf("lossless: subagent ended: reason %q (want deleted, completed, swept or released): %w", ep.Reason, p.BadParams())
	}
	return End(ctx, p, sub, ep.Reason)
}

// SweepExpired is SweepSubagents: Sweep under the engine's subagent lock.
// It returns how many preparations it removed.
func SweepExpired(ctx context.Context, p Port) (int, error) {
	done, err := p.Enter()
	if err != nil {
		return 0, err
	}
	defer done()
	unlock, err := p.Lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return Sweep(ctx, p)
}

// Info returns the record of the child with session key childKey.
func Info(ctx context.Context, p Port, childKey string) (store.Subagent, bool, error) {
	done, err := p.Enter()
	if err != nil {
		return store.Subagent{}, false, err
	}
	defer done()
	var rec store.Subagent
	var ok bool
	err = p.View(ctx, func(r store.Reader) error {
		var err error
		rec, ok, err = Get(r, ID(p.Agent(childKey), childKey))
		return err
	})
	return rec, ok, err
}

// Started returns the subagent record of an Assemble call's session (by
// key, else by the child session id alias): l when the call's window read
// it (l.Done), else read here in one batched read (Find). An expired
// preparation is swept and not returned; a prepared one is marked active
// under the engine's subagent lock (the child started: Activate).
func Started(ctx context.Context, p Port, l Lookup, agent, sessionID, sessionKey string) (store.SubID, store.Subagent, bool, error) {
	if !l.Done {
		var err error
		l, err = Find(ctx, p, agent, sessionID, sessionKey)
		if err != nil || !l.Done {
			return store.SubID{}, store.Subagent{}, false, err
		}
	}
	sub, rec, found := l.ID, l.Rec, l.Found
	if !found || rec.State != Prepared {
		return sub, rec, found, nil
	}
	unlock, err := p.Lock(ctx)
	if err != nil {
		return sub, rec, false, err
	}
	defer unlock()
	rec, found, err = Activate(ctx, p, sub, rec)
	return sub, rec, found, err
}

// Children returns the conversations of the ended children linked to
// conversation parent (LinkedChildren, in a read of its own).
func Children(ctx context.Context, p Port, parent store.ConvID) ([]store.ConvID, error) {
	var out []store.ConvID
	err := p.View(ctx, func(r store.Reader) error {
		var err error
		out, err = LinkedChildren(r, parent)
		return err
	})
	return out, err
}

// Linked is package lossless's LinkedChildren: the conversation ids (hex)
// of the ended subagents linked to the session's conversation.
func Linked(ctx context.Context, p Port, sessionID, sessionKey string) ([]string, error) {
	done, err := p.Enter()
	if err != nil {
		return nil, err
	}
	defer done()
	c, err := p.Lookup(ctx, p.Agent(sessionKey), sessionID, sessionKey)
	if err != nil {
		return nil, err
	}
	var out []string
	kids, err := Children(ctx, p, c)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		out = append(out, k.String())
	}
	return out, nil
}

// Holder returns the conversation that holds summary id (or the
// large-content reference records.LargeRefPrefix+"<key>") for a tool call
// made in conv, when it is not conv itself: a forked child's parent (the
// child sees the parent's summaries) when conv does not hold it, else an
// ended child linked to conv. ok is false when none of them does (the
// caller reads conv). A read that fails is returned: the holder is not
// guessed past it.
func Holder(ctx context.Context, p Port, conv store.ConvID, id string) (holder store.ConvID, ok bool, err error) {
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
	if err := p.View(ctx, func(r store.Reader) error {
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
	kids, err := Children(ctx, p, conv)
	if err != nil {
		return store.ConvID{}, false, fmt.Errorf("subagent: which conversation holds %q: %w", id, err)
	}
	for _, c := range kids {
		var in bool
		if err := p.View(ctx, func(r store.Reader) error {
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

// Lock locks mu, the engine's lock of subagent record changes, then the
// store's (storeLock: on a shared store, the lock other processes take).
// The returned func releases both.
func Lock(ctx context.Context, mu *sync.Mutex, storeLock func(context.Context) (func(), error)) (func(), error) {
	mu.Lock()
	release, err := storeLock(ctx)
	if err != nil {
		mu.Unlock()
		return nil, err
	}
	return func() {
		release()
		mu.Unlock()
	}, nil
}
