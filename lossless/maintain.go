package lossless

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/lossless-engine/contextengine/core"
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
)

var _ core.Maintainer = (*Engine)(nil)

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
// host's reader instead of a file (host.go).
func (e *Engine) Maintain(ctx context.Context, p core.MaintainParams) (core.MaintainResult, error) {
	res, err := e.maintain(ctx, p)
	if err == nil {
		e.maintainCompact(ctx, p) // a host-model summarizer compacts here (host.go)
	}
	return res, err
}

func (e *Engine) maintain(ctx context.Context, p core.MaintainParams) (core.MaintainResult, error) {
	done, err := e.enter()
	if err != nil {
		return core.MaintainResult{}, err
	}
	defer done()
	agent, sessionID, sessionKey := e.sessionIdentity("", p.SessionID, p.SessionKey, p.SessionTarget)
	if p.RuntimeContext == nil || p.RuntimeContext.RewriteTranscriptEntries == nil {
		return core.MaintainResult{Reason: MaintainNoRewriter}, nil
	}
	host := core.HostKeepsTranscript(p.SessionFile, p.RuntimeContext)
	if p.SessionFile == "" && !host {
		return core.MaintainResult{Reason: MaintainNoSessionFile}, nil
	}
	c, err := e.lookup(ctx, agent, sessionID, sessionKey)
	if errors.Is(err, core.ErrUnknownSession) {
		return core.MaintainResult{Reason: MaintainUnknownSession}, nil
	}
	if err != nil {
		return core.MaintainResult{}, err
	}
	if !host {
		if host, err = e.hostKept(ctx, agent, c); err != nil {
			return core.MaintainResult{}, err
		}
	}
	if host {
		return e.maintainHost(ctx, p, agent, c) // host.go
	}
	t, err := core.ReadTranscript(p.SessionFile)
	if errors.Is(err, os.ErrNotExist) {
		return core.MaintainResult{Reason: MaintainNoSessionFile}, nil
	}
	if err != nil {
		return core.MaintainResult{}, fmt.Errorf("lossless: maintain: %w", err)
	}
	reps, aliases, err := e.rewritesFor(ctx, c, t.Entries, t.Window().Entries)
	if err != nil {
		return core.MaintainResult{}, err
	}
	if len(reps) == 0 {
		return core.MaintainResult{Reason: MaintainNothingToDo}, nil
	}
	req := core.RewriteRequest{Replacements: reps, AllowedRewriteSuffixEntryIDs: rewriteSuffix(t.ActiveBranch(), reps)}
	return e.requestRewrite(ctx, p.RuntimeContext, c, aliases, req)
}

// requestRewrite makes the originals behind req's references safe, then
// asks the host to rewrite: the aliases first (once the host rewrote the
// entries, a re-read of the transcript must find the references already
// stored), then a sync (the originals must survive a power loss before the
// host drops them). It reports what the host did.
func (e *Engine) requestRewrite(ctx context.Context, rc *core.RuntimeContext, c convID, aliases []alias, req core.RewriteRequest) (core.MaintainResult, error) {
	if err := e.writeAliases(ctx, c, aliases); err != nil {
		return core.MaintainResult{}, err
	}
	if err := e.st.Sync(ctx); err != nil {
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

// rewriteSuffix returns the ids of the active branch's entries from the
// first one reps replaces to the end: the suffix the host re-appends, as
// this engine read it. The host refuses the rewrite when its branch has
// entries outside it (appended since), so nothing the engine has not seen
// is rewritten. Entries without an id are left out (the host's guard skips
// them too).
func rewriteSuffix(branch []core.Entry, reps []core.TranscriptRewrite) []string {
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
	ref msgHash
	seq uint64
}

// rewritesFor returns the replacements of the old large tool results of
// the transcript's entries that conversation c stores. The fresh tail is
// the window's newest FreshTailMessages message entries; entries before the
// window (kept in the file by earlier compactions) are old too.
func (e *Engine) rewritesFor(ctx context.Context, c convID, entries, window []core.Entry) ([]core.TranscriptRewrite, []alias, error) {
	min := e.cfg.MaintainMinTokens
	if min <= 0 {
		min = DefaultMaintainMinTokens
	}
	fresh := map[string]bool{}
	for i, n := len(window)-1, 0; i >= 0 && n < e.cfg.FreshTailMessages; i-- {
		if window[i].Type == core.EntryMessage {
			fresh[window[i].ID] = true
			n++
		}
	}
	var reps []core.TranscriptRewrite
	var aliases []alias
	err := e.st.View(ctx, func(r store.Reader) error {
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
			h := hashRaw(m.Raw())
			seq, err := r.SeqByHash(c, h)
			if errors.Is(err, store.ErrNotFound) {
				continue // not stored byte for byte: never rewrite what could be lost
			}
			if err != nil {
				return fmt.Errorf("lossless: read: %w", err)
			}
			rec, err := getMsgHeader(r, c, seq)
			if err != nil {
				return err
			}
			if rec.Hash != h || rec.Tokens <= min {
				continue // an alias (already a reference) or small
			}
			ref, err := core.ParseMessage(largeReference(m, rec.Tokens))
			if err != nil {
				return fmt.Errorf("lossless: maintain: reference: %w", err)
			}
			if len(ref.Raw()) >= len(m.Raw()) {
				continue
			}
			reps = append(reps, core.TranscriptRewrite{EntryID: ent.ID, Message: ref})
			aliases = append(aliases, alias{ref: hashRaw(ref.Raw()), seq: seq})
		}
		return nil
	})
	return reps, aliases, err
}

// writeAliases records each reference's key as an alias of its original in
// the hash index (an existing entry is left alone).
func (e *Engine) writeAliases(ctx context.Context, c convID, aliases []alias) error {
	s, err := e.lockConv(ctx, c)
	if err != nil {
		return err
	}
	defer s.unlock()
	return e.storeUpdate(ctx, func(tx store.Tx) error {
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
