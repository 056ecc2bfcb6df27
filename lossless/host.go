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
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// Hosts that keep the transcript themselves (OpenClaw 2026.9.6: rows in its
// SQLite store; sessionFile is a session key, never a path).
//
// The engine reads such a transcript only through the host
// (RuntimeContext.ReadTranscript, which the plugin relays to OpenClaw's
// SDK), page by page from a cursor it keeps per conversation, so a repeat
// bootstrap reads only what is new. Every entry read is mapped to the
// stored message it holds (stored now, or earlier by commitTurn: messages
// are identified by their bytes), which gives maintain the host's entry
// ids without reading the transcript again: the store keeps, per
// conversation, a host checkpoint (store.HostCheckpoint: the cursor) and
// the entries in transcript order (store.HostEntry: seq, key, entry id;
// key is the hash of the entry's own bytes: it differs from the stored
// message's when the entry holds a reference maintain put there).
//
// A "reset" answer (the host rewrote or reset the transcript) or a rewrite
// made by maintain drops the cursor and the map; the next read starts
// over, storing nothing twice.

// hostCheckpoint is the progress of reading a host-kept transcript.
type hostCheckpoint = store.HostCheckpoint

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

// hostPageMessages is the number of messages asked per page.
const hostPageMessages = 1000

// maxHostResets bounds the "reset" answers one sync follows.
const maxHostResets = 2

// hostSyncResult reports one sync of a host-kept transcript.
type hostSyncResult struct {
	Imported, Entries int
	Missing           bool
	Unavailable       string
}

// syncHost reads the host-kept transcript of conversation c from its
// cursor to the end, stores the messages not stored yet (in transcript
// order) and maps every entry read to its message. Pages are stored before
// the cursor moves past them, so an interrupted sync repeats at most one
// page (storing nothing twice).
func (e *Engine) syncHost(ctx context.Context, agent string, c convID, read core.HostTranscriptReader) (hostSyncResult, error) {
	var res hostSyncResult
	unlock, err := e.lockImport(ctx, agent, "host:"+c.String())
	if err != nil {
		return res, err
	}
	defer unlock()
	var cp hostCheckpoint
	err = e.st.View(context.WithoutCancel(ctx), func(r store.Reader) error {
		var err error
		cp, err = r.HostCheckpoint(agent, c)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		cp = hostCheckpoint{}
	} else if err != nil {
		return res, fmt.Errorf("lossless: read: %w", err)
	}
	cp.Conv = c.String()
	resets := 0
	for {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("lossless: read host transcript: %w", err)
		}
		req := core.TranscriptReadRequest{MaxMessages: hostPageMessages}
		if cp.Cursor != "" {
			cur := cp.Cursor
			req.Cursor = &cur
		}
		page, err := read(ctx, req)
		if err != nil && cp.Cursor != "" && ctx.Err() == nil && resets < maxHostResets {
			// A cursor the host no longer takes (rewritten transcript, a
			// fence it crossed): start over once, storing nothing twice.
			slog.Info("lossless: host transcript read failed at the cursor; reading from the start", "conversation", c.String(), "err", err)
			resets++
			if derr := e.dropHostMap(ctx, agent, c); derr != nil {
				return res, derr
			}
			cp = hostCheckpoint{Conv: c.String()}
			continue
		}
		if err != nil {
			return res, fmt.Errorf("lossless: read host transcript: %w", err)
		}
		switch page.Kind {
		case core.TranscriptPageKind:
		case core.TranscriptResetKind:
			if resets++; resets > maxHostResets {
				return res, fmt.Errorf("lossless: read host transcript: reset %d times in one read (%s)", resets, page.Reason)
			}
			if err := e.dropHostMap(ctx, agent, c); err != nil {
				return res, err
			}
			cp = hostCheckpoint{Conv: c.String()}
			continue
		case core.TranscriptMissingKind:
			res.Missing = true
			return res, nil
		case core.TranscriptUnavailableKind:
			res.Unavailable = page.Reason
			if res.Unavailable == "" {
				res.Unavailable = "unavailable"
			}
			return res, nil
		default:
			return res, fmt.Errorf("lossless: read host transcript: unknown answer kind %q", page.Kind)
		}
		n, err := e.storeHostPage(ctx, agent, c, &cp, page)
		if err != nil {
			return res, err
		}
		res.Imported += n
		res.Entries += len(page.Entries)
		next := page.CursorString()
		if page.HasMore && next == cp.Cursor {
			return res, fmt.Errorf("lossless: read host transcript: the host says there is more but its cursor did not move (%q)", next)
		}
		if !page.HasMore || next == "" {
			if next != "" {
				cp.Cursor = next
				if err := e.saveHostCheckpoint(ctx, agent, c, cp); err != nil {
					return res, err
				}
			}
			return res, nil
		}
		cp.Cursor = next
		if err := e.saveHostCheckpoint(ctx, agent, c, cp); err != nil {
			return res, err
		}
	}
}

