package memstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/lossless-engine/contextengine/store"
)

// SharedStore is a handle on a Store's data that implements store.Locker,
// as a backend shared by several processes does: the handles Shared makes
// of the same data are the "processes", each one closed on its own, and
// they share one table of named locks. An engine opened on a SharedStore
// treats its store as shared (it re-reads what another handle may have
// written, under these locks), so that two engines on one memstore test
// the engine's multi-process mode without a database.
//
// A plain Store does not implement store.Locker: an engine on it keeps its
// single-process mode.
type SharedStore struct {
	*Store
	// held are the locks taken through this handle, released by Close as
	// a database releases the locks of a process that dies.
	mu   sync.Mutex
	held map[namedLock]func()
}

var (
	_ store.Store  = (*SharedStore)(nil)
	_ store.Locker = (*SharedStore)(nil)
)

// Shared returns a new writable handle on from's data (from may itself be
// a handle Shared returned) with the named locks of that data. Closing it
// does not close from or any other handle, and releases the locks it
// holds.
func Shared(from *Store) *SharedStore {
	return &SharedStore{Store: &Store{db: from.db, readOnly: from.readOnly}, held: map[namedLock]func(){}}
}

// namedLock is one named lock: a one-slot channel (send to take, receive
// to release), so that waiting for it honours a context.
type namedLock chan struct{}

// locks is the named-lock table of one store's data.
type locks struct {
	mu sync.Mutex
	m  map[string]namedLock
}

func (d *db) lock(name string) namedLock {
	d.locks.mu.Lock()
	defer d.locks.mu.Unlock()
	if d.locks.m == nil {
		d.locks.m = map[string]namedLock{}
	}
	l, ok := d.locks.m[name]
	if !ok {
		l = make(namedLock, 1)
		d.locks.m[name] = l
	}
	return l
}

// Lock takes the lock called name, waiting for it until ctx ends
// (store.Locker). The returned unlock may be called more than once.
func (s *SharedStore) Lock(ctx context.Context, name string) (func(), error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	l := s.db.lock(name)
	select {
	case l <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("memstore: lock %q: %w", name, ctx.Err())
	}
	return s.hold(l), nil
}

// TryLock takes the lock called name if no one holds it (store.Locker).
func (s *SharedStore) TryLock(ctx context.Context, name string) (func(), bool, error) {
	if err := s.usable(ctx); err != nil {
		return nil, false, err
	}
	l := s.db.lock(name)
	select {
	case l <- struct{}{}:
		return s.hold(l), true, nil
	default:
		return nil, false, nil
	}
}

// hold records l as held through s and returns its unlock.
func (s *SharedStore) hold(l namedLock) func() {
	var once sync.Once
	release := func() { once.Do(func() { <-l }) }
	s.mu.Lock()
	s.held[l] = release
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.held, l)
		s.mu.Unlock()
		release()
	}
}

// Close closes this handle and releases the locks taken through it (the
// other handles stay open). Close again returns nil.
func (s *SharedStore) Close() error {
	s.mu.Lock()
	held := s.held
	s.held = map[namedLock]func(){}
	s.mu.Unlock()
	for _, release := range held {
		release()
	}
	return s.Store.Close()
}
