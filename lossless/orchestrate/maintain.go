package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// DefaultMaintainMinTokens is Config.MaintainMinTokens's default.
const DefaultMaintainMinTokens = 2000

// Reasons Maintain gives when it changes nothing.
const (
	MaintainNoRewriter     = "host offers no rewriteTranscriptEntries: the transcript is left as it is"
	MaintainNoSessionFile  = "no sessionFile: nothing to maintain"
	MaintainUnknownSession = "session not stored by the engine: nothing to maintain"
	MaintainNothingToDo    = "no old tool result above the size limit is stored: nothing to rewrite"
	// MaintainRewriteDeferred starts the reason when the host's rewrite
	// failed: nothing changed, a later maintain asks again.
	MaintainRewriteDeferred = "the host did not rewrite the transcript now (retried at a later maintain)"
	// MaintainHostNoReader is the reason when the host keeps the
	// transcript but offers no way to read it (no entry ids to rewrite).
	MaintainHostNoReader = "the host keeps the transcript and offers no reader: nothing to rewrite"
)

// Maintain is Engine.Maintain: the lossless rewrite of the host's
// transcript (old large tool results replaced by references), then, when
// it did not fail and the summarizer is the host's model, the compaction
// decision of the committed turn.
func Maintain[C dag.Store](ctx context.Context, e Port[C], p core.MaintainParams) (core.MaintainResult, error) {
	res, err := maintain(ctx, e, p)
	if err == nil {
		maintainCompact(ctx, e, p) // a host-model summarizer compacts here
	}
	return res, err
}

func maintain[C dag.Store](ctx context.Context, e Port[C], p core.MaintainParams) (core.MaintainResult, error) {
	done, err := e.Enter()
	if err != nil {
		return core.MaintainResult{}, err
	}
	defer done()
	agent, sessionID, sessionKey := e.Identity("", p.SessionID, p.SessionKey, p.SessionTarget)
	if p.RuntimeContext == nil || p.RuntimeContext.RewriteTranscriptEntries == nil {
		return core.MaintainResult{Reason: MaintainNoRewriter}, nil
	}
	host := core.HostKeepsTranscript(p.SessionFile, p.RuntimeContext)
	if p.SessionFile == "" && !host {
		return core.MaintainResult{Reason: MaintainNoSessionFile}, nil
	}
	c, err := e.Lookup(ctx, agent, sessionID, sessionKey)
	if errors.Is(err, core.ErrUnknownSession) {
		return core.MaintainResult{Reason: MaintainUnknownSession}, nil
	}
	if err != nil {
		return core.MaintainResult{}, err
	}
	if !host {
		if host, err = hostKept(ctx, e, agent, c); err != nil {
			return core.MaintainResult{}, err
		}
	}
	if host {
		return maintainHost(ctx, e, p, agent, c)
	}
	t, err := core.ReadTranscript(p.SessionFile)
	if errors.Is(err, os.ErrNotExist) {
		return core.MaintainResult{Reason: MaintainNoSessionFile}, nil
	}
	if err != nil {
		return core.MaintainResult{}, fmt.Errorf("lossless: maintain: %w", err)
	}
	reps, aliases, err := rewritesFor(ctx, e, c, t.Entries, t.Window().Entries)
	if err != nil {
		return core.MaintainResult{}, err
	}
	if len(reps) == 0 {
		return core.MaintainResult{Reason: MaintainNothingToDo}, nil
	}
	req := core.RewriteRequest{Replacements: reps, AllowedRewriteSuffixEntryIDs: RewriteSuffix(t.ActiveBranch(), reps)}
	return requestRewrite(ctx, e, p.RuntimeContext, c, aliases, req)
}

// requestRewrite makes the originals behind req's references safe, then
// asks the host to rewrite: the aliases first (once the host rewrote the
// entries, a re-read of the transcript must find the references already
// stored), then a sync (the originals must survive a power loss before the
// host drops them). It reports what the host did.
func requestRewrite[C dag.Store](ctx context.Context, e Port[C], rc *core.RuntimeContext, c store.ConvID, aliases []alias, req core.RewriteRequest) (core.MaintainResult, error) {
	if err := writeAliases(ctx, e, c, aliases); err != nil {
		return core.MaintainResult{}, err
	}
	if err := e.Sync(ctx); err != nil {
		return core.MaintainResult{}, fmt.Errorf("lossless: maintain: sync: %w", err)
	}
	res, err := rc.RewriteTranscriptEntries(ctx, req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return core.MaintainResult{}, fmt.Errorf("lossless: maintain: rewriteTranscriptEntries: %w", err)
		}
		// The host refused or deferred the rewrite (OpenClaw: "Session
		// transcript projection is rebuilding"). Nothing is lost: the
		// originals and their aliases are stored, the transcript is as it
		// was, and the next maintain plans the same rewrite again. The turn
		// must not fail for it.
		slog.Warn("lossless: maintain: the host did not rewrite the transcript now; a later maintain retries", "err", err)
		return core.MaintainResult{Reason: MaintainRewriteDeferred + ": " + err.Error()}, nil
	}
	out := core.MaintainResult{Changed: res.Changed, BytesFreed: res.BytesFreed, RewrittenEntries: res.RewrittenEntries}
	if !res.Changed {
		out.Reason = "the host rewrote nothing"
		if res.Reason != "" {
			out.Reason += ": " + res.Reason
		}
	}
	return out, nil
}

