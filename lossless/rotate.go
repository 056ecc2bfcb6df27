package lossless

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/lossless-engine/contextengine/core"
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
// naming the same conversation. Nothing is deleted at any point.

// RuntimeContextRotate is the runtime-context key that asks Compact to
// rotate the transcript whatever its size ("rotateTranscript": true).
const RuntimeContextRotate = "rotateTranscript"

// RotateParams are the arguments of Rotate.
type RotateParams struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionID  string `json:"sessionId"`
	SessionKey string `json:"sessionKey,omitempty"`
	// SessionFile is the active transcript to rotate.
	SessionFile string `json:"sessionFile"`
	// TokenBudget is the budget the compaction before the rotation uses
	// (default as for Compact).
	TokenBudget int `json:"tokenBudget,omitempty"`
}

// RotateResult names the successor session.
type RotateResult struct {
	SessionID        string          `json:"sessionId"`
	SessionFile      string          `json:"sessionFile"`
	SessionTarget    json.RawMessage `json:"sessionTarget,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId,omitempty"`
	// KeptEntries is the number of entries copied after the compaction.
	KeptEntries int `json:"keptEntries"`
}

// shouldRotate reports whether Compact should rotate p.SessionFile.
func (e *Engine) shouldRotate(p core.CompactParams) bool {
	if p.RuntimeContext != nil {
		if v, ok := p.RuntimeContext.Values[RuntimeContextRotate]; ok && bytes.Equal(bytes.TrimSpace(v), []byte("true")) {
			return true
		}
	}
	st, err := os.Stat(p.SessionFile)
	return err == nil && st.Size() >= e.cfg.RotateBytes
}

// Rotate compacts the session (forced, to the budget) and rotates its
// transcript: see Compact.
func (e *Engine) Rotate(ctx context.Context, p RotateParams) (RotateResult, error) {
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{RuntimeContextRotate: json.RawMessage("true")}}
	res, err := e.compact(ctx, core.CompactParams{AgentID: p.AgentID, SessionID: p.SessionID, SessionKey: p.SessionKey,
		SessionFile: p.SessionFile, TokenBudget: p.TokenBudget, Force: true, RuntimeContext: rc})
	if err != nil {
		return RotateResult{}, err
	}
	if res.Result == nil || res.Result.SessionID == "" {
		return RotateResult{}, fmt.Errorf("lossless: rotate: not rotated: %s", res.Reason)
	}
	out := RotateResult{SessionID: res.Result.SessionID, SessionFile: res.Result.SessionFile,
		SessionTarget: res.Result.SessionTarget, FirstKeptEntryID: res.Result.FirstKeptEntryID}
	return out, nil
}

// rotate writes the successor of the transcript at path and maps its new
// session id to conv.
func (e *Engine) rotate(ctx context.Context, conv *Conversation, agent, sessionID, sessionKey, path string, tokensBefore, tokensAfter int) (RotateResult, error) {
	t, err := core.ReadTranscript(path)
	if err != nil {
		return RotateResult{}, fmt.Errorf("lossless: rotate: %w", err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		return RotateResult{}, err
	}
	// The kept tail: the raw messages after the context's last summary.
	var tail [][]byte
	var summaryIDs []string
	for _, it := range items {
		if it.IsSummary() {
			tail = tail[:0]
			summaryIDs = append(summaryIDs, it.Ref.ID)
			continue
		}
		m, err := conv.Message(ctx, it.Ref.Seq)
		if err != nil {
			return RotateResult{}, err
		}
		tail = append(tail, m.Raw())
	}
	summary, err := e.contextSummaryText(ctx, conv, nil)
	if err != nil {
		return RotateResult{}, err
	}
	succ, err := transcript.WriteSuccessor(transcript.SuccessorParams{Path: path, Transcript: t, Tail: tail,
		Summary: summary, SummaryIDs: summaryIDs, Engine: EngineID, Conv: conv.ID(), SessionID: sessionID,
		TokensBefore: tokensBefore, TokensAfter: tokensAfter})
	if err != nil {
		return RotateResult{}, err
	}
	if err := e.mapSession(ctx, conv, agent, succ.SessionID, succ.CheckpointPath, succ.Checkpoint); err != nil {
		return RotateResult{}, err
	}
	target, _ := json.Marshal(map[string]string{"sessionId": succ.SessionID, "sessionFile": succ.Path})
	return RotateResult{SessionID: succ.SessionID, SessionFile: succ.Path, SessionTarget: target,
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
	e.metaMu.Lock()
	defer e.metaMu.Unlock()
	release, err := e.storeLock(ctx, namesLockName(agent)) // the names of agent, as resolve
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