// storeHostPage stores a page's messages (those not stored yet) and maps
// its entries, then saves the checkpoint with the page's cursor.
func (e *Engine) storeHostPage(ctx context.Context, agent string, c convID, cp *hostCheckpoint, page core.TranscriptPage) (int, error) {
	if len(page.Entries) == 0 {
		return 0, nil
	}
	msgs := make([]core.Message, 0, len(page.Entries))
	ids := make([]string, 0, len(page.Entries))
	for _, en := range page.Entries {
		// An entry the engine cannot store (no message, over
		// maxMessageBytes) is reported and skipped, as a file import skips
		// a bad line: it must not stop every later read of the session.
		// It is not mapped, so maintain never names it (the host's suffix
		// guard then refuses a rewrite spanning it: nothing is lost).
		if err := validateMessage(en.Message, e.cfg.MaxMessageBytes); err != nil {
			slog.Warn("lossless: host transcript entry skipped", "conversation", c.String(), "entry", en.EntryID, "err", err)
			cp.Skipped++
			continue
		}
		msgs = append(msgs, en.Message)
		ids = append(ids, en.EntryID)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	ps, err := e.prepare(ctx, msgs, false)
	if err != nil {
		return 0, err
	}
	n, err := e.ingestInto(ctx, c, ps)
	if err != nil {
		return 0, err
	}
	cp.Imported += n
	// The entries of messages stored: mapped whether or not ctx is done
	// by then.
	wb, err := e.storeBatch(context.WithoutCancel(ctx))
	if err != nil {
		return 0, err
	}
	defer wb.Cancel()
	for i := range ps {
		if err := wb.PutHostEntry(c, cp.Entries, store.HostEntry{Seq: ps[i].seq, Key: ps[i].hash, EntryID: ids[i]}); err != nil {
			return 0, fmt.Errorf("lossless: write host entry map: %w", err)
		}
		cp.Entries++
	}
	if err := wb.Flush(); err != nil {
		return 0, fmt.Errorf("lossless: write host entry map: %w", err)
	}
	return n, nil
}

// saveHostCheckpoint writes the checkpoint of c's host-kept transcript
// (whether or not ctx is done by then: the pages it records are stored).
func (e *Engine) saveHostCheckpoint(ctx context.Context, agent string, c convID, cp hostCheckpoint) error {
	return e.storeUpdate(context.WithoutCancel(ctx), func(tx store.Tx) error {
		if err := tx.PutHostCheckpoint(agent, c, cp); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
	})
}

// dropHostMap forgets the cursor and entry map of conversation c's
// host-kept transcript (the next sync reads it from the start). The
// entries go in a batch: a long transcript's map is over what one
// transaction may delete.
func (e *Engine) dropHostMap(ctx context.Context, agent string, c convID) error {
	wb, err := e.storeBatch(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	defer wb.Cancel()
	if err := wb.DeleteHostEntries(c); err != nil {
		return fmt.Errorf("lossless: drop host entry map: %w", err)
	}
	if err := wb.DeleteHostCheckpoint(agent, c); err != nil {
		return fmt.Errorf("lossless: drop host entry map: %w", err)
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("lossless: drop host entry map: %w", err)
	}
	return ctx.Err()
}

// hostEntry is one mapped entry of a host-kept transcript.
type hostEntry struct {
	id   string
	seq  uint64
	hash msgHash // of the entry's bytes
}

// hostEntries returns conversation c's mapped host entries in transcript
// order.
func (e *Engine) hostEntries(ctx context.Context, c convID) ([]hostEntry, error) {
	var out []hostEntry
	err := e.st.View(ctx, func(r store.Reader) error {
		for en, err := range r.HostEntries(c, 0) {
			if errors.Is(err, store.ErrCorrupt) {
				return fmt.Errorf("%w: host entry map: %w", errBadRecord, err)
			}
			if err != nil {
				return err
			}
			out = append(out, hostEntry{id: en.EntryID, seq: en.Seq, hash: en.Key})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lossless: read host entry map: %w", err)
	}
	return out, nil
}

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
		first, reason, rerr := hostHasMessages(ctx, read)
		if rerr != nil {
			reason = "host transcript not read: " + rerr.Error()
		}
		if reason != "" {
			return core.BootstrapResult{Reason: reason}, nil
		}
		read = func(ctx context.Context, req core.TranscriptReadRequest) (core.TranscriptPage, error) {
			if first != nil && req.Cursor == nil {
				pg := *first // the page read above: not read twice
				first = nil
				return pg, nil
			}
			return p.RuntimeContext.ReadTranscript(ctx, req)
		}
		c, err = e.resolve(ctx, agent, sessionID, sessionKey, true)
	}
	if err != nil {
		return core.BootstrapResult{}, err
	}
	r, err := e.syncHost(ctx, agent, c, read)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, core.ErrClosed) || errors.Is(err, ErrDiskFull) {
			return core.BootstrapResult{}, fmt.Errorf("lossless: bootstrap: %w", err)
		}
		// The host's read failed: the turn goes on with what is stored (a
		// throw here would quarantine the engine); the next bootstrap
		// tries again.
		slog.Warn("lossless: bootstrap could not read the host transcript", "conversation", c.String(), "err", err)
		return core.BootstrapResult{Reason: "host transcript not read: " + err.Error()}, nil
	}
	switch {
	case r.Missing:
		return core.BootstrapResult{Reason: "no transcript yet"}, nil
	case r.Unavailable != "":
		return core.BootstrapResult{Reason: "host transcript unavailable: " + r.Unavailable}, nil
	}
	return core.BootstrapResult{Bootstrapped: true, ImportedMessages: r.Imported}, nil
}