// RewriteSuffix returns the ids of the active branch's entries from the
// first one reps replaces to the end: the suffix the host re-appends, as
// this engine read it. The host refuses the rewrite when its branch has
// entries outside it (appended since), so nothing the engine has not seen
// is rewritten. Entries without an id are left out (the host's guard skips
// them too).
func RewriteSuffix(branch []core.Entry, reps []core.TranscriptRewrite) []string {
	replaced := make(map[string]bool, len(reps))
	for _, r := range reps {
		replaced[r.EntryID] = true
	}
	for i, en := range branch {
		if !replaced[en.ID] {
			continue
		}
		ids := make([]string, 0, len(branch)-i)
		for _, s := range branch[i:] {
			if s.ID != "" {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
	return nil
}

// alias maps a reference message's key to the stored original's sequence.
type alias struct {
	ref store.Hash
	seq uint64
}

// minTokens is the size over which Maintain rewrites a tool result.
func minTokens(cfg Config) int {
	if cfg.MaintainMinTokens <= 0 {
		return DefaultMaintainMinTokens
	}
	return cfg.MaintainMinTokens
}

// rewritesFor returns the replacements of the old large tool results of
// the transcript's entries that conversation c stores. The fresh tail is
// the window's newest FreshTailMessages message entries; entries before the
// window (kept in the file by earlier compactions) are old too.
func rewritesFor[C dag.Store](ctx context.Context, e Port[C], c store.ConvID, entries, window []core.Entry) ([]core.TranscriptRewrite, []alias, error) {
	cfg := e.Config()
	min := minTokens(cfg)
	fresh := map[string]bool{}
	for i, n := len(window)-1, 0; i >= 0 && n < cfg.FreshTailMessages; i-- {
		if window[i].Type == core.EntryMessage {
			fresh[window[i].ID] = true
			n++
		}
	}
	var reps []core.TranscriptRewrite
	var aliases []alias
	err := e.View(ctx, func(r store.Reader) error {
		for i, ent := range entries {
			if i%256 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("lossless: maintain: %w", err)
				}
			}
			m := ent.Message
			if ent.Type != core.EntryMessage || ent.ID == "" || fresh[ent.ID] || m.Role() != core.RoleToolResult {
				continue
			}
			// Cheap filter before counting: chars/4 under-estimates no
			// tokenizer by more than 4x.
			if len(m.Raw()) < min {
				continue
			}
			h := e.Hash(m.Raw())
			seq, err := r.SeqByHash(c, h)
			if errors.Is(err, store.ErrNotFound) {
				continue // not stored byte for byte: never rewrite what could be lost
			}
			if err != nil {
				return fmt.Errorf("lossless: read: %w", err)
			}
			rec, err := e.MessageHeader(r, c, seq)
			if err != nil {
				return err
			}
			if rec.Hash != h || rec.Tokens <= min {
				continue // an alias (already a reference) or small
			}
			ref, err := core.ParseMessage(e.Reference(m, rec.Tokens))
			if err != nil {
				return fmt.Errorf("lossless: maintain: reference: %w", err)
			}
			if len(ref.Raw()) >= len(m.Raw()) {
				continue
			}
			reps = append(reps, core.TranscriptRewrite{EntryID: ent.ID, Message: ref})
			aliases = append(aliases, alias{ref: e.Hash(ref.Raw()), seq: seq})
		}
		return nil
	})
	return reps, aliases, err
}

// writeAliases records each reference's key as an alias of its original in
// the hash index (an existing entry is left alone).
func writeAliases[C dag.Store](ctx context.Context, e Port[C], c store.ConvID, aliases []alias) error {
	return e.UpdateConv(ctx, c, func(tx store.Tx) error {
		for _, a := range aliases {
			// An entry that exists, even one that does not decode, is left
			// alone.
			if _, err := tx.SeqByHash(c, a.ref); err == nil || errors.Is(err, store.ErrCorrupt) {
				continue
			} else if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("lossless: maintain: %w", err)
			}
			if err := tx.PutHash(c, a.ref, a.seq); err != nil {
				return fmt.Errorf("lossless: maintain: write alias: %w", err)
			}
		}
		return nil
	})
}

