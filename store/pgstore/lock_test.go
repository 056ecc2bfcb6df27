package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// twoStores opens two stores on one database: two pools, as two processes
// would have.
func twoStores(t *testing.T) (*Store, *Store) {
	u := pgtest.NewDB(t)
	return openTest(t, Options{URL: u}), openTest(t, Options{URL: u})
}

func TestLockExcludes(t *testing.T) {
	a, b := twoStores(t)
	ctx := t.Context()
	unlock, err := a.Lock(ctx, "conv:1")
	if err != nil {
		t.Fatal(err)
	}
	if u, ok, err := b.TryLock(ctx, "conv:1"); err != nil || ok {
		if ok {
			u()
		}
		t.Fatalf("TryLock of a lock the other store holds = %v, %v; want false", ok, err)
	}
	// Within one store too: a second Lock of a held name waits.
	if u, ok, err := a.TryLock(ctx, "conv:1"); err != nil || ok {
		if ok {
			u()
		}
		t.Fatalf("TryLock of a lock the same store holds = %v, %v; want false", ok, err)
	}
	// Another name is free.
	u2, ok, err := b.TryLock(ctx, "conv:2")
	if err != nil || !ok {
		t.Fatalf("TryLock of a free lock = %v, %v", ok, err)
	}
	u2()
	// Lock waits until its context ends.
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if u, err := b.Lock(wctx, "conv:1"); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			u()
		}
		t.Fatalf("Lock of a held lock with a 200 ms context = %v, want DeadlineExceeded", err)
	}
	// ... and gets it once unlocked.
	got := make(chan func(), 1)
	go func() {
		u, err := b.Lock(ctx, "conv:1")
		if err != nil {
			t.Error(err)
			u = func() {}
		}
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("Lock returned while the other store held the lock")
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	unlock() // twice: a no-op
	select {
	case u := <-got:
		u()
	case <-time.After(10 * time.Second):
		t.Fatal("Lock did not return after the holder unlocked")
	}
	if u, ok, err := a.TryLock(ctx, "conv:1"); err != nil || !ok {
		t.Fatalf("TryLock after both unlocked = %v, %v", ok, err)
	} else {
		u()
	}
}

// TestLockDiesWithConnection: a lock whose holder's connection dies (its
// process killed) is free again.
func TestLockDiesWithConnection(t *testing.T) {
	a, b := twoStores(t)
	ctx := t.Context()
	if _, err := a.Lock(ctx, "compaction:x"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.TryLock(ctx, "compaction:x"); ok {
		t.Fatal("TryLock of a held lock succeeded")
	}
	// Kill the holder's backend, as a killed process's connection ends.
	var killed bool
	err := b.Pool().QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND ((classid::bigint << 32) | objid::bigint) = $1`, LockKey("compaction:x")).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("terminating the holder's connection: %v, %v", killed, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u, err := b.Lock(wctx, "compaction:x")
	if err != nil {
		t.Fatalf("Lock after the holder's connection died: %v", err)
	}
	u()
}

// TestLockFreedByClose: closing a store frees its locks (its connections
// close), and Lock after Close fails.
func TestLockFreedByClose(t *testing.T) {
	a, b := twoStores(t)
	ctx := t.Context()
	unlock, err := a.Lock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	unlock() // after Close: a no-op
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u, err := b.Lock(wctx, "x")
	if err != nil {
		t.Fatalf("Lock after the holder closed its store: %v", err)
	}
	u()
	if _, err := a.Lock(ctx, "y"); err == nil {
		t.Error("Lock on a closed store succeeded")
	}
}

func TestLockKey(t *testing.T) {
	a1, a2 := LockKey("a"), LockKey("a")
	if a1 == LockKey("b") || a1 != a2 || LockKey("") == migrationLock {
		t.Error("LockKey does not tell names apart")
	}
}

// TestLockConnsClosedWhenIdle: the lock pool's connections, one per lock
// held at once, are kept for reuse and closed once idle for LockConnIdle,
// so that a burst of locks does not hold connections against the
// server's max_connections for good.
func TestLockConnsClosedWhenIdle(t *testing.T) {
	s := openTest(t, Options{URL: pgtest.NewDB(t), LockConnIdle: 200 * time.Millisecond})
	ctx := t.Context()
	const n = 6
	var unlocks []func()
	for i := range n {
		u, err := s.Lock(ctx, "conv:"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		unlocks = append(unlocks, u)
	}
	if got := s.locks.Stat().TotalConns(); got != n {
		t.Fatalf("%d locks held on %d connections, want %d", n, got, n)
	}
	for _, u := range unlocks {
		u()
	}
	if got := s.locks.Stat().IdleConns(); got != n {
		t.Fatalf("after unlocking, %d idle lock connections, want %d kept for reuse", got, n)
	}
	deadline := time.Now().Add(15 * time.Second)
	for s.locks.Stat().TotalConns() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d lock connections still open 15 s after their locks were released (LockConnIdle 200 ms)", s.locks.Stat().TotalConns())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The pool opens connections again when needed.
	u, err := s.Lock(ctx, "conv:a")
	if err != nil {
		t.Fatalf("Lock after the idle connections closed: %v", err)
	}
	u()
}
