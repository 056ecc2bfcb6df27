package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// LockKey is the advisory lock key of the named lock name: FNV-1a (64
// bits) of "lossless:" and the name. Two names with one key exclude each
// other too (harmless, and at 64 bits as good as never).
func LockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("lossless:"))
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// heldLock is a held named lock: a session advisory lock on a connection
// of the lock pool, held until unlocked (the connection goes back to the
// pool) or until the connection dies (the server then releases the lock:
// a process killed mid-lock frees its locks).
type heldLock struct {
	s    *Store
	conn *pgxpool.Conn
	key  int64
	once sync.Once
}

// Lock implements store.Locker: it waits for the lock until ctx ends.
// Each held lock holds a connection of its own (Options.MaxLockConns).
func (s *Store) Lock(ctx context.Context, name string) (unlock func(), err error) {
	unlock, ok, err := s.lock(ctx, name, true)
	if err == nil && !ok {
		err = fmt.Errorf("pgstore: lock %q: not taken", name)
	}
	return unlock, err
}

// TryLock implements store.Locker.
func (s *Store) TryLock(ctx context.Context, name string) (unlock func(), ok bool, err error) {
	return s.lock(ctx, name, false)
}

func (s *Store) lock(ctx context.Context, name string, wait bool) (func(), bool, error) {
	if err := s.enter("lock"); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("pgstore: lock %q: %w", name, err)
	}
	conn, err := s.locks.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: lock %q: acquire a connection: %w", name, err)
	}
	key := LockKey(name)
	ok := true
	if wait {
		_, err = conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key)
	} else {
		err = conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok)
	}
	if err != nil {
		// Cancelled while waiting, or the connection failed: close it, so
		// that a lock the server granted meanwhile dies with it.
		closeConn(conn)
		return nil, false, fmt.Errorf("pgstore: lock %q: %w", name, err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	h := &heldLock{s: s, conn: conn, key: key}
	s.mu.Lock()
	if s.held == nil { // closed meanwhile
		s.mu.Unlock()
		closeConn(conn)
		return nil, false, fmt.Errorf("pgstore: lock %q: %w", name, errClosedStore)
	}
	s.held[h] = struct{}{}
	s.mu.Unlock()
	return h.unlock, true, nil
}

// unlock releases the lock (once): the connection goes back to the pool,
// or is closed when the unlock fails.
func (h *heldLock) unlock() {
	h.s.mu.Lock()
	_, mine := h.s.held[h]
	delete(h.s.held, h)
	h.s.mu.Unlock()
	if !mine { // unlocked already, or dropped by Close
		return
	}
	h.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var ok bool
		if err := h.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", h.key).Scan(&ok); err != nil || !ok {
			closeConn(h.conn)
			return
		}
		h.conn.Release()
	})
}

// drop releases the lock by closing its connection (Close).
func (h *heldLock) drop() {
	h.once.Do(func() { closeConn(h.conn) })
}

// closeConn closes a pooled connection and gives it back (the pool drops
// a closed connection).
func closeConn(c *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Conn().Close(ctx)
	c.Release()
}
