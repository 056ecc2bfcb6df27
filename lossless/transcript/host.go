package transcript

// Hosts that keep the transcript themselves (OpenClaw 2026.9.6: rows in its
// SQLite store; sessionFile is a session key, never a path).
//
// The engine reads such a transcript only through the host
// (RuntimeContext.ReadTranscript, which the plugin relays to OpenClaw's
// SDK), page by page from a cursor it keeps per conversation, so a repeat
// bootstrap reads only what is new. Every entry read is mapped to the stored
// message it holds (stored now, or earlier by the engine's CommitTurn:
// messages are identified by their bytes), which gives maintain the host's
// entry ids without reading the transcript again: the store keeps, per
// conversation, a host checkpoint (store.HostCheckpoint: the cursor) and the
// entries in transcript order (store.HostEntry: seq, key, entry id; key is
// the hash of the entry's own bytes: it differs from the stored message's
// when the entry holds a reference maintain put there).
//
// A "reset" answer (the host rewrote or reset the transcript) or a rewrite
// made by maintain drops the cursor and the map; the next read starts
// over, storing nothing twice.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/diskspace"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// hostPageMessages is the number of messages asked per page.
const hostPageMessages = 1000

// maxHostResets bounds the "reset" answers one sync follows.
const maxHostResets = 2

// HostSyncResult reports one sync of a host-kept transcript.
type HostSyncResult struct {
	// Imported counts the messages stored by this sync, Entries the
	// entries read.
	Imported, Entries int
	// Missing is set when the host has no transcript for the session yet.
	Missing bool
	// Unavailable is the host's reason when it cannot read the transcript
	// now ("" otherwise).
	Unavailable string
}

// HostSync is one sync of a host-kept transcript, which the engine's door
// drives: it reads conversation c's transcript from its cursor to the end
// (Next: a page at a time), the engine stores the messages not stored yet
// (in transcript order), and Stored maps every entry read to its message
// and moves the cursor. Pages are stored before the cursor moves past
// them, so an interrupted sync repeats at most one page (storing nothing
// twice). The caller holds the import lock of the transcript
// (HostLockKey).
type HostSync struct {
	st       store.Store
	space    *diskspace.Guard
	agent    string
	c        store.ConvID
	read     core.HostTranscriptReader
	cp       store.HostCheckpoint
	resets   int
	res      HostSyncResult
	finished bool
	page     HostPage
}

// HostPage is a page of a host-kept transcript to store: the engine
// validates its messages (Skip: those it will not store), prepares and
// stores the others (Valid), then calls HostSync.Stored.
type HostPage struct {
	// Messages are the page's entries' messages, in transcript order.
	Messages []core.Message
	ids      []string
	skipped  []bool
	nskipped int
	page     core.TranscriptPage
}

// Skip marks Messages[i] as not stored: err says why (the engine's
// validation). An entry the engine cannot store (no message, over
// maxMessageBytes) is logged and skipped, as a file import skips a bad
// line: it must not stop every later read of the session. It is not
// mapped, so maintain never names it (the host's suffix guard then
// refuses a rewrite spanning it: nothing is lost).
func (p *HostPage) Skip(c store.ConvID, i int, err error) {
	if p.skipped[i] {
		return
	}
	slog.Warn("lossless: host transcript entry skipped", "conversation", c.String(), "entry", p.ids[i], "err", err)
	p.skipped[i] = true
	p.nskipped++
}

// Valid returns the messages not skipped, in transcript order.
func (p *HostPage) Valid() []core.Message {
	if p.nskipped == 0 {
		return p.Messages
	}
	out := make([]core.Message, 0, len(p.Messages)-p.nskipped)
	for i, m := range p.Messages {
		if !p.skipped[i] {
			out = append(out, m)
		}
	}
	return out
}

