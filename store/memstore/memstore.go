// Package memstore is an in-memory store.Store, for tests: every record
// lives in one ordered map, nothing survives the process.
//
// # Transactions
//
// The map is persistent (a write copies the path to the record it changes),
// so a snapshot is a root pointer. View reads the snapshot of its start and
// never blocks. Update runs alone among writers (a mutex serializes Update
// and Batch.Flush), writes into its own copy of the map, reads its own
// writes, and publishes the copy when fn returns nil and ctx is not done; an
// error, a panic or a cancelled ctx discards it. A scan reads the map as it
// was when the loop started, so a loop may write (delete the items it
// scans) without disturbing itself.
//
// Values are copied in and out: a caller mutating a slice it passed in or
// got back does not change the store.
//
// Batch writes are kept by the batch and applied together at Flush (one
// step, never in parts); Flush writes nothing when the batch's ctx is done.
// A batch is used once: after Flush or Cancel its writes fail (Cancel after
// Flush does nothing). A batch's deletions by prefix (DeleteConversationData,
// DeleteForkItems, DeleteHostEntries) delete, as badgerstore's do, the
// records committed when they are called, not records committed after the
// call; a key the batch wrote before the call is deleted only if it was
// committed too.
//
// Message.Encoded is ignored (memstore keeps records as they are, and has
// no store.MessageEncoder); reads return it nil.
//
// NewReadOnly shares a store's data read-only: Views work, NewBatch fails,
// and an Update runs its function but every write fails with
// store.ErrReadOnly.
//
// # Limits and errors
//
// An Update whose writes exceed MaxTxnBytes (keys plus values, the
// WithMaxTxnBytes option, 16 MiB by default) fails the write that crosses
// it with an error wrapping store.ErrTooBig, so that tests exercise the
// engine's splitting. Errors are prefixed "memstore: " and wrap the store
// sentinels: ErrNotFound, ErrTooBig, ErrReadOnly (NewReadOnly), ErrClosed.
// A transaction used after its function returned fails.
package memstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lossless-engine/contextengine/store"
)

// DefaultMaxTxnBytes is the default of WithMaxTxnBytes.
const DefaultMaxTxnBytes = 16 << 20

// Option configures New.
type Option func(*options)

type options struct {
	maxTxnBytes int64
}

// WithMaxTxnBytes sets how many bytes (keys plus values) one Update may
// write; n <= 0 means no limit. MaxTxnBytes reports it (no limit: 1<<40).
func WithMaxTxnBytes(n int64) Option { return func(o *options) { o.maxTxnBytes = n } }

// Store is an in-memory store.Store. Its methods are safe for concurrent
// use.
type Store struct {
	db       *db
	readOnly bool
	closed   atomic.Bool
}

// db is the data, shared by a store and its read-only views.
type db struct {
	mu     sync.Mutex // serializes writers
	root   atomic.Pointer[node]
	maxTxn int64
	// locks are the named locks of the handles Shared makes (shared.go).
	locks locks
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New(opts ...Option) *Store {
	o := options{maxTxnBytes: DefaultMaxTxnBytes}
	for _, f := range opts {
		f(&o)
	}
	return &Store{db: &db{maxTxn: o.maxTxnBytes}}
}

// NewReadOnly returns a read-only store over from's data: it reads what
// from has committed (now and later), and its writes fail with
// store.ErrReadOnly. Closing either does not close the other.
func NewReadOnly(from *Store) *Store {
	return &Store{db: from.db, readOnly: true}
}

var errFinished = errors.New("memstore: transaction used after its function returned")

func (s *Store) usable(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("memstore: %w", store.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	return nil
}

// View runs fn on the snapshot of the store at its start.
func (s *Store) View(ctx context.Context, fn func(store.Reader) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	r := &reader{root: s.db.root.Load()}
	defer func() { r.finished = true }()
	return fn(r)
}

// Update runs fn in a transaction published when fn returns nil and ctx is
// not done.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return err
	}
	t := &tx{reader: reader{root: s.db.root.Load()}, max: s.db.maxTxn, readOnly: s.readOnly}
	t.writer = writer{t}
	defer func() { t.finished = true }()
	if err := fn(t); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: update not committed: %w", err)
	}
	if s.closed.Load() {
		return fmt.Errorf("memstore: update not committed: %w", store.ErrClosed)
	}
	s.db.root.Store(t.root)
	return nil
}

