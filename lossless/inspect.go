package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/inspect"
)

// Inspection: the list of conversations, a session's messages, the
// store's totals and the doctor's check are lossless/inspect's, over the
// store; the doors below enter the engine, resolve the session and hand
// over the store, the format version and the recall index's directory.

// Sessions lists the stored conversations of agent ("" = all agents),
// ordered by agent then creation.
func (e *Engine) Sessions(ctx context.Context, agent string) ([]inspect.SessionInfo, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return inspect.Sessions(ctx, e.st, agent)
}

// Messages calls fn with the stored messages of agent's session sessionID
// in order, bytes exactly as ingested. An error from fn stops and is
// returned.
func (e *Engine) Messages(ctx context.Context, agent, sessionID string, fn func(seq uint64, m core.Message) error) error {
	conv, err := e.Conversation(ctx, agent, sessionID)
	if err != nil {
		return err
	}
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	return inspect.Messages(ctx, e.st, conv.id, sessionID, fn)
}

// Stats returns per-agent totals and the disk size. It reads the
// conversation records only.
func (e *Engine) Stats(ctx context.Context) (inspect.Stats, error) {
	done, err := e.enter()
	if err != nil {
		return inspect.Stats{}, err
	}
	defer done()
	indexDir := "" // none without a store directory
	if e.cfg.StoreDir != "" {
		indexDir = e.indexDir()
	}
	return inspect.ReadStats(ctx, e.st, FormatVersion, indexDir)
}

// Check verifies the store's invariants, reading only (inspect.Check says
// what it reads): for every conversation, the summary DAG (dag.Check), the
// records that are not one per message, and with deep every message
// record as well. It changes nothing: no index rebuild, no retention pass.
func (e *Engine) Check(ctx context.Context, deep bool) (inspect.CheckResult, error) {
	done, err := e.enter()
	if err != nil {
		return inspect.CheckResult{}, err
	}
	defer done()
	return inspect.Check(ctx, e.st, deep)
}
