package lossless

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/ingest"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// FormatVersion is the store format this build writes. A store with a
// higher version is refused (core.ErrFormatTooNew); a lower one is migrated
// on open. Format 3 (badgerstore) checksums every record but the format
// record and the messages; a store created before it keeps its older
// records, read without a checksum (store.Meta.Since).
const FormatVersion = 3

// DefaultMaxMessageBytes is the default of Config.MaxMessageBytes.
const DefaultMaxMessageBytes = 32 << 20

// convID identifies a conversation (store.ConvID).
type convID = store.ConvID

// metaRecord is the store's format record.
type metaRecord = store.Meta

// convRecord is a conversation's record: C conv -> JSON.
type convRecord = store.Conversation

// newConvID derives a conversation id from its agent and first name.
func newConvID(agent, name string) convID { return records.NewConvID(agent, name) }

// checkFormat writes the format record of a new store, refuses a newer
// format or another engine's store, and migrates an older format.
func (e *Engine) checkFormat(ctx context.Context) error {
	check := func(m metaRecord) error {
		if m.Engine != EngineID {
			return fmt.Errorf("lossless: store %s was written by engine %q, not %q", e.where, m.Engine, EngineID)
		}
		if m.Format > FormatVersion {
			return fmt.Errorf("lossless: store %s has format %d, written by a newer lossless; this build reads formats up to %d: upgrade lossless to open it (the store was not changed): %w",
				e.where, m.Format, FormatVersion, core.ErrFormatTooNew)
		}
		return nil
	}
	if e.cfg.ReadOnly {
		return e.st.View(ctx, func(r store.Reader) error {
			m, err := r.Meta()
			if err != nil {
				has, herr := r.HasData()
				if herr != nil {
					return fmt.Errorf("lossless: store %s: read format: %w; looking for other records: %w", e.where, err, herr)
				}
				if has {
					return e.noFormat(err)
				}
				return fmt.Errorf("lossless: store %s: read format: %w", e.where, err)
			}
			return check(m)
		})
	}
	// Processes opening a fresh shared store at once write its format
	// record one at a time.
	release, err := e.storeLock(ctx, metaLockName)
	if err != nil {
		return err
	}
	defer release()
	return e.st.Update(ctx, func(tx store.Tx) error {
		m, err := tx.Meta()
		if err != nil {
			// Only a store holding nothing is new: one that holds records
			// lost its format record (or the record is damaged), and a new
			// one would hide them (ErrNoFormat).
			has, herr := tx.HasData()
			if herr != nil {
				return fmt.Errorf("lossless: store %s: read format: %w; looking for other records: %w", e.where, err, herr)
			}
			if has || !errors.Is(err, store.ErrNotFound) {
				// (A format record that does not decode in a store holding
				// nothing else is refused too: someone wrote it.)
				return e.noFormat(err)
			}
			return tx.PutMeta(metaRecord{Format: FormatVersion, Engine: EngineID, Tokenizer: e.cfg.Tokenizer, Since: FormatVersion})
		}
		if err := check(m); err != nil {
			return err
		}
		if m.Format < FormatVersion {
			// Format 0 (never released) had no tokenizer field. Format 1
			// stored every message body uncompressed (record byte 1); format
			// 2 may compress it (record byte 2) and reads format-1 records
			// as they are. Format 3 writes its records with a checksum and
			// reads those written before without one, in a store whose
			// format record has no Since (kept absent here): nothing is
			// rewritten, so a read-only open reads an old store as well.
			m.Format = FormatVersion
			if m.Tokenizer == "" {
				m.Tokenizer = e.cfg.Tokenizer
			}
			return tx.PutMeta(m)
		}
		if m.Tokenizer != "" && m.Tokenizer != e.cfg.Tokenizer {
			slog.Warn("lossless: store token counts were made with another tokenizer",
				"store", m.Tokenizer, "config", e.cfg.Tokenizer)
		}
		return nil
	})
}

// noFormat is the error of an open of a store whose format record could
// not be read (err) while the store holds data, or that holds a format
// record that does not decode (ErrNoFormat).
func (e *Engine) noFormat(err error) error {
	return fmt.Errorf("%w (%w): store %s holds data, so it is not new; it is not opened (a new format record would make it look empty), and nothing was written. "+
		"`lossless doctor --store %s` reports it; the format record restored (from a backup, or as the README says under \"Only an empty store becomes a new store\"), everything in it reads again",
		ErrNoFormat, err, e.where, e.where)
}

// storeUpdate is e.st.Update behind the engine's free-space guard, as update
// (space.go) is db.Update: a write on a full disk is an ErrDiskFull error.
func (e *Engine) storeUpdate(ctx context.Context, fn func(store.Tx) error) error {
	if err := e.checkSpace(); err != nil {
		return err
	}
	return e.st.Update(ctx, fn)
}