// NewBatch returns a batch whose writes are applied at Flush.
func (s *Store) NewBatch(ctx context.Context) (store.Batch, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if s.readOnly {
		return nil, fmt.Errorf("memstore: batch: %w", store.ErrReadOnly)
	}
	b := &batch{s: s, ctx: ctx}
	b.writer = writer{b}
	return b, nil
}

// MaxTxnBytes returns the WithMaxTxnBytes limit.
func (s *Store) MaxTxnBytes() int64 {
	if s.db.maxTxn <= 0 {
		return 1 << 40
	}
	return s.db.maxTxn
}

// Sync does nothing (there is nothing to make durable) but fail on a closed
// store.
func (s *Store) Sync(ctx context.Context) error { return s.usable(ctx) }

// Size returns about how many bytes the records take (keys plus values).
func (s *Store) Size(ctx context.Context) (int64, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	var n int64
	walk(s.db.root.Load(), "", "\xff", false, func(nd *node) bool {
		n += int64(len(nd.key) + valueSize(nd.val))
		return true
	})
	return n, nil
}

// Close closes this handle (the data stays for read-only views); later
// calls fail with store.ErrClosed, and Close again returns nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// tx is an Update's transaction: a private root and the bytes written.
type tx struct {
	reader
	writer
	max, bytes int64
	readOnly   bool
}

func (t *tx) writable(k string, size int) error {
	if t.finished {
		return errFinished
	}
	if t.readOnly {
		return fmt.Errorf("memstore: %w", store.ErrReadOnly)
	}
	n := int64(len(k) + size)
	if t.max > 0 && t.bytes+n > t.max {
		return fmt.Errorf("memstore: transaction over %d bytes: %w", t.max, store.ErrTooBig)
	}
	t.bytes += n
	return nil
}

func (t *tx) put(k string, v any) error {
	if err := t.writable(k, valueSize(v)); err != nil {
		return err
	}
	t.root = insert(t.root, k, v, priority(k))
	return nil
}

func (t *tx) del(k string) error {
	if err := t.writable(k, 0); err != nil {
		return err
	}
	t.root = remove(t.root, k)
	return nil
}

func (t *tx) delPrefix(p string) error {
	var keys []string
	walk(t.root, p, prefixEnd(p), false, func(n *node) bool {
		keys = append(keys, n.key)
		return true
	})
	if len(keys) == 0 { // still refused on a read-only or finished tx
		return t.writable("", 0)
	}
	for _, k := range keys {
		if err := t.del(k); err != nil {
			return err
		}
	}
	return nil
}

// batch keeps its writes until Flush.
type batch struct {
	writer
	s   *Store
	ctx context.Context

	mu   sync.Mutex
	ops  []op
	done bool
}

type op struct {
	kind byte // 'p' put, 'd' delete
	key  string
	val  any
}

var errBatchDone = errors.New("memstore: batch used after Flush or Cancel")

func (b *batch) add(o op) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return errBatchDone
	}
	b.ops = append(b.ops, o)
	return nil
}

func (b *batch) put(k string, v any) error { return b.add(op{'p', k, v}) }
func (b *batch) del(k string) error        { return b.add(op{'d', k, nil}) }

// delPrefix deletes the keys under p committed now (store.Batch: a batch's
// deletions by prefix see committed data, not its own unflushed writes).
func (b *batch) delPrefix(p string) error {
	var keys []string
	walk(b.s.db.root.Load(), p, prefixEnd(p), false, func(n *node) bool {
		keys = append(keys, n.key)
		return true
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return errBatchDone
	}
	for _, k := range keys {
		b.ops = append(b.ops, op{'d', k, nil})
	}
	return nil
}

// Flush applies the batch's writes, all in one step.
func (b *batch) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return errBatchDone
	}
	b.done = true
	ops := b.ops
	b.ops = nil
	if err := b.s.usable(b.ctx); err != nil {
		return err
	}
	db := b.s.db
	db.mu.Lock()
	defer db.mu.Unlock()
	t := &tx{reader: reader{root: db.root.Load()}} // no size limit
	for _, o := range ops {
		var err error
		switch o.kind {
		case 'p':
			err = t.put(o.key, o.val)
		case 'd':
			err = t.del(o.key)
		}
		if err != nil {
			return err
		}
	}
	db.root.Store(t.root)
	return nil
}

// Cancel drops the writes not flushed.
func (b *batch) Cancel() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	b.ops = nil
}
