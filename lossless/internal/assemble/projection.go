package assemble

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// Context projection for hosts with persistent backend threads, and the
// post-processing of every Assemble (Finish: the host's count and
// contextProjection; the engine's door prepends a subagent's fork prefix
// before it).
//
// A thread-bootstrap host (Codex app-server style) seeds a backend thread
// with the assembled context once and then only appends; it re-seeds when
// the epoch changes. The epoch is derived from the conversation record,
// which every summary write (Conversation.Replace) and every transcript
// rotation (a new session id mapped to the conversation) rewrite in the
// same store transaction: epoch = summaries + session ids. Ingest changes
// neither, so the epoch is stable across turns and changes exactly when a
// compaction or a rotation changed the prefix. The fingerprint is a hash of
// the assembled payload (messages byte for byte, then the system prompt
// addition).

// Keys a host may set in runtimeContext to ask for a projection mode.
const (
	// RuntimeContextProjection: "thread_bootstrap" or "per_turn".
	RuntimeContextProjection = "contextProjection"
	// RuntimeContextThreadBootstrap: true for a thread-bootstrap host.
	RuntimeContextThreadBootstrap = "threadBootstrap"
)

// ProjectionMode returns the projection mode of an Assemble call:
// core.ProjectionThreadBootstrap when the runtime context asks for it
// (contextProjection "thread_bootstrap" or threadBootstrap true), or the
// runtime settings name a Codex app-server host (runtime.host, harnessId
// or executionHost.id containing "codex" or "app-server"), or def (the
// engine's Config.ContextProjection) is "thread_bootstrap"; else
// core.ProjectionPerTurn. A runtime context saying "per_turn" wins.
func ProjectionMode(rs *core.RuntimeSettings, rc *core.RuntimeContext, def string) string {
	if rc != nil {
		if v, ok := rc.String(RuntimeContextProjection); ok {
			switch v {
			case core.ProjectionThreadBootstrap, core.ProjectionPerTurn:
				return v
			}
		}
		if raw, ok := rc.Values[RuntimeContextThreadBootstrap]; ok && strings.TrimSpace(string(raw)) == "true" {
			return core.ProjectionThreadBootstrap
		}
	}
	if rs != nil {
		var names []*string
		if rs.Runtime != nil {
			names = append(names, rs.Runtime.Host, rs.Runtime.HarnessID)
		}
		if rs.ExecutionHost != nil {
			names = append(names, rs.ExecutionHost.ID)
		}
		for _, n := range names {
			if n == nil {
				continue
			}
			s := strings.ToLower(*n)
			if strings.Contains(s, "codex") || strings.Contains(s, "app-server") {
				return core.ProjectionThreadBootstrap
			}
		}
	}
	if def == core.ProjectionThreadBootstrap {
		return core.ProjectionThreadBootstrap
	}
	return core.ProjectionPerTurn
}

// Finish post-processes a successful Assemble after the engine's door
// prepended a forked subagent's parent context: it fits the host's own
// count (OpenClaw) within budget and sets ContextProjection. epoch is the
// conversation's epoch when the call's window did not read its record
// (call.HaveRec false; unused otherwise).
func Finish(tc core.TokenCounter, call *Call, budget int, epoch string, res *core.AssembleResult) {
	if hostCounts(call.Params.RuntimeSettings) {
		fitHostCount(tc, res, budget) // OpenClaw counts with its own estimate (budget.go)
	}
	proj := &core.ContextProjection{Mode: call.Mode}
	if call.Mode == core.ProjectionThreadBootstrap {
		if call.HaveRec {
			proj.Epoch = EpochOf(call.Rec)
		} else {
			proj.Epoch = epoch
		}
		proj.Fingerprint = Fingerprint(res.Messages, res.SystemPromptAddition)
	}
	res.ContextProjection = proj
}

// Fingerprint returns the hash of an assembled payload: every message's
// bytes (length-prefixed) and the system prompt addition; 32 hex digits.
func Fingerprint(msgs []core.Message, addition string) string {
	h := sha256.New()
	var n [8]byte
	for _, m := range msgs {
		binary.BigEndian.PutUint64(n[:], uint64(len(m.Raw())))
		h.Write(n[:])
		h.Write(m.Raw())
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(addition)))
	h.Write(n[:])
	h.Write([]byte(addition))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// EpochOf is the projection epoch of a conversation's record.
func EpochOf(rec store.Conversation) string {
	return strconv.FormatInt(rec.Summaries+int64(len(rec.SessionIDs)), 10)
}
