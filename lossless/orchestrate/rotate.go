package orchestrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
)

// Transcript rotation: when the active transcript grows past
// Config.RotateBytes (or on request), Compact writes a successor session
// file — a header naming the old file as parentSession, a compaction entry
// with the summary, then the kept tail — under a new session id mapped to
// the same conversation (Port.MapSession). The old file is never touched.

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

// RuntimeContextRotate is the runtime-context key that asks Compact to
// rotate the transcript whatever its size ("rotateTranscript": true).
const RuntimeContextRotate = "rotateTranscript"

// RotateResult names the successor session.
type RotateResult struct {
	SessionID        string          `json:"sessionId"`
	SessionFile      string          `json:"sessionFile"`
	SessionTarget    json.RawMessage `json:"sessionTarget,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId,omitempty"`
	// KeptEntries is the number of entries copied after the compaction.
	KeptEntries int `json:"keptEntries"`
}

// ShouldRotate reports whether Compact should rotate p.SessionFile: the
// runtime context asks for it, or the file has reached rotateBytes.
func ShouldRotate(p core.CompactParams, rotateBytes int64) bool {
	if p.RuntimeContext != nil {
		if v, ok := p.RuntimeContext.Values[RuntimeContextRotate]; ok && bytes.Equal(bytes.TrimSpace(v), []byte("true")) {
			return true
		}
	}
	st, err := os.Stat(p.SessionFile)
	return err == nil && st.Size() >= rotateBytes
}

// Rotate compacts the session (forced, to the budget) and rotates its
// transcript: see Compact.
func Rotate[C dag.Store](ctx context.Context, e Port[C], p RotateParams) (RotateResult, error) {
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{RuntimeContextRotate: json.RawMessage("true")}}
	res, err := Compact(ctx, e, core.CompactParams{AgentID: p.AgentID, SessionID: p.SessionID, SessionKey: p.SessionKey,
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
func rotate[C dag.Store](ctx context.Context, e Port[C], conv C, agent, sessionID, path string, tokensBefore, tokensAfter int) (RotateResult, error) {
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
		raw, err := e.RawMessage(ctx, conv, it.Ref.Seq)
		if err != nil {
			return RotateResult{}, err
		}
		tail = append(tail, raw)
	}
	summary, err := ContextSummaryText(ctx, e, conv, nil)
	if err != nil {
		return RotateResult{}, err
	}
	succ, err := transcript.WriteSuccessor(transcript.SuccessorParams{Path: path, Transcript: t, Tail: tail,
		Summary: summary, SummaryIDs: summaryIDs, Engine: e.Config().Engine, Conv: e.ID(conv).String(), SessionID: sessionID,
		TokensBefore: tokensBefore, TokensAfter: tokensAfter})
	if err != nil {
		return RotateResult{}, err
	}
	if err := e.MapSession(ctx, conv, agent, succ.SessionID, succ.CheckpointPath, succ.Checkpoint); err != nil {
		return RotateResult{}, err
	}
	target, _ := json.Marshal(map[string]string{"sessionId": succ.SessionID, "sessionFile": succ.Path})
	return RotateResult{SessionID: succ.SessionID, SessionFile: succ.Path, SessionTarget: target,
		FirstKeptEntryID: succ.FirstKeptEntryID, KeptEntries: succ.KeptEntries}, nil
}

// hostKept reports whether conversation c was read through the host (it
// has a host checkpoint): its transcript is the host's, never a file. A
// checkpoint that does not decode counts: it is there.
func hostKept[C dag.Store](ctx context.Context, e Port[C], agent string, c store.ConvID) (bool, error) {
	err := e.View(ctx, func(r store.Reader) error {
		_, err := r.HostCheckpoint(agent, c)
		return err
	})
	switch {
	case err == nil || errors.Is(err, store.ErrCorrupt):
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	// A failed read is no answer: taking it for "not the host's" would
	// open the session key as a file.
	return false, fmt.Errorf("lossless: read host checkpoint: %w", err)
}
