package orchestrate

import (
	"context"
	"errors"
	"log/slog"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
)

// AfterTurn starts a background compaction of the turn's conversation when
// none runs (or asks the running one to go again). The run compacts to
// contextThreshold × budget when the context is over it; it never blocks
// the turn, Assemble or Ingest.
func AfterTurn[C dag.Store](e Port[C], p core.AfterTurnParams) {
	agent, sessionID, sessionKey := e.Identity("", p.SessionID, p.SessionKey, p.SessionTarget)
	conv, err := e.Conversation(e.State().ctx, agent, sessionID, sessionKey)
	if err != nil {
		return
	}
	Start(e, conv, e.Budget(p.TokenBudget, p.RuntimeContext))
}

// Start starts a background compaction of conv against budget when none
// runs (or asks the running one to go again). A summarizer that needs the
// host's model (summarizer kind "host") cannot run in the background:
// Maintain, which the host calls after the commit with its model, compacts
// instead.
func Start[C dag.Store](e Port[C], conv C, budget int) {
	if HostSummarizer(e) {
		return
	}
	x := e.State()
	id := e.ID(conv)
	x.mu.Lock()
	if x.stopped {
		x.mu.Unlock()
		return
	}
	if x.running[id] {
		x.again[id] = true
		x.mu.Unlock()
		return
	}
	x.running[id] = true
	x.wg.Add(1)
	x.mu.Unlock()
	go func() {
		defer x.wg.Done()
		for {
			backgroundRun(e, x, conv, budget)
			x.mu.Lock()
			if !x.again[id] || x.stopped {
				delete(x.running, id)
				delete(x.again, id)
				x.mu.Unlock()
				return
			}
			delete(x.again, id)
			x.mu.Unlock()
		}
	}()
}

func backgroundRun[C dag.Store](e Port[C], x *State, conv C, budget int) {
	select {
	case x.sem <- struct{}{}:
	case <-x.ctx.Done():
		return
	}
	defer func() { <-x.sem }()
	items, err := conv.Items(x.ctx)
	if err != nil {
		return
	}
	if float64(dag.SumTokens(items)) <= e.Config().ContextThreshold*float64(budget) {
		return
	}
	out, err := Run(x.ctx, e, conv, dag.Target{Budget: budget, Mode: dag.ModeThreshold}, false)
	if errors.Is(err, ErrCompacting) {
		return // another process compacts it now
	}
	id := e.ID(conv)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, core.ErrClosed) {
		slog.Warn("lossless: background compaction failed", "conversation", id.String(), "err", err)
	}
	x.mu.Lock()
	x.last.Add(id, BackgroundResult{Result: out.Result, Err: err})
	x.mu.Unlock()
}
