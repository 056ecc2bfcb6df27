package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
)

// Hosts that keep the transcript themselves (OpenClaw 2026.9.6: rows in its
// SQLite store; sessionFile is a session key, never a path): the engine
// reads such a transcript only through the host, from a cursor it keeps
// per conversation, and maps every entry read to its stored message
// (lossless/transcript's host.go). What stays here is the engine's side:
// Bootstrap's door (resolving the conversation, the import lock, storing
// each page the sync reads) and a call's session identity; Maintain's rewrite
// through the host and the host's model as the summarizer are
// lossless/orchestrate's.

// bootstrapHost is Bootstrap for a host that keeps the transcript: the
// conversation is made if new, and the transcript is read through the host
// from the conversation's cursor (history written before the engine was
// selected is imported once; later bootstraps read only what is new).
func (e *Engine) bootstrapHost(ctx context.Context, p core.BootstrapParams, agent, sessionID, sessionKey string) (core.BootstrapResult, error) {
	done, err := e.enter()
	if err != nil {
		return core.BootstrapResult{}, err
	}
	defer done()
	if p.RuntimeContext == nil || p.RuntimeContext.ReadTranscript == nil {
		return core.BootstrapResult{Reason: "the host keeps the transcript and offers no reader: nothing imported"}, nil
	}
	read := p.RuntimeContext.ReadTranscript
	c, err := e.resolve(ctx, agent, sessionID, sessionKey, false)
	if errors.Is(err, core.ErrUnknownSession) {
		// A session the engine has not stored: made only when its
		// transcript holds a message (OpenClaw bootstraps runs that never
		// get one, such as its memory flushes; they leave no record).
		first, reason, rerr := transcript.HostHasMessages(ctx, read)
		if rerr != nil {
			reason = "host transcript not read: " + rerr.Error()
		}
		if reason != "" {
			return core.BootstrapResult{Reason: reason}, nil
		}
		read = transcript.FirstPage(first, read)
		c, err = e.resolve(ctx, agent, sessionID, sessionKey, true)
	}
	if err != nil {
		return core.BootstrapResult{}, err
	}
	r, err := e.syncHost(ctx, agent, c, read)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, core.ErrClosed) || errors.Is(err, store.ErrDiskFull) {
			return core.BootstrapResult{}, fmt.Errorf("lossless: bootstrap: %w", err)
		}
		// The host's read failed: the turn goes on with what is stored (a
		// throw here would quarantine the engine); the next bootstrap
		// tries again.
		slog.Warn("lossless: bootstrap could not read the host transcript", "conversation", c.String(), "err", err)
		return core.BootstrapResult{Reason: "host transcript not read: " + err.Error()}, nil
	}
	if res, ok := transcript.BootstrapReason(r); ok {
		return res, nil
	}
	return core.BootstrapResult{Bootstrapped: true, ImportedMessages: r.Imported}, nil
}

// syncHost reads what is new of c's host-kept transcript (transcript.HostSync)
// under its import lock, storing each page through ingestInto (and recall).
func (e *Engine) syncHost(ctx context.Context, agent string, c convID, read core.HostTranscriptReader) (transcript.HostSyncResult, error) {
	unlock, err := e.lockImport(ctx, agent, transcript.HostLockKey(c))
	if err != nil {
		return transcript.HostSyncResult{}, err
	}
	defer unlock()
	h, err := transcript.OpenHost(ctx, e.st, e.space, agent, c, read)
	if err != nil {
		return transcript.HostSyncResult{}, err
	}
	for {
		p, err := h.Next(ctx)
		if err != nil {
			return h.Result(), err
		}
		if p == nil {
			return h.Result(), nil
		}
		for i, m := range p.Messages {
			if err := validateMessage(m, e.cfg.MaxMessageBytes); err != nil {
				p.Skip(c, i, err)
			}
		}
		var seqs []uint64
		var hashes []store.Hash
		n := 0
		if msgs := p.Valid(); len(msgs) > 0 {
			ps, err := e.prepare(ctx, msgs, false)
			if err != nil {
				return h.Result(), err
			}
			if n, err = e.ingestInto(ctx, c, ps); err != nil {
				return h.Result(), err
			}
			for i := range ps {
				seqs = append(seqs, ps[i].Seq)
				hashes = append(hashes, ps[i].Hash)
			}
		}
		if err := h.Stored(ctx, p, seqs, hashes, n); err != nil {
			return h.Result(), err
		}
	}
}

// dropHostMap drops the entry map of c's host-kept transcript
// (transcript.DropHostMap) behind the free-space guard.
func (e *Engine) dropHostMap(ctx context.Context, agent string, c convID) error {
	if err := e.checkSpace(); err != nil {
		return err
	}
	return transcript.DropHostMap(ctx, e.st, agent, c)
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
