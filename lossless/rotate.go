package lossless

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/transcript"
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
// decision is lossless/orchestrate's (ShouldRotate, KeptTail), the
// successor file lossless/transcript's (WriteSuccessor); the engine reads
// the kept messages, writes the file and maps the successor's session.

// Rotate compacts the session (forced, to the budget) and rotates its
// transcript: see Compact.
func (e *Engine) Rotate(ctx context.Context, p orchestrate.RotateParams) (orchestrate.RotateResult, error) {
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{orchestrate.RuntimeContextRotate: json.RawMessage("true")}}
	res, err := e.compact(ctx, core.CompactParams{AgentID: p.AgentID, SessionID: p.SessionID, SessionKey: p.SessionKey,
		SessionFile: p.SessionFile, TokenBudget: p.TokenBudget, Force: true, RuntimeContext: rc})
	if err != nil {
		return orchestrate.RotateResult{}, err
	}
	if res.Result == nil || res.Result.SessionID == "" {
		return orchestrate.RotateResult{}, fmt.Errorf("lossless: rotate: not rotated: %s", res.Reason)
	}
	return orchestrate.RotateResult{SessionID: res.Result.SessionID, SessionFile: res.Result.SessionFile,
		SessionTarget: res.Result.SessionTarget, FirstKeptEntryID: res.Result.FirstKeptEntryID}, nil
}

// rotate writes the successor of the transcript at path
// (transcript.WriteSuccessor: the context's summary, then the messages
// after its last summary, orchestrate.KeptTail) and maps its new session
// id to conv (mapSession).
func (e *Engine) rotate(ctx context.Context, conv *Conversation, agent, sessionID, path string, tokensBefore, tokensAfter int) (orchestrate.RotateResult, error) {
	t, err := core.ReadTranscript(path)
	if err != nil {
		return orchestrate.RotateResult{}, fmt.Errorf("lossless: rotate: %w", err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		return orchestrate.RotateResult{}, err
	}
	seqs, summaryIDs := orchestrate.KeptTail(items)
	tail := make([][]byte, 0, len(seqs))
	for _, seq := range seqs {
		m, err := conv.Message(ctx, seq)
		if err != nil {
			return orchestrate.RotateResult{}, err
		}
		tail = append(tail, m.Raw())
	}
	summary, err := orchestrate.ContextSummaryText(ctx, e.st, conv.id, items)
	if err != nil {
		return orchestrate.RotateResult{}, err
	}
	succ, err := transcript.WriteSuccessor(transcript.SuccessorParams{Path: path, Transcript: t, Tail: tail,
		Summary: summary, SummaryIDs: summaryIDs, Engine: EngineID, Conv: conv.id.String(), SessionID: sessionID,
		TokensBefore: tokensBefore, TokensAfter: tokensAfter})
	if err != nil {
		return orchestrate.RotateResult{}, err
	}
	if err := e.mapSession(ctx, conv, agent, succ.SessionID, succ.CheckpointPath, succ.Checkpoint); err != nil {
		return orchestrate.RotateResult{}, err
	}
	target, err := json.Marshal(map[string]string{"sessionId": succ.SessionID, "sessionFile": succ.Path})
	if err != nil {
		return orchestrate.RotateResult{}, fmt.Errorf("lossless: rotate: %w", err)
	}
	return orchestrate.RotateResult{SessionID: succ.SessionID, SessionFile: succ.Path, SessionTarget: target,
		FirstKeptEntryID: succ.FirstKeptEntryID, KeptEntries: succ.KeptEntries}, nil
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
