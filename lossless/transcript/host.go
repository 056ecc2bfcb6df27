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

// SyncHost reads the host-kept transcript of conversation c from its
// cursor to the end, stores the messages not stored yet (in transcript
// order) and maps every entry read to its message. Pages are stored before
// the cursor moves past them, so an interrupted sync repeats at most one
// page (storing nothing twice). The caller holds the import lock of the
// transcript (HostLockKey).
func SyncHost[P any](ctx context.Context, port Port[P], agent string, c store.ConvID, read core.HostTranscriptReader) (HostSyncResult, error) {
	var res HostSyncResult
	var cp store.HostCheckpoint
	err := port.Store().View(context.WithoutCancel(ctx), func(r store.Reader) error {
		var err error
		cp, err = r.HostCheckpoint(agent, c)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		cp = store.HostCheckpoint{}
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
			if derr := dropHostMap(ctx, port, agent, c); derr != nil {
				return res, derr
			}
			cp = store.HostCheckpoint{Conv: c.String()}
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
			if err := dropHostMap(ctx, port, agent, c); err != nil {
				return res, err
			}
			cp = store.HostCheckpoint{Conv: c.String()}
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
		n, err := storeHostPage(ctx, port, c, &cp, page)
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
				if err := saveHostCheckpoint(ctx, port, agent, c, cp); err != nil {
					return res, err
				}
			}
			return res, nil
		}
		cp.Cursor = next
		if err := saveHostCheckpoint(ctx, port, agent, c, cp); err != nil {
			return res, err
		}
	}
}

// storeHostPage stores a page's messages (those not stored yet) and maps
// its entries, then saves the checkpoint with the page's cursor.
func storeHostPage[P any](ctx context.Context, port Port[P], c store.ConvID, cp *store.HostCheckpoint, page core.TranscriptPage) (int, error) {
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
		if err := port.Validate(en.Message); err != nil {
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
	ps, err := port.PrepareAll(ctx, msgs)
	if err != nil {
		return 0, err
	}
	n, err := port.StoreMessages(ctx, c, ps)
	if err != nil {
		return 0, err
	}
	cp.Imported += n
	// The entries of messages stored: mapped whether or not ctx is done
	// by then.
	wb, err := newBatch(context.WithoutCancel(ctx), port)
	if err != nil {
		return 0, err
	}
	defer wb.Cancel()
	for i := range ps {
		if err := wb.PutHostEntry(c, cp.Entries, store.HostEntry{Seq: port.Seq(&ps[i]), Key: port.Hash(&ps[i]), EntryID: ids[i]}); err != nil {
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
func saveHostCheckpoint[P any](ctx context.Context, port Port[P], agent string, c store.ConvID, cp store.HostCheckpoint) error {
	return update(context.WithoutCancel(ctx), port, func(tx store.Tx) error {
		if err := tx.PutHostCheckpoint(agent, c, cp); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
	})
}

// HostLockKey is the import-lock key of conversation c's host-kept
// transcript (a file's key is its absolute path): a sync holds it.
func HostLockKey(c store.ConvID) string { return "host:" + c.String() }

// dropHostMap is DropHostMap behind the engine's free-space guard.
func dropHostMap[P any](ctx context.Context, port Port[P], agent string, c store.ConvID) error {
	if err := port.CheckSpace(); err != nil {
		return err
	}
	return DropHostMap(ctx, port.Store(), agent, c)
}

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
