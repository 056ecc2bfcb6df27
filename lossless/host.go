package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// Hosts that keep the transcript themselves (OpenClaw 2026.9.6: rows in its
// SQLite store; sessionFile is a session key, never a path): the engine
// reads such a transcript only through the host, from a cursor it keeps
// per conversation, and maps every entry read to its stored message
// (lossless/transcript's host.go). What stays here is the engine's side:
// Bootstrap's door, Maintain's rewrite through the host (which uses the
// entry map), and the host's model as the summarizer.

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

// MaintainHostNoReader is Maintain's reason when the host keeps the
// transcript but offers no way to read it (no entry ids to rewrite).
const MaintainHostNoReader = "the host keeps the transcript and offers no reader: nothing to rewrite"

// maintainHost is Maintain for a host that keeps the transcript: the
// transcript is read from the conversation's cursor (entries new since the
// last read), then every mapped tool result older than the fresh tail,
// above Config.MaintainMinTokens and stored byte for byte is replaced by a
// reference, as for a file. The request names the mapped entries from the
// first replaced one to the end, so a transcript that gained entries since
// is left alone. After a rewrite the map is dropped (the host gives the
// re-appended suffix new ids) and the next read starts over.
func (e *Engine) maintainHost(ctx context.Context, p core.MaintainParams, agent string, c convID) (core.MaintainResult, error) {
	rc := p.RuntimeContext
	if rc.ReadTranscript == nil {
		return core.MaintainResult{Reason: MaintainHostNoReader}, nil
	}
	r, err := transcript.SyncHost(ctx, importPort{e}, agent, c, rc.ReadTranscript)
	if err != nil {
		return core.MaintainResult{}, fmt.Errorf("lossless: maintain: %w", err)
	}
	if r.Missing || r.Unavailable != "" {
		return core.MaintainResult{Reason: "host transcript not readable now: nothing to rewrite"}, nil
	}
	entries, err := transcript.HostEntries(ctx, e.st, c)
	if err != nil {
		return core.MaintainResult{}, err
	}
	min := e.cfg.MaintainMinTokens
	if min <= 0 {
		min = DefaultMaintainMinTokens
	}
	tail := len(entries) - e.cfg.FreshTailMessages
	var reps []core.TranscriptRewrite
	var aliases []alias
	first := -1
	err = e.st.View(ctx, func(sr store.Reader) error {
		for i := 0; i < tail; i++ {
			en := entries[i]
			if en.EntryID == "" {
				continue
			}
			h, err := getMsgHeader(sr, c, en.Seq)
			if err != nil {
				return err
			}
			if h.Role != core.RoleToolResult || h.Tokens <= min || h.Hash != en.Key {
				continue // not a tool result, small, or already a reference
			}
			r, err := getMsg(sr, c, en.Seq)
			if err != nil {
				return err
			}
			m, err := core.ParseMessage(r.Raw)
			if err != nil {
				return fmt.Errorf("lossless: maintain: message %d: %w", en.Seq, err)
			}
			ref, err := core.ParseMessage(largeReference(m, r.Tokens))
			if err != nil {
				return fmt.Errorf("lossless: maintain: reference: %w", err)
			}
			if len(ref.Raw()) >= len(m.Raw()) {
				continue
			}
			if first < 0 {
				first = i
			}
			reps = append(reps, core.TranscriptRewrite{EntryID: en.EntryID, Message: ref})
			aliases = append(aliases, alias{ref: hashRaw(ref.Raw()), seq: en.Seq})
		}
		return nil
	})
	if err != nil {
		return core.MaintainResult{}, err
	}
	if len(reps) == 0 {
		return core.MaintainResult{Reason: MaintainNothingToDo}, nil
	}
	suffix := make([]string, 0, len(entries)-first)
	for _, en := range entries[first:] {
		if en.EntryID != "" {
			suffix = append(suffix, en.EntryID)
		}
	}
	out, err := e.requestRewrite(ctx, rc, c, aliases, core.RewriteRequest{Replacements: reps, AllowedRewriteSuffixEntryIDs: suffix})
	if err == nil && (out.Changed || strings.HasPrefix(out.Reason, MaintainRewriteDeferred)) {
		// The host re-appended the suffix with new ids (or failed part way,
		// which it may have done after writing): read again next time.
		err = transcript.DropHostMap(ctx, importPort{e}, agent, c)
	}
	return out, err
}

