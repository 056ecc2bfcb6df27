package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/third_party/badger"
	"github.com/lossless-engine/contextengine/third_party/badger/table"
	"github.com/lossless-engine/contextengine/third_party/badger/y"

	"github.com/lossless-engine/contextengine/internal/diskusage"
	"github.com/lossless-engine/contextengine/store"
)

// Store is a store.Store on one Badger database. It is safe for concurrent
// use; the Reader, Tx and Batch it hands out are not (one goroutine each).
type Store struct {
	db   *badger.DB
	opts Options
	// maxTxn is MaxTxnBytes; txnLimit what one Update may write (keys and
	// whole values) before it fails with store.ErrTooBig.
	maxTxn, txnLimit int64
	space            *spaceGuard

	// mu guards active and closed; Close waits on idle until no call is
	// in progress. closedFlag mirrors closed for the batch writes' check.
	mu         sync.Mutex
	idle       sync.Cond
	active     int
	closed     bool
	closedFlag atomic.Bool
	// unfinished is set by a Close that returned before Badger finished
	// closing (a full disk): it is closed once Badger has, its result in
	// closeResult.
	unfinished  chan struct{}
	closeResult error

	// checked is what the format record says of records without a
	// checksum: 0 not known yet, checkedAll when the store was created at
	// format 3 or later (every record has one: one without is damaged),
	// checkedSome when it was created before (those written then have
	// none). See legacyOK.
	checked atomic.Int32
}

// Values of Store.checked.
const (
	checkedAll  = 1
	checkedSome = 2
)

// FirstCheckedFormat is the store format from which every record but the
// format record and the messages carries a checksum (checksum.go).
// store.Meta.Since at or above it makes the store refuse a record without
// one.
const FirstCheckedFormat = 3

// legacyOK reports whether records without a checksum are accepted, as
// the format record read in txn says: they are in a store created before
// FirstCheckedFormat (store.Meta.Since below it) and in one without a
// format record yet (nothing the engine wrote: it writes the format
// record first). The answer is kept once a format record gave it (a
// store's Since never changes).
func (s *Store) legacyOK(txn *badger.Txn) bool {
	switch s.checked.Load() {
	case checkedAll:
		return false
	case checkedSome:
		return true
	}
	kv, err := txn.Get(metaKey)
	if err != nil {
		return true
	}
	var m store.Meta
	if err := kv.Value(func(v []byte) error { return decodeMeta(v, &m) }); err != nil {
		return true // the engine fails on it when it opens the store
	}
	if m.Since >= FirstCheckedFormat {
		s.checked.Store(checkedAll)
		return false
	}
	s.checked.Store(checkedSome)
	return true
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.MessageEncoder = (*Store)(nil)
)

// Open opens (creating it when absent, unless read-only) the store in
// opts.Dir. It does not read or write the format record (store.Meta): the
// engine does.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("badgerstore: open: %w", err)
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	g := newSpaceGuard(o)
	db, err := openBadger(o, g)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, opts: o, space: g}
	// What package lossless writes per transaction (ingest.go): half of
	// Badger's batch limit (15% of the memtable), which leaves room for
	// Badger's per-entry overhead.
	s.maxTxn = db.MaxBatchSize() / 2
	s.txnLimit = db.MaxBatchSize()
	s.idle.L = &s.mu
	return s, nil
}

// enter marks the start of a call; ErrClosed after Close. exit ends it.
func (s *Store) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("badgerstore: %w", store.ErrClosed)
	}
	s.active++
	return nil
}

func (s *Store) exit() {
	s.mu.Lock()
	if s.active--; s.active == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// View runs fn in a read-only snapshot. A scan checks ctx as it goes.
func (s *Store) View(ctx context.Context, fn func(store.Reader) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("badgerstore: view: %w", err)
	}
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	r := &reader{txn: txn, ctx: ctx, s: s}
	defer r.end()
	return fn(r)
}

// Update runs fn in a read-write transaction, committed when fn returns
// nil and ctx is not done by then; otherwise nothing of it is written.
// fn's own error is returned as it is. On a read-only store Update fails
// with store.ErrReadOnly; on a full disk with store.ErrDiskFull, before fn
// runs (see space.go). A transaction that writes more than twice
// MaxTxnBytes (keys and whole values: Badger's batch limit, which Badger
// itself applies to values in its value log as pointers only), or that
// Badger finds too big, fails with store.ErrTooBig
// at the write that exceeds it. After a write fails in Badger or over the
// limit, every later write of the Update fails with the same error and the
// Update with it, whatever fn returns: an ignored error never commits part
// of fn's writes.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if s.opts.ReadOnly {
		return fmt.Errorf("badgerstore: update: %w", store.ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("badgerstore: update: %w", err)
	}
	if err := s.space.check(); err != nil {
		return err
	}
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	t := &tx{reader: reader{txn: txn, ctx: ctx, s: s}, writer: writer{kv: txn, rtxn: txn, ctx: ctx, s: s, limit: s.txnLimit}}
	err := fn(t)
	t.reader.end()
	t.writer.end = errEnded
	if err != nil {
		return err
	}
	if err := t.writer.failed; err != nil {
		return fmt.Errorf("badgerstore: commit refused after a failed write: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("badgerstore: update: %w", err)
	}
	if err := txn.Commit(); err != nil {
		return s.space.noted(wrapErr("commit", err))
	}
	return nil
}

