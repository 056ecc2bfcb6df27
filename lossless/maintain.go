package lossless

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
)

// Maintain's door: the engine resolves the conversation, reads the
// transcript (a file, or the host's through its entry map), makes the
// references and writes the aliases under the conversation's lock; which
// entries are rewritten and how the host's answer reads are
// lossless/orchestrate's (maintain.go there).

// Maintain shrinks the host's transcript without loss. When the host offers
// runtimeContext.rewriteTranscriptEntries, every tool result in the
// transcript that is larger than Config.MaintainMinTokens, older than the
// fresh tail (the newest Config.FreshTailMessages message entries of the
// window, never touched), has an entry id, and is stored by the engine
// byte for byte, is replaced by a reference message (same role, tool call
// id, tool name, error flag and timestamp; its text names the stored
// original's id "lcm-large:<key>", which lcm_expand and
// Conversation.MessageByKey return in full). The reference's own key is
// recorded as an alias of the original, so re-reading the rewritten
// transcript (bootstrap, import) stores nothing new. The result is the
// host's report (changed, bytesFreed, rewrittenEntries). A second Maintain
// rewrites nothing. Without the helper, or without a session file or a
// stored session, it changes nothing and says why in Reason. When the host
// keeps the transcript (OpenClaw's SQLite store), the entries come from the
// host's reader instead of a file. A summarizer that is the host's model
// compacts here, after the turn (maintainCompact).
func (e *Engine) Maintain(ctx context.Context, p core.MaintainParams) (core.MaintainResult, error) {
	res, err := e.maintain(ctx, p)
	if err == nil {
		e.maintainCompact(ctx, p) // a host-model summarizer compacts here
	}
	return res, err
}

// maintain is Maintain's lossless rewrite of the host's transcript.
func (e *Engine) maintain(ctx context.Context, p core.MaintainParams) (core.MaintainResult, error) {
	done, err := e.enter()
	if err != nil {
		return core.MaintainResult{}, err
	}
	defer done()
	agent, sessionID, sessionKey := e.sessionIdentity("", p.SessionID, p.SessionKey, p.SessionTarget)
	if p.RuntimeContext == nil || p.RuntimeContext.RewriteTranscriptEntries == nil {
		return core.MaintainResult{Reason: orchestrate.MaintainNoRewriter}, nil
	}
	host := core.HostKeepsTranscript(p.SessionFile, p.RuntimeContext)
	if p.SessionFile == "" && !host {
		return core.MaintainResult{Reason: orchestrate.MaintainNoSessionFile}, nil
	}
	c, err := e.lookup(ctx, agent, sessionID, sessionKey)
	if errors.Is(err, core.ErrUnknownSession) {
		return core.MaintainResult{Reason: orchestrate.MaintainUnknownSession}, nil
	}
	if err != nil {
		return core.MaintainResult{}, err
	}
	if !host {
		if host, err = orchestrate.HostKept(ctx, e.st, agent, c); err != nil {
			return core.MaintainResult{}, err
		}
	}
	if host {
		return e.maintainHost(ctx, p, agent, c)
	}
	t, err := core.ReadTranscript(p.SessionFile)
	if errors.Is(err, os.ErrNotExist) {
		return core.MaintainResult{Reason: orchestrate.MaintainNoSessionFile}, nil
	}
	if err != nil {
		return core.MaintainResult{}, fmt.Errorf("lossless: maintain: %w", err)
	}
	var cands []orchestrate.Candidate
	err = e.st.View(ctx, func(r store.Reader) error {
		var err error
		cands, err = orchestrate.FileCandidates(ctx, r, c, e.orchestrateConfig(), t.Entries, t.Window().Entries)
		return err
	})
	if err != nil {
		return core.MaintainResult{}, err
	}
	reps, aliases, _, err := orchestrate.Plan(cands, references(cands))
	if err != nil {
		return core.MaintainResult{}, err
	}
	if len(reps) == 0 {
		return core.MaintainResult{Reason: orchestrate.MaintainNothingToDo}, nil
	}
	req := core.RewriteRequest{Replacements: reps, AllowedRewriteSuffixEntryIDs: orchestrate.RewriteSuffix(t.ActiveBranch(), reps)}
	return e.requestRewrite(ctx, p.RuntimeContext, c, aliases, req)
}

