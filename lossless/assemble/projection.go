package assemble

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// Context projection for hosts with persistent backend threads, and the
// post-processing of every Assemble (After): the fork prefix of a
// subagent, the lazy sweep of expired subagent preparations, and
// contextProjection.
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

// After post-processes a successful Assemble: it sweeps expired subagent
// preparations once per engine, prepends a forked subagent's parent
// context, fits the host's own count (OpenClaw) and sets
// ContextProjection. It takes what the call's window read: the subagent
// records, the record the epoch is counted from.
func After(ctx context.Context, port Port, call *Call, res *core.AssembleResult) error {
	port.SweepOnce(ctx)
	done, err := port.Enter()
	if err != nil {
		return err
	}
	defer done()
	p := call.Params
	budget := port.Budget(p.TokenBudget, p.RuntimeContext)
	if err := forkPrefix(ctx, port, call, budget, res); err != nil {
		return err
	}
	if hostCounts(p.RuntimeSettings) {
		fitHostCount(port.Counter(), res, budget) // OpenClaw counts with its own estimate (budget.go)
	}
	proj := &core.ContextProjection{Mode: call.Mode}
	if call.Mode == core.ProjectionThreadBootstrap {
		if call.HaveRec {
			proj.Epoch = EpochOf(call.Rec)
		} else {
			proj.Epoch = Epoch(ctx, port, call.Agent, p.SessionID, p.SessionKey)
		}
		proj.Fingerprint = Fingerprint(res.Messages, res.SystemPromptAddition)
	}
	res.ContextProjection = proj
	return nil
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

// Epoch returns the conversation's epoch ("0" for a session the engine
// never stored): the number of summaries written plus the number of
// session ids mapped to it, both kept in the conversation record.
func Epoch(ctx context.Context, port Port, agent, sessionID, sessionKey string) string {
	c, err := port.Lookup(ctx, agent, sessionID, sessionKey)
	if err != nil {
		return "0"
	}
	var rec store.Conversation
	err = port.Store().View(ctx, func(r store.Reader) error {
		var err error
		rec, err = r.Conversation(c)
		return err
	})
	if err != nil {
		return "0"
	}
	return EpochOf(rec)
}

// EpochOf is the projection epoch of a conversation's record.
func EpochOf(rec store.Conversation) string {
	return strconv.FormatInt(rec.Summaries+int64(len(rec.SessionIDs)), 10)
}

// SessionEpoch is the context projection epoch of a session, the engine's
// Epoch: an error only when the engine is closed or the look-up fails for
// another reason than an unknown session ("0").
func SessionEpoch(ctx context.Context, port Port, sessionID, sessionKey string) (string, error) {
	done, err := port.Enter()
	if err != nil {
		return "", err
	}
	defer done()
	agent := port.Agent(sessionKey)
	if _, err := port.Lookup(ctx, agent, sessionID, sessionKey); err != nil && !errors.Is(err, core.ErrUnknownSession) {
		return "", err
	}
	return Epoch(ctx, port, agent, sessionID, sessionKey), nil
}
