package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
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

// Maintain's plan: the engine's Maintain (lossless/maintain.go) resolves
// the conversation, reads the transcript (a file, or the host's through its
// entry map), and calls these over what it read: the candidates (old
// large tool results stored byte for byte), their references (the write
// path's large-message reference, made by the engine), the plan (Plan), the
// aliases (WriteAliases, under the conversation's lock) and the host's
// answer (RewriteOutcome).

// Candidate is a stored tool result Maintain may replace by a reference.
type Candidate struct {
	// Index is the entry's index in the entries planned over; EntryID is
	// its id.
	Index   int
	EntryID string
	// Seq is the stored original's sequence number, Tokens its tokens.
	Seq    uint64
	Tokens int
	// Message is the entry's message (the original's bytes).
	Message core.Message
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

// Alias maps a reference message's key to the stored original's sequence.
type Alias struct {
	Ref store.Hash
	Seq uint64
}

// MinTokens is the size over which Maintain rewrites a tool result.
func MinTokens(cfg Config) int {
	if cfg.MaintainMinTokens <= 0 {
		return DefaultMaintainMinTokens
	}
	return cfg.MaintainMinTokens
}

// FileCandidates returns the old large tool results among a transcript
// file's entries that conversation c stores byte for byte (read through
// r). The fresh tail is the window's newest cfg.FreshTailMessages message
// entries; entries before the window (kept in the file by earlier
// compactions) are old too.
func FileCandidates(ctx context.Context, r store.Reader, c store.ConvID, cfg Config, entries, window []core.Entry) ([]Candidate, error) {
	min := MinTokens(cfg)
	fresh := map[string]bool{}
	for i, n := len(window)-1, 0; i >= 0 && n < cfg.FreshTailMessages; i-- {
		if window[i].Type == core.EntryMessage {
			fresh[window[i].ID] = true
			n++
		}
	}
	var out []Candidate
	for i, ent := range entries {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("lossless: maintain: %w", err)
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
		h := records.HashRaw(m.Raw())
		seq, err := r.SeqByHash(c, h)
		if errors.Is(err, store.ErrNotFound) {
			continue // not stored byte for byte: never rewrite what could be lost
		}
		if err != nil {
			return nil, fmt.Errorf("lossless: read: %w", err)
		}
		rec, err := records.GetMsgHeader(r, c, seq)
		if err != nil {
			return nil, err
		}
		if rec.Hash != h || rec.Tokens <= min {
			continue // an alias (already a reference) or small
		}
		out = append(out, Candidate{Index: i, EntryID: ent.ID, Seq: seq, Tokens: rec.Tokens, Message: m})
	}
	return out, nil
}

// HostCandidates returns the old large tool results among the mapped
// entries of a host-kept transcript (its entry map, in order): those older
// than the newest cfg.FreshTailMessages entries, with an entry id, above
// MinTokens and not already a reference.
func HostCandidates(r store.Reader, c store.ConvID, cfg Config, entries []store.HostEntry) ([]Candidate, error) {
	min := MinTokens(cfg)
	var out []Candidate
	for i := 0; i < len(entries)-cfg.FreshTailMessages; i++ {
		en := entries[i]
		if en.EntryID == "" {
			continue
		}
		h, err := records.GetMsgHeader(r, c, en.Seq)
		if err != nil {
			return nil, err
		}
		if h.Role != core.RoleToolResult || h.Tokens <= min || h.Hash != en.Key {
			continue // not a tool result, small, or already a reference
		}
		rec, err := records.GetMsg(r, c, en.Seq)
		if err != nil {
			return nil, err
		}
		m, err := core.ParseMessage(rec.Raw)
		if err != nil {
			return nil, fmt.Errorf("lossless: maintain: message %d: %w", en.Seq, err)
		}
		out = append(out, Candidate{Index: i, EntryID: en.EntryID, Seq: en.Seq, Tokens: rec.Tokens, Message: m})
	}
	return out, nil
}

// Plan returns the replacements of cands by their references (refs[i] is
// the reference message of cands[i]) and the aliases to record: a
// reference not shorter than its original is left out. first is the Index
// of the first candidate kept (-1: none).
func Plan(cands []Candidate, refs [][]byte) (reps []core.TranscriptRewrite, aliases []Alias, first int, err error) {
	first = -1
	for i, cd := range cands {
		ref, err := core.ParseMessage(refs[i])
		if err != nil {
			return nil, nil, -1, fmt.Errorf("lossless: maintain: reference: %w", err)
		}
		if len(ref.Raw()) >= len(cd.Message.Raw()) {
			continue
		}
		if first < 0 {
			first = cd.Index
		}
		reps = append(reps, core.TranscriptRewrite{EntryID: cd.EntryID, Message: ref})
		aliases = append(aliases, Alias{Ref: records.HashRaw(ref.Raw()), Seq: cd.Seq})
	}
	return reps, aliases, first, nil
}

// HostSuffix returns the ids of the mapped entries from first to the end:
// the suffix the host re-appends (the host refuses the rewrite when its
// transcript gained entries since). Entries without an id are left out.
func HostSuffix(entries []store.HostEntry, first int) []string {
	suffix := make([]string, 0, len(entries)-first)
	for _, en := range entries[first:] {
		if en.EntryID != "" {
			suffix = append(suffix, en.EntryID)
		}
	}
	return suffix
}

// WriteAliases records in tx each reference's key as an alias of its
// original in conversation c's hash index (an existing entry is left
// alone). The caller holds c's lock.
func WriteAliases(tx store.Tx, c store.ConvID, aliases []Alias) error {
	for _, a := range aliases {
		// An entry that exists, even one that does not decode, is left
		// alone.
		if _, err := tx.SeqByHash(c, a.Ref); err == nil || errors.Is(err, store.ErrCorrupt) {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("lossless: maintain: %w", err)
		}
		if err := tx.PutHash(c, a.Ref, a.Seq); err != nil {
			return fmt.Errorf("lossless: maintain: write alias: %w", err)
		}
	}
	return nil
}

// RewriteOutcome is Maintain's result of the host's answer to a rewrite
// request made under ctx. A refused or deferred rewrite (OpenClaw: "Session
// transcript projection is rebuilding") is no error: nothing is lost (the
// originals and their aliases are stored, the transcript is as it was) and
// the next maintain plans the same rewrite again; the turn must not fail
// for it. Only a canceled ctx makes it an error.
func RewriteOutcome(ctx context.Context, res core.RewriteResult, err error) (core.MaintainResult, error) {
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return core.MaintainResult{}, fmt.Errorf("lossless: maintain: rewriteTranscriptEntries: %w", err)
		}
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