// references returns the reference message of each candidate (the write
// path's large-message reference: same role, tool call id, tool name,
// error flag and timestamp, naming the stored original).
func references(cands []orchestrate.Candidate) [][]byte {
	refs := make([][]byte, len(cands))
	for i, cd := range cands {
		refs[i] = largeReference(cd.Message, cd.Tokens)
	}
	return refs
}

// requestRewrite makes the originals behind req's references safe, then
// asks the host to rewrite: the aliases first, under c's lock (once the
// host rewrote the entries, a re-read of the transcript must find the
// references already stored), then a sync (the originals must survive a
// power loss before the host drops them). It reports what the host did
// (orchestrate.RewriteOutcome).
func (e *Engine) requestRewrite(ctx context.Context, rc *core.RuntimeContext, c convID, aliases []orchestrate.Alias, req core.RewriteRequest) (core.MaintainResult, error) {
	if err := e.writeAliases(ctx, c, aliases); err != nil {
		return core.MaintainResult{}, err
	}
	if err := e.st.Sync(ctx); err != nil {
		return core.MaintainResult{}, fmt.Errorf("lossless: maintain: sync: %w", err)
	}
	res, err := rc.RewriteTranscriptEntries(ctx, req)
	return orchestrate.RewriteOutcome(ctx, res, err)
}

// writeAliases writes aliases (orchestrate.WriteAliases) under c's lock.
func (e *Engine) writeAliases(ctx context.Context, c convID, aliases []orchestrate.Alias) error {
	s, err := e.lockConv(ctx, c)
	if err != nil {
		return err
	}
	defer s.unlock()
	return e.storeUpdate(ctx, func(tx store.Tx) error { return orchestrate.WriteAliases(tx, c, aliases) })
}

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
		return core.MaintainResult{Reason: orchestrate.MaintainHostNoReader}, nil
	}
	r, err := e.syncHost(ctx, agent, c, rc.ReadTranscript)
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
	var cands []orchestrate.Candidate
	err = e.st.View(ctx, func(sr store.Reader) error {
		var err error
		cands, err = orchestrate.HostCandidates(sr, c, e.orchestrateConfig(), entries)
		return err
	})
	if err != nil {
		return core.MaintainResult{}, err
	}
	reps, aliases, first, err := orchestrate.Plan(cands, references(cands))
	if err != nil {
		return core.MaintainResult{}, err
	}
	if len(reps) == 0 {
		return core.MaintainResult{Reason: orchestrate.MaintainNothingToDo}, nil
	}
	req := core.RewriteRequest{Replacements: reps, AllowedRewriteSuffixEntryIDs: orchestrate.HostSuffix(entries, first)}
	out, err := e.requestRewrite(ctx, rc, c, aliases, req)
	if err == nil && (out.Changed || strings.HasPrefix(out.Reason, orchestrate.MaintainRewriteDeferred)) {
		// The host re-appended the suffix with new ids (or failed part way,
		// which it may have done after writing): read again next time.
		err = e.dropHostMap(ctx, agent, c)
	}
	return out, err
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
	if err != nil || !orchestrate.OverThreshold(items, e.cfg.ContextThreshold, budget) {
		return
	}
	out, err := e.runCompaction(orchestrate.WithHostLLM(ctx, p.RuntimeContext), conv, dag.Target{Budget: budget, Mode: dag.ModeThreshold}, false)
	name := conv.id.String()
	if err != nil && !errors.Is(err, orchestrate.ErrCompacting) && !errors.Is(err, context.Canceled) && !errors.Is(err, core.ErrClosed) {
		slog.Warn("lossless: compaction in maintain failed", "conversation", name, "err", err)
	}
	if t := out.Tally; t.Fallback > 0 {
		slog.Info("lossless: compaction in maintain: summaries written by the extractive fallback", "conversation", name,
			"fallbacks", t.Fallback, "model", t.Model, "reason", t.Reason)
	}
}