// OpenHost starts a sync of conversation c's host-kept transcript (agent's)
// in st, read through read from its cursor (space: the store's free-space
// guard, nil for none).
func OpenHost(ctx context.Context, st store.Store, space *diskspace.Guard, agent string, c store.ConvID, read core.HostTranscriptReader) (*HostSync, error) {
	h := &HostSync{st: st, space: space, agent: agent, c: c, read: read}
	err := st.View(context.WithoutCancel(ctx), func(r store.Reader) error {
		var err error
		h.cp, err = r.HostCheckpoint(agent, c)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		h.cp = store.HostCheckpoint{}
	} else if err != nil {
		return nil, fmt.Errorf("lossless: read: %w", err)
	}
	h.cp.Conv = c.String()
	return h, nil
}

// Next reads the next page from the cursor (following the host's "reset"
// answers: the cursor and the entry map are dropped and the read starts
// over). It returns nil when the sync is over: the transcript read to its
// end, missing or unavailable (Result says which). The page is HostSync's
// until the next call.
func (h *HostSync) Next(ctx context.Context) (*HostPage, error) {
	c := h.c
	for !h.finished {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("lossless: read host transcript: %w", err)
		}
		req := core.TranscriptReadRequest{MaxMessages: hostPageMessages}
		if h.cp.Cursor != "" {
			cur := h.cp.Cursor
			req.Cursor = &cur
		}
		page, err := h.read(ctx, req)
		if err != nil && h.cp.Cursor != "" && ctx.Err() == nil && h.resets < maxHostResets {
			// A cursor the host no longer takes (rewritten transcript, a
			// fence it crossed): start over once, storing nothing twice.
			slog.Info("lossless: host transcript read failed at the cursor; reading from the start", "conversation", c.String(), "err", err)
			h.resets++
			if derr := h.dropMap(ctx); derr != nil {
				return nil, derr
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("lossless: read host transcript: %w", err)
		}
		switch page.Kind {
		case core.TranscriptPageKind:
		case core.TranscriptResetKind:
			if h.resets++; h.resets > maxHostResets {
				return nil, fmt.Errorf("lossless: read host transcript: reset %d times in one read (%s)", h.resets, page.Reason)
			}
			if err := h.dropMap(ctx); err != nil {
				return nil, err
			}
			continue
		case core.TranscriptMissingKind:
			h.res.Missing = true
			h.finished = true
			return nil, nil
		case core.TranscriptUnavailableKind:
			h.res.Unavailable = page.Reason
			if h.res.Unavailable == "" {
				h.res.Unavailable = "unavailable"
			}
			h.finished = true
			return nil, nil
		default:
			return nil, fmt.Errorf("lossless: read host transcript: unknown answer kind %q", page.Kind)
		}
		p := &h.page
		clear(p.Messages)
		p.Messages, p.ids, p.skipped, p.nskipped, p.page = p.Messages[:0], p.ids[:0], p.skipped[:0], 0, page
		for _, en := range page.Entries {
			p.Messages = append(p.Messages, en.Message)
			p.ids = append(p.ids, en.EntryID)
			p.skipped = append(p.skipped, false)
		}
		return p, nil
	}
	return nil, nil
}

// dropMap drops the cursor and the entry map (DropHostMap behind the
// free-space guard); the read starts over.
func (h *HostSync) dropMap(ctx context.Context) error {
	if err := checkSpace(h.space); err != nil {
		return err
	}
	if err := DropHostMap(ctx, h.st, h.agent, h.c); err != nil {
		return err
	}
	h.cp = store.HostCheckpoint{Conv: h.c.String()}
	return nil
}

// Stored records that p's valid messages are stored (seqs and hashes:
// their sequence numbers and keys, in the order of Valid; imported: how
// many were new): it maps p's entries, then moves the cursor past p (the
// sync is over when the host has no more).
func (h *HostSync) Stored(ctx context.Context, p *HostPage, seqs []uint64, hashes []store.Hash, imported int) error {
	c := h.c
	cp := &h.cp
	cp.Skipped += p.nskipped
	if len(seqs) > 0 {
		cp.Imported += imported
		// The entries of messages stored: mapped whether or not ctx is
		// done by then.
		wb, err := newBatch(context.WithoutCancel(ctx), h.st, h.space)
		if err != nil {
			return err
		}
		defer wb.Cancel()
		j := 0
		for i := range p.Messages {
			if p.skipped[i] {
				continue
			}
			if err := wb.PutHostEntry(c, cp.Entries, store.HostEntry{Seq: seqs[j], Key: hashes[j], EntryID: p.ids[i]}); err != nil {
				return fmt.Errorf("lossless: write host entry map: %w", err)
			}
			j++
			cp.Entries++
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("lossless: write host entry map: %w", err)
		}
	}
	page := p.page
	h.res.Imported += imported
	h.res.Entries += len(page.Entries)
	next := page.CursorString()
	if page.HasMore && next == cp.Cursor {
		return fmt.Errorf("lossless: read host transcript: the host says there is more but its cursor did not move (%q)", next)
	}
	if !page.HasMore || next == "" {
		h.finished = true
		if next != "" {
			cp.Cursor = next
			return h.saveCheckpoint(ctx)
		}
		return nil
	}
	cp.Cursor = next
	return h.saveCheckpoint(ctx)
}

// Result returns what the sync did.
func (h *HostSync) Result() HostSyncResult { return h.res }

// saveHostCheckpoint writes the checkpoint of the host-kept transcript
// (whether or not ctx is done by then: the pages it records are stored).
func (h *HostSync) saveCheckpoint(ctx context.Context) error {
	return update(context.WithoutCancel(ctx), h.st, h.space, func(tx store.Tx) error {
		if err := tx.PutHostCheckpoint(h.agent, h.c, h.cp); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
	})
}

// HostLockKey is the import-lock key of conversation c's host-kept
// transcript (a file's key is its absolute path): a sync holds it.
func HostLockKey(c store.ConvID) string { return "host:" + c.String() }

// DropHostMap forgets the cursor and entry map of conversation c's
// host-kept transcript in st (the next sync reads it from the start). The
// entries go in a batch: a long transcript's map is over what one
// transaction may delete. The caller has checked the free space.
func DropHostMap(ctx context.Context, st store.Store, agent string, c store.ConvID) error {
	wb, err := st.NewBatch(context.WithoutCancel(ctx))
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

// HostEntries returns conversation c's mapped host entries in transcript
// order (Key: the hash of the entry's own bytes).
func HostEntries(ctx context.Context, st store.Store, c store.ConvID) ([]store.HostEntry, error) {
	var out []store.HostEntry
	err := st.View(ctx, func(r store.Reader) error {
		for en, err := range r.HostEntries(c, 0) {
			if errors.Is(err, store.ErrCorrupt) {
				return fmt.Errorf("%w: host entry map: %w", records.ErrBadRecord, err)
			}
			if err != nil {
				return err
			}
			out = append(out, en.HostEntry)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lossless: read host entry map: %w", err)
	}
	return out, nil
}

// BootstrapReason is Bootstrap's result of a sync of a host-kept
// transcript that read nothing (the host has none yet, or cannot read it
// now); ok false when the sync read it.
func BootstrapReason(r HostSyncResult) (res core.BootstrapResult, ok bool) {
	switch {
	case r.Missing:
		return core.BootstrapResult{Reason: "no transcript yet"}, true
	case r.Unavailable != "":
		return core.BootstrapResult{Reason: "host transcript unavailable: " + r.Unavailable}, true
	}
	return core.BootstrapResult{}, false
}

// FirstPage wraps read so that its first read from the start returns page
// (read already) instead of asking the host again.
func FirstPage(page *core.TranscriptPage, read core.HostTranscriptReader) core.HostTranscriptReader {
	return func(ctx context.Context, req core.TranscriptReadRequest) (core.TranscriptPage, error) {
		if page != nil && req.Cursor == nil {
			pg := *page // the page read before: not read twice
			page = nil
			return pg, nil
		}
		return read(ctx, req)
	}
}

// HostHasMessages reads the first page of a host transcript: reason is ""
// when it holds a message (page is then that page), else why there is
// nothing to import. Bootstrap calls it for a session the engine has not
// stored: it is made only when its transcript holds a message.
func HostHasMessages(ctx context.Context, read core.HostTranscriptReader) (page *core.TranscriptPage, reason string, err error) {
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