// hostHasMessages reads the first page of a host transcript: reason is ""
// when it holds a message (page is then that page), else why there is
// nothing to import.
func hostHasMessages(ctx context.Context, read core.HostTranscriptReader) (page *core.TranscriptPage, reason string, err error) {
	pg, err := read(ctx, core.TranscriptReadRequest{MaxMessages: hostPageMessages})
	if err != nil {
		return nil, "", err
	}
	switch pg.Kind {
	case core.TranscriptMissingKind:
		return nil, "no transcript yet", nil
	case core.TranscriptUnavailableKind:
		return nil, "host transcript unavailable: " + pg.Reason, nil
	}
	if len(pg.Entries) == 0 {
		return nil, "no message in the transcript yet: nothing stored", nil
	}
	return &pg, "", nil
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
	r, err := e.syncHost(ctx, agent, c, rc.ReadTranscript)
	if err != nil {
		return core.MaintainResult{}, fmt.Errorf("lossless: maintain: %w", err)
	}
	if r.Missing || r.Unavailable != "" {
		return core.MaintainResult{Reason: "host transcript not readable now: nothing to rewrite"}, nil
	}
	entries, err := e.hostEntries(ctx, c)
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
			if en.id == "" {
				continue
			}
			h, err := getMsgHeader(sr, c, en.seq)
			if err != nil {
				return err
			}
			if h.Role != core.RoleToolResult || h.Tokens <= min || h.Hash != en.hash {
				continue // not a tool result, small, or already a reference
			}
			r, err := getMsg(sr, c, en.seq)
			if err != nil {
				return err
			}
			m, err := core.ParseMessage(r.Raw)
			if err != nil {
				return fmt.Errorf("lossless: maintain: message %d: %w", en.seq, err)
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
			reps = append(reps, core.TranscriptRewrite{EntryID: en.id, Message: ref})
			aliases = append(aliases, alias{ref: hashRaw(ref.Raw()), seq: en.seq})
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
		if en.id != "" {
			suffix = append(suffix, en.id)
		}
	}
	out, err := e.requestRewrite(ctx, rc, c, aliases, core.RewriteRequest{Replacements: reps, AllowedRewriteSuffixEntryIDs: suffix})
	if err == nil && (out.Changed || strings.HasPrefix(out.Reason, MaintainRewriteDeferred)) {
		// The host re-appended the suffix with new ids (or failed part way,
		// which it may have done after writing): read again next time.
		err = e.dropHostMap(ctx, agent, c)
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