// maintainHost is Maintain for a host that keeps the transcript: the
// transcript is read from the conversation's cursor (entries new since the
// last read), then every mapped tool result older than the fresh tail,
// above Config.MaintainMinTokens and stored byte for byte is replaced by a
// reference, as for a file. The request names the mapped entries from the
// first replaced one to the end, so a transcript that gained entries since
// is left alone. After a rewrite the map is dropped (the host gives the
// re-appended suffix new ids) and the next read starts over.
func maintainHost[C dag.Store](ctx context.Context, e Port[C], p core.MaintainParams, agent string, c store.ConvID) (core.MaintainResult, error) {
	rc := p.RuntimeContext
	if rc.ReadTranscript == nil {
		return core.MaintainResult{Reason: MaintainHostNoReader}, nil
	}
	r, err := e.SyncHost(ctx, agent, c, rc.ReadTranscript)
	if err != nil {
		return core.MaintainResult{}, fmt.Errorf("lossless: maintain: %w", err)
	}
	if r.Missing || r.Unavailable != "" {
		return core.MaintainResult{Reason: "host transcript not readable now: nothing to rewrite"}, nil
	}
	entries, err := e.HostEntries(ctx, c)
	if err != nil {
		return core.MaintainResult{}, err
	}
	cfg := e.Config()
	min := minTokens(cfg)
	tail := len(entries) - cfg.FreshTailMessages
	var reps []core.TranscriptRewrite
	var aliases []alias
	first := -1
	err = e.View(ctx, func(sr store.Reader) error {
		for i := 0; i < tail; i++ {
			en := entries[i]
			if en.EntryID == "" {
				continue
			}
			h, err := e.MessageHeader(sr, c, en.Seq)
			if err != nil {
				return err
			}
			if h.Role != core.RoleToolResult || h.Tokens <= min || h.Hash != en.Key {
				continue // not a tool result, small, or already a reference
			}
			r, err := e.Message(sr, c, en.Seq)
			if err != nil {
				return err
			}
			m, err := core.ParseMessage(r.Raw)
			if err != nil {
				return fmt.Errorf("lossless: maintain: message %d: %w", en.Seq, err)
			}
			ref, err := core.ParseMessage(e.Reference(m, r.Tokens))
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
			aliases = append(aliases, alias{ref: e.Hash(ref.Raw()), seq: en.Seq})
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
	out, err := requestRewrite(ctx, e, rc, c, aliases, core.RewriteRequest{Replacements: reps, AllowedRewriteSuffixEntryIDs: suffix})
	if err == nil && (out.Changed || strings.HasPrefix(out.Reason, MaintainRewriteDeferred)) {
		// The host re-appended the suffix with new ids (or failed part way,
		// which it may have done after writing): read again next time.
		err = e.DropHostMap(ctx, agent, c)
	}
	return out, err
}

// maintainCompact is the compaction decision of a host-model summarizer:
// a committed turn cannot compact in the background without the host's
// model, so Maintain (which the host calls after the commit, offering it)
// compacts the conversation when its context is over contextThreshold of
// the last assembled budget. A failure is logged, never fails Maintain.
func maintainCompact[C dag.Store](ctx context.Context, e Port[C], p core.MaintainParams) {
	if !HostSummarizer(e) || p.RuntimeContext == nil || p.RuntimeContext.LLMComplete == nil ||
		p.Reason == core.MaintainReasonBootstrap {
		return // not before the user's model call: after the turn only
	}
	agent, sessionID, sessionKey := e.Identity("", p.SessionID, p.SessionKey, p.SessionTarget)
	conv, err := e.Conversation(ctx, agent, sessionID, sessionKey)
	if err != nil {
		return
	}
	budget := e.TurnBudget(agent, sessionID, sessionKey, p.RuntimeContext)
	items, err := conv.Items(ctx)
	if err != nil || float64(dag.SumTokens(items)) <= e.Config().ContextThreshold*float64(budget) {
		return
	}
	out, err := Run(WithHostLLM(ctx, p.RuntimeContext), e, conv, dag.Target{Budget: budget, Mode: dag.ModeThreshold}, false)
	name := e.ID(conv).String()
	if err != nil && !errors.Is(err, ErrCompacting) && !errors.Is(err, context.Canceled) && !errors.Is(err, core.ErrClosed) {
		slog.Warn("lossless: compaction in maintain failed", "conversation", name, "err", err)
	}
	if t := out.Tally; t.Fallback > 0 {
		slog.Info("lossless: compaction in maintain: summaries written by the extractive fallback", "conversation", name,
			"fallbacks", t.Fallback, "model", t.Model, "reason", t.Reason)
	}
}
