package lossless

import (
	"context"
	"fmt"
	"time"

	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/store"
)

// Transcript rotation: when the active transcript grows past
// Config.RotateBytes (or on request), compaction writes a successor session
// file — a header naming the old file as parentSession, a compaction entry
// with the summary, then the kept tail — under a new session id mapped to
// the same conversation. The old file is never touched.
//
// Crash safety: the successor is written atomically (temporary file, sync,
// link) before the store maps its session id, in one transaction. A crash
// before the mapping leaves an unused successor file beside an intact old
// session (the host never heard of it); a crash after it leaves both ids
// naming the same conversation. Nothing is deleted at any point. The
// decision and the successor file are lossless/orchestrate's (Compact,
// ShouldRotate); the engine maps the successor's session (mapSession).

// RotateParams are the arguments of Rotate.
type RotateParams = orchestrate.RotateParams

// Rotate compacts the session (forced, to the budget) and rotates its
// transcript: see Compact.
func (e *Engine) Rotate(ctx context.Context, p RotateParams) (RotateResult, error) {
	return orchestrate.Rotate[*Conversation](ctx, orchestratePort{e}, p)
}

// mapSession maps session id newID of agent to conv and records the
// successor's import checkpoint, in one transaction (name key, the
// conversation's session list, checkpoint).
func (e *Engine) mapSession(ctx context.Context, conv *Conversation, agent, newID, cpPath string, cp checkpoint) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	release, err := e.lockNames(ctx, agent) // the names of agent, as resolve
	if err != nil {
		return err
	}
	defer release()
	st, err := e.lockConv(ctx, conv.id)
	if err != nil {
		return err
	}
	defer st.unlock()
	rec := st.rec
	rec.SessionIDs = append(append([]string(nil), rec.SessionIDs...), newID)
	rec.Updated = time.Now().UnixMilli()
	err = e.storeUpdate(ctx, func(tx store.Tx) error {
		// On a shared store, a late commit of another process since the
		// read under the lock must not be rolled back by this record.
		if err := e.checkBase(tx, conv.id, st.rec); err != nil {
			return err
		}
		if err := tx.PutName(store.Name{Agent: agent, Kind: store.NameSessionID, Value: newID}, conv.id); err != nil {
			return fmt.Errorf("lossless: rotate: map session: %w", err)
		}
		if err := tx.PutFileCheckpoint(agent, cpPath, store.FileCheckpoint(cp)); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		if err := tx.PutConversation(conv.id, rec); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.rec = rec
	return nil
}
