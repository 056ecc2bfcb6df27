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
	"github.com/lossless-engine/contextengine/store"
)

// Transcript rotation: when the active transcript grows past
// Config.RotateBytes (or on request), Compact writes a successor session
// file — a header naming the old file as parentSession, a compaction entry
// with the summary, then the kept tail — under a new session id mapped to
// the same conversation (the engine's Rotate and Compact write it, with
// transcript.WriteSuccessor, and map it). The old file is never touched.

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

// KeptTail returns what a rotation's successor keeps of the context
// items: the sequence numbers of the messages after the last summary, in
// order, and the ids of all the context's summaries.
func KeptTail(items []dag.Item) (seqs []uint64, summaryIDs []string) {
	for _, it := range items {
		if it.IsSummary() {
			seqs = seqs[:0]
			summaryIDs = append(summaryIDs, it.Ref.ID)
			continue
		}
		seqs = append(seqs, it.Ref.Seq)
	}
	return seqs, summaryIDs
}

// HostKept reports whether conversation c of agent in st was read through
// the host (it has a host checkpoint): its transcript is the host's, never a file. A
// checkpoint that does not decode counts: it is there.
func HostKept(ctx context.Context, st store.Store, agent string, c store.ConvID) (bool, error) {
	err := st.View(ctx, func(r store.Reader) error {
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