// convState is the in-memory state of one conversation: its record and
// its last assembled window. It lives in a cache bounded in bytes and may
// be evicted at any time (asmcache.go, lossless/internal/assemble's Cache), even
// while its conversation is locked: the locks live outside the cache
// (Engine.convLocks, Engine.winLocks), and a state evicted while locked is
// only forgotten (the next one reads the record again). Get a state locked
// through lockLive, lockShared, lockConv or lockWindow.
type convState struct {
	id convID
	// rec, loaded, release and unlockConv are guarded by the
	// conversation's write lock (Engine.convLocks).
	rec convRecord
	// loaded is true once rec was read from the store (on a shared store,
	// since the store's lock of the conversation was last taken).
	loaded bool
	// release releases the store's lock of the conversation, held with
	// the write lock on a shared store (lockShared); nil otherwise.
	release func()
	// unlockConv releases the conversation's write lock (lockLive).
	unlockConv func()

	// asmMsgs and asmSums are the parsed messages and rendered summaries
	// of the last assembled context, reused by the next Assemble (most of
	// a context is the same from one turn to the next); guarded by the
	// conversation's window lock (Engine.winLocks).
	asmMsgs map[uint64]core.Message
	asmSums map[string]core.Message
	// asmCreated is the record's Created time the window was assembled
	// from, on a shared store: another process may delete the
	// conversation (retention) and create it again with the same id,
	// whose sequence numbers then name other messages.
	asmCreated int64

	// The cache keeps its bookkeeping (cost, resolution keys, display
	// name) beside it (assemble.Cache, asmcache.go).
}

// unlock releases what lockLive, lockConv or lockShared took: the store's
// lock of the conversation when the store is shared, then the
// conversation's write lock. Every path that took them releases them
// through it.
func (s *convState) unlock() {
	if release := s.release; release != nil {
		s.release = nil
		release()
	}
	unlockConv := s.unlockConv
	s.unlockConv = nil
	unlockConv()
}

// Names of the store's cross-process locks (store.Locker), records'
// (records.ConvLockName and the rest).
func convLockName(c convID) string      { return records.ConvLockName(c) }
func compactLockName(c convID) string   { return records.CompactLockName(c) }
func namesLockName(agent string) string { return records.NamesLockName(agent) }
func importLockName(key string) string  { return records.ImportLockName(key) }

const metaLockName = records.MetaLockName

// lockShared returns c's state with its write lock held and, when the
// store is shared by several processes (e.locker), the store's lock of the
// conversation too; the record is then marked unloaded, since another
// process may have written it since this one last held the lock. The
// caller releases both with s.unlock. On a store that is not shared it is
// lockLive.
func (e *Engine) lockShared(ctx context.Context, c convID) (*convState, error) {
	s := e.lockLive(c)
	if e.locker == nil {
		return s, nil
	}
	release, err := e.locker.Lock(ctx, convLockName(c))
	if err != nil {
		s.unlock()
		return nil, fmt.Errorf("lossless: conversation %s: take its lock in the shared store: %w", c, err)
	}
	s.release = release
	s.loaded = false
	return s, nil
}

// storeLock takes the store's lock called name when the store is shared
// (a no-op release otherwise).
func (e *Engine) storeLock(ctx context.Context, name string) (func(), error) {
	if e.locker == nil {
		return func() {}, nil
	}
	release, err := e.locker.Lock(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("lossless: take lock %q in the shared store: %w", name, err)
	}
	return release, nil
}

// checkBase is ingest.CheckBase: within tx, a write to c based on record
// base is refused when another process wrote c meanwhile (a shared store)
// or when a message is stored at base's next sequence number.
func (e *Engine) checkBase(tx store.Tx, c convID, base convRecord) error {
	return ingest.CheckBase(tx, c, base, e.locker != nil)
}

// lockConv locks conversation c and loads its record (lockShared: on a
// shared store, reads it afresh). The caller unlocks with s.unlock.
func (e *Engine) lockConv(ctx context.Context, c convID) (*convState, error) {
	s, err := e.lockShared(ctx, c)
	if err != nil {
		return nil, err
	}
	if !s.loaded {
		err := e.st.View(ctx, func(r store.Reader) error {
			rec, err := r.Conversation(c)
			if err != nil {
				return fromStore(err)
			}
			s.rec = rec
			return nil
		})
		if err != nil {
			s.unlock()
			if e.locker != nil && errors.Is(err, core.ErrNotFound) {
				// Another process deleted it (retention): the session is
				// resolved afresh next time.
				e.forgetResolved(c)
			}
			return nil, err
		}
		s.loaded = true
		e.noteRecord(s)
	}
	if hook := e.cfg.hooks.lockConv; hook != nil {
		hook(e, c)
	}
	if err := ctx.Err(); err != nil {
		s.unlock()
		return nil, fmt.Errorf("lossless: %w", err)
	}
	if s.rec.Retiring {
		s.unlock()
		return nil, retiringErr(c, "")
	}
	return s, nil
}

// lockNames takes metaMu, then the agent's names lock in a shared store
// (resolve's order: metaMu comes before a conversation's lock); the
// returned function releases both.
func (e *Engine) lockNames(ctx context.Context, agent string) (func(), error) {
	e.metaMu.Lock()
	release, err := e.storeLock(ctx, namesLockName(agent))
	if err != nil {
		e.metaMu.Unlock()
		return nil, err
	}
	return func() {
		release()
		e.metaMu.Unlock()
	}, nil
}
