package lossless

import (
	"context"
	"encoding/json"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/transcript"
)

// Hosts that keep the transcript themselves (OpenClaw 2026.9.6: rows in its
// SQLite store; sessionFile is a session key, never a path): the engine
// reads such a transcript only through the host, from a cursor it keeps
// per conversation, and maps every entry read to its stored message
// (lossless/transcript's host.go). What stays here is the engine's side:
// Bootstrap's door and a call's session identity; Maintain's rewrite
// through the host and the host's model as the summarizer are
// lossless/orchestrate's.

// bootstrapHost is Bootstrap for a host that keeps the transcript
// (transcript.BootstrapHost) with the engine entered.
func (e *Engine) bootstrapHost(ctx context.Context, p core.BootstrapParams, agent, sessionID, sessionKey string) (core.BootstrapResult, error) {
	done, err := e.enter()
	if err != nil {
		return core.BootstrapResult{}, err
	}
	defer done()
	return transcript.BootstrapHost(ctx, importPort{e}, p, agent, sessionID, sessionKey)
}

// sessionIdentity resolves a call's agent, session id and key: the call's
// own fields first, then its sessionTarget (OpenClaw's typed identity), the
// agent by agentFor's rule (a target's agentId counts as the call naming
// one).
func (e *Engine) sessionIdentity(explicitAgent, sessionID, sessionKey string, target json.RawMessage) (agent, id, key string) {
	t, _ := core.ParseSessionTarget(target)
	if sessionKey == "" {
		sessionKey = t.SessionKey
	}
	if sessionID == "" {
		sessionID = t.SessionID
	}
	if explicitAgent == "" {
		explicitAgent = t.AgentID
	}
	return e.agentFor(explicitAgent, sessionKey), sessionID, sessionKey
}