// hostSummarizer reports whether compactions summarize with the host's
// model (summarizer kind "host", the default under OpenClaw), which only
// calls that offer runtimeContext.llm can reach. A summarizer set with
// SetSummarizer is not the host's.
func (e *Engine) hostSummarizer() bool {
	x := e.compaction
	x.mu.Lock()
	o := x.override
	x.mu.Unlock()
	if o != nil {
		return false
	}
	sc, err := e.cfg.summarizerConfig()
	return err == nil && strings.EqualFold(sc.Kind, summarize.KindHost)
}

// withHostLLM returns ctx carrying the host's model (rc's llm.complete) for
// the "host" summarizer.
func withHostLLM(ctx context.Context, rc *core.RuntimeContext) context.Context {
	if rc == nil || rc.LLMComplete == nil {
		return ctx
	}
	llm := rc.LLMComplete
	return summarize.WithHostLLM(ctx, func(ctx context.Context, system, user string, maxTokens int) (string, error) {
		res, err := llm(ctx, core.LLMRequest{System: system, MaxTokens: maxTokens,
			Messages: []core.Message{core.UserText(user, time.Now().UnixMilli())}})
		if err != nil {
			return "", err
		}
		if u := res.Usage; u != nil {
			// The host's count of the call, for the spend cap (the prompt's
			// cached tokens included: the cap counts tokens, not prices).
			summarize.ReportUsage(ctx, u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.OutputTokens)
		}
		return res.Text, nil
	})
}

// maintainCompact is the compaction decision of a host-model summarizer:
// a committed turn cannot compact in the background without the host's
// model, so Maintain (which the host calls after the commit, offering it)
// compacts the conversation when its context is over contextThreshold of
// the last assembled budget. A failure is logged, never fails Maintain.
func (e *Engine) maintainCompact(ctx context.Context, p core.MaintainParams) {
	if !e.hostSummarizer() || p.RuntimeContext == nil || p.RuntimeContext.LLMComplete == nil ||
		p.Reason == core.MaintainReasonBootstrap {
		return // not before the user's model call: after the turn only
	}
	agent, sessionID, sessionKey := e.sessionIdentity("", p.SessionID, p.SessionKey, p.SessionTarget)
	conv, err := e.ConversationFor(ctx, agent, sessionID, sessionKey)
	if err != nil {
		return
	}
	budget := e.turnBudget(agent, sessionID, sessionKey, p.RuntimeContext)
	items, err := conv.Items(ctx)
	if err != nil || float64(itemTokens(items)) <= e.cfg.ContextThreshold*float64(budget) {
		return
	}
	out, err := e.runCompaction(withHostLLM(ctx, p.RuntimeContext), conv, dag.Target{Budget: budget, Mode: dag.ModeThreshold}, false)
	if err != nil && !errors.Is(err, errCompacting) && !errors.Is(err, context.Canceled) && !errors.Is(err, core.ErrClosed) {
		slog.Warn("lossless: compaction in maintain failed", "conversation", conv.ID(), "err", err)
	}
	if t := out.tally; t.Fallback > 0 {
		slog.Info("lossless: compaction in maintain: summaries written by the extractive fallback", "conversation", conv.ID(),
			"fallbacks", t.Fallback, "model", t.Model, "reason", t.Reason)
	}
}

// hostKept reports whether conversation c was read through the host (it
// has a host checkpoint): its transcript is the host's, never a file. A
// checkpoint that does not decode counts: it is there.
func (e *Engine) hostKept(ctx context.Context, agent string, c convID) (bool, error) {
	err := e.st.View(ctx, func(r store.Reader) error {
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
