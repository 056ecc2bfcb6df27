package lossless

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/subagent"
	"github.com/lossless-engine/contextengine/store"
)

// Subagents: PrepareSubagentSpawn, OnSubagentEnded, SweepSubagents — the
// engine's doors: they enter the engine, resolve the call's agent and the
// parent's conversation (importing its transcript when needed), take the
// subagent lock and run lossless/internal/subagent's steps over the engine's store
// (a subagent.Lifecycle made from its fields; the package doc describes
// the records). The
// child's own messages are stored under the child's conversation by the
// ordinary write path. Assemble of a forked child returns its own context
// after the parent's snapshot (lossless/internal/assemble's fork prefix: the
// snapshot fills what the child's own context leaves of the budget, newest
// first; nothing of the parent is read beyond that). Nothing of the parent
// is ever written.

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
	mode, err := subagent.CheckSpawn(p)
	if err != nil {
		return nil, err
	}
	parentAgent := e.agentFor("", p.ParentSessionKey)
	sub, rec := subagent.NewPreparation(e.agentFor("", p.ChildSessionKey), parentAgent, mode, p, time.Now().UnixMilli())
	var parent *convID
	if p.ParentSessionID != "" || p.ParentSessionKey != "" {
		c, err := e.lookup(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey)
		if errors.Is(err, core.ErrUnknownSession) && subagent.ImportsParent(p, mode) {
			// A parent the engine never saw: import its transcript first.
			if _, ierr := e.importFile(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey, p.ParentSessionFile); ierr != nil && !errors.Is(ierr, os.ErrNotExist) {
				return nil, ierr
			}
			c, err = e.lookup(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey)
		}
		switch {
		case err == nil:
			parent = &c
			rec.ParentConv = c.String()
		case !errors.Is(err, core.ErrUnknownSession):
			return nil, err
		}
	}
	l := e.subagentLifecycle()
	unlock, err := l.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := l.Prepare(ctx, sub, rec, parent); err != nil {
		return nil, err
	}
	token := rec.Token
	return &core.SubagentPreparation{Rollback: func(ctx context.Context) error {
		done, err := e.enter()
		if err != nil {
			return err
		}
		defer done()
		unlock, err := l.Lock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
		return l.Remove(ctx, sub, token)
	}}, nil
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
	if err := subagent.CheckEnded(p); err != nil {
		return err
	}
	sub := subagent.ID(e.agentFor("", p.ChildSessionKey), p.ChildSessionKey)
	l := e.subagentLifecycle()
	unlock, err := l.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return l.Ended(ctx, sub, p.Reason)
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
	l := e.subagentLifecycle()
	unlock, err := l.Lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return l.Sweep(ctx)
}

// Subagent returns the record of the child with session key childKey.
func (e *Engine) Subagent(ctx context.Context, childKey string) (store.Subagent, bool, error) {
	done, err := e.enter()
	if err != nil {
		return store.Subagent{}, false, err
	}
	defer done()
	return e.subagentLifecycle().Info(ctx, e.agentFor("", childKey), childKey)
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
	kids, err := e.linkedChildren(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kids {
		out = append(out, k.String())
	}
	return out, nil
}

// subagentLifecycle is the engine's subagent records: its store, free-space
// guard, fork caches and subagent lock.
func (e *Engine) subagentLifecycle() subagent.Lifecycle {
	return subagent.Lifecycle{St: e.st, Space: e.space, Forks: &e.subagents.forks, Mu: &e.subagents.mu, Locker: e.locker}
}

// sweepOnce sweeps expired preparations once per engine (engine.go's
// Open, Assemble and the subagent calls).
func (e *Engine) sweepOnce(ctx context.Context) {
	e.subagents.swept.Do(func() { _, _ = e.SweepSubagents(ctx) })
}

// linkedChildren returns the conversations of the ended children linked to
// conversation parent (subagent.Lifecycle.Children).
func (e *Engine) linkedChildren(ctx context.Context, parent convID) ([]convID, error) {
	return e.subagentLifecycle().Children(ctx, parent)
}

// convHolding returns the conversation that holds summary id (or the
// large-content reference "lcm-large:<key>") for a tool call made in conv
// (subagent.Lifecycle.Holder): conv itself, else a forked child's parent,
// else an ended child linked to conv. conv when none does; a failed read is
// returned.
func (e *Engine) convHolding(ctx context.Context, conv *Conversation, id string) (*Conversation, error) {
	c, ok, err := e.subagentLifecycle().Holder(ctx, conv.id, id)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return &Conversation{e: e, id: c, Agent: conv.Agent}, nil
	}
	return conv, nil
}