// NewBatch returns a bulk writer on a badger.WriteBatch: it commits its
// writes in parts as they grow past Badger's transaction limit, and Flush
// commits the rest and waits for all of them. ctx is checked at Flush and
// during the deletions that scan (DeleteConversationData,
// DeleteForkItems).
func (s *Store) NewBatch(ctx context.Context) (store.Batch, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	if s.opts.ReadOnly {
		return nil, fmt.Errorf("badgerstore: new batch: %w", store.ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("badgerstore: new batch: %w", err)
	}
	if err := s.space.check(); err != nil {
		return nil, err
	}
	wb := s.db.NewWriteBatch()
	return &batch{writer: writer{kv: wb, ctx: ctx, s: s}, wb: wb}, nil
}

// EncodeMessage returns the record PutMessage stores for m (m.Encoded
// ignored): the header, and the body zstd-compressed when that saves at
// least an eighth. It is safe for concurrent use and works on a closed
// store; the engine calls it on several cores before the Update that
// stores the records (store.Message.Encoded).
func (s *Store) EncodeMessage(m store.Message) []byte { return encodeMsg(&m) }

// MaxTxnBytes is half of Badger's batch limit (15% of Options.MemTableSize):
// about 630 KB with the defaults. An Update may write up to twice as much
// (ErrTooBig beyond): the margin is for the engine's estimates.
func (s *Store) MaxTxnBytes() int64 { return s.maxTxn }

// Sync makes every committed write durable. Badger's DB.Sync syncs the
// value log and the active memtable's write-ahead log only; a memtable that
// filled up and waits to be flushed keeps its (memory-mapped) log unsynced
// until the flush, so every *.mem and *.vlog file of the store is fsynced
// as well (fsync on any descriptor of a file writes back its dirty pages,
// those written through a mapping included). A read-only store has nothing
// to sync.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("badgerstore: sync: %w", err)
	}
	if s.opts.ReadOnly {
		return nil
	}
	if err := s.db.Sync(); err != nil {
		return wrapErr("sync", err)
	}
	ents, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("badgerstore: sync: %w", err)
	}
	for _, ent := range ents {
		name := ent.Name()
		if !ent.Type().IsRegular() || (!strings.HasSuffix(name, ".mem") && !strings.HasSuffix(name, ".vlog")) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("badgerstore: sync: %w", err)
		}
		f, err := os.Open(filepath.Join(s.opts.Dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // flushed and removed meanwhile: its data is in a synced table
		}
		if err != nil {
			return fmt.Errorf("badgerstore: sync: %w", err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("badgerstore: sync %s: %w", name, err)
		}
	}
	return nil
}

// Size reports the bytes the store's files take on disk: the blocks
// allocated to every file of the directory (tables, value and memtable
// logs, MANIFEST, DISCARD…; not the recall index's subdirectory), as du
// counts them (package diskusage), read from the directory now. While the
// store is open for writing this includes the value and memtable logs
// Badger allocated ahead (their apparent size is larger still: Badger
// sizes a value log at twice valueLogFileSize).
func (s *Store) Size(ctx context.Context) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("badgerstore: size: %w", err)
	}
	return DirBytes(s.opts.Dir)
}

// DirBytes is the blocks allocated to the files directly in a Badger
// store's directory dir, as Size counts them (a subdirectory, such as the
// recall index, is not counted): it measures a store another process holds
// open, from outside.
func DirBytes(dir string) (int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("badgerstore: size: %w", err)
	}
	var n int64
	for _, ent := range ents {
		if !ent.Type().IsRegular() {
			continue
		}
		info, err := ent.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // compacted away meanwhile
		}
		if err != nil {
			return 0, fmt.Errorf("badgerstore: size: %w", err)
		}
		n += diskusage.File(info)
	}
	return n, nil
}

// ErrCloseUnfinished is wrapped, beside store.ErrDiskFull, by the error of
// a Close that could not finish on a full disk: Badger goes on trying to
// write its memtable to a table, in this process, and holds the store
// directory's lock until it can (space freed: it then finishes closing
// and releases the lock) or the process exits. Meanwhile no other Open of
// the directory succeeds; a later Close says whether Badger has finished.
var ErrCloseUnfinished = errors.New("badgerstore: close unfinished, the directory stays locked")

