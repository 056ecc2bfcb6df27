package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/lossless/subagent"
	"github.com/lossless-engine/contextengine/store"
)

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

func (p subagentPort) Enter() (func(), error) { return p.e.enter() }

// Lock serialises subagent record changes: the engine's lock and, on a
// shared store, the store's.
func (p subagentPort) Lock(ctx context.Context) (func(), error) {
	return subagent.Lock(ctx, &p.e.subagents.mu, func(ctx context.Context) (func(), error) {
		return p.e.storeLock(ctx, subagentsLockName)
	})
}

func (p subagentPort) SweepOnce(ctx context.Context) { p.e.sweepOnce(ctx) }

func (p subagentPort) Agent(sessionKey string) string { return p.e.agentFor("", sessionKey) }

func (p subagentPort) Lookup(ctx context.Context, agent, sessionID, sessionKey string) (convID, error) {
	return p.e.lookup(ctx, agent, sessionID, sessionKey)
}

func (p subagentPort) Import(ctx context.Context, agent, sessionID, sessionKey, path string) error {
	_, err := p.e.importFile(ctx, agent, sessionID, sessionKey, path)
	return err
}

func (p subagentPort) BadParams() error { return ErrBadParams }

// sweepOnce sweeps expired preparations once per engine (engine.go's
// Open, Assemble and the subagent calls).
func (e *Engine) sweepOnce(ctx context.Context) {
	e.subagents.swept.Do(func() { _, _ = e.SweepSubagents(ctx) })
}

// The names other files of the package use (tools, read.go, tests).

// linkedChildren returns the conversations of the ended children linked to
// conversation parent (subagent.Children).
func (e *Engine) linkedChildren(ctx context.Context, parent convID) ([]convID, error) {
	return subagent.Children(ctx, subagentPort{e}, parent)
}

// convHolding returns the conversation that holds summary id (or the
// large-content reference "lcm-large:<key>") for a tool call made in conv
// (subagent.Holder): conv itself, else a forked child's parent, else an
// ended child linked to conv. conv when none does; a failed read is
// returned.
func (e *Engine) convHolding(ctx context.Context, conv *Conversation, id string) (*Conversation, error) {
	c, ok, err := subagent.Holder(ctx, subagentPort{e}, conv.id, id)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return &Conversation{e: e, id: c, Agent: conv.Agent}, nil
	}
	return conv, nil
}