// Close waits for the calls in progress (View, Update, Sync, a batch's
// Flush) and closes the database, which releases the directory's lock.
// It is idempotent; later calls fail with store.ErrClosed. The unflushed
// writes of an open batch are lost (as with Cancel); its later writes fail
// with store.ErrClosed.
//
// On a full disk (a write met it: store.ErrDiskFull) Badger cannot write
// its memtable to a table, and its Close waits until it can. Close gives
// it Options.CloseGrace, then returns an error wrapping store.ErrDiskFull
// and ErrCloseUnfinished that says the lock stays held, and why: what was
// acknowledged is in Badger's log, replayed when the store is next opened
// for writing. Badger's Close goes on in the background, logged when it
// ends; a later Close returns its result once it has (nil: the lock is
// released), the same error until then.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		unfinished := s.unfinished
		s.mu.Unlock()
		if unfinished != nil {
			return s.closeUnfinished(unfinished)
		}
		return nil
	}
	s.closed = true
	s.closedFlag.Store(true)
	for s.active > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- s.db.Close() }()
	select {
	case err := <-done:
		return closeErr(err)
	case <-s.space.tripped:
	}
	// The disk filled: Badger retries a flush that cannot be written, once
	// a second, for as long as the disk stays full, and its Close waits
	// for it. Give it the grace (space may have been freed).
	select {
	case err := <-done:
		return closeErr(err)
	case <-time.After(s.opts.CloseGrace):
	}
	// Badger's Close goes on; its end is logged, and its result is what a
	// later Close returns.
	unfinished := make(chan struct{})
	s.mu.Lock()
	s.unfinished = unfinished
	s.mu.Unlock()
	go func() {
		err := <-done
		if err != nil {
			slog.Error("badgerstore: Badger finished closing the store after the disk had room again, with an error; its directory lock is released", "dir", s.opts.Dir, "err", err)
		} else {
			slog.Info("badgerstore: Badger finished closing the store after the disk had room again; its directory lock is released", "dir", s.opts.Dir)
		}
		s.closeResult = err
		close(unfinished)
	}()
	return s.unfinishedErr()
}

// closeUnfinished is the answer of a Close after one that returned before
// Badger finished closing: Badger's result once it has, the unfinished
// error until then.
func (s *Store) closeUnfinished(unfinished chan struct{}) error {
	select {
	case <-unfinished:
		return closeErr(s.closeResult) // written before unfinished was closed
	default:
		return s.unfinishedErr()
	}
}

// unfinishedErr is the error of a Close that returned before Badger
// finished closing.
func (s *Store) unfinishedErr() error {
	return fmt.Errorf("badgerstore: close %s: %w: Badger cannot write its memtable to a table (%s); %w: Badger keeps trying in this process and holds the lock until space is freed (it then finishes closing) or the process exits; what was written is in its log and is replayed when the store is next opened for writing",
		s.opts.Dir, store.ErrDiskFull, s.space.reason(), ErrCloseUnfinished)
}

func closeErr(err error) error {
	if err != nil {
		return fmt.Errorf("badgerstore: close: %w", err)
	}
	return nil
}

// wrapErr wraps an error from Badger, mapping it to the store's
// sentinels. Badger's own wrapping (y.Wrap) loses the chain, so errors are
// mapped where they leave Badger.
func wrapErr(op string, err error) error {
	switch {
	case errors.Is(err, badger.ErrTxnTooBig):
		return fmt.Errorf("badgerstore: %s: %w (%w)", op, store.ErrTooBig, err)
	case errors.Is(err, badger.ErrReadOnlyTxn):
		return fmt.Errorf("badgerstore: %s: %w", op, store.ErrReadOnly)
	case errors.Is(err, badger.ErrDBClosed), errors.Is(err, badger.ErrBlockedWrites):
		return fmt.Errorf("badgerstore: %s: %w (%w)", op, store.ErrClosed, err)
	case errors.Is(err, badger.ErrDiscardedTxn):
		return fmt.Errorf("badgerstore: %s: %w", op, errEnded)
	case noSpace(err):
		return fmt.Errorf("badgerstore: %s: %w (%v)", op, store.ErrDiskFull, err)
	case errors.Is(err, table.ErrCorrupt), errors.Is(err, y.ErrChecksumMismatch):
		// A table block that fails its checksum or cannot be decoded (the
		// patched Badger names the table file and the block: "table
		// 000012.sst: block 3: corrupt: checksum mismatch (...)").
		return fmt.Errorf("badgerstore: %s: %w: %v", op, store.ErrCorrupt, err)
	case strings.Contains(err.Error(), y.ErrChecksumMismatch.Error()):
		// A value-log entry whose checksum fails (Badger's y.Wrap loses the
		// chain there, hence the text).
		return fmt.Errorf("badgerstore: %s: %w (%v)", op, store.ErrCorrupt, err)
	}
	return fmt.Errorf("badgerstore: %s: %w", op, err)
}
