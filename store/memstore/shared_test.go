package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// TestSharedLocks: the handles Shared makes of one store's data share
// their named locks (Lock excludes, TryLock reports a held lock, a wait
// ends with its context), a handle's Close releases the locks it holds and
// leaves the others open, and every handle sees the others' writes. A
// plain Store is no store.Locker.
func TestSharedLocks(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	if _, ok := any(ms).(store.Locker); ok {
		t.Fatal("a plain memstore is a store.Locker: every engine on it would run in shared mode")
	}
	a, b := memstore.Shared(ms), memstore.Shared(ms)
	unlock, err := a.Lock(ctx, "conv:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.TryLock(ctx, "conv:1"); ok || err != nil {
		t.Fatalf("TryLock of a held lock: ok %v, err %v", ok, err)
	}
	if u, ok, err := b.TryLock(ctx, "conv:2"); !ok || err != nil {
		t.Fatalf("TryLock of a free lock: ok %v, err %v", ok, err)
	} else {
		u()
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short, "conv:1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock until the deadline: %v", err)
	}
	got := make(chan struct{})
	go func() {
		u, err := b.Lock(ctx, "conv:1")
		if err == nil {
			u()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("Lock took a held lock")
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	unlock() // a second call does nothing
	<-got

	// Close releases what the handle holds.
	if _, err := a.Lock(ctx, "conv:3"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if u, ok, err := b.TryLock(ctx, "conv:3"); !ok || err != nil {
		t.Fatalf("a lock of a closed handle is still held: ok %v, err %v", ok, err)
	} else {
		u()
	}
	if _, err := a.Lock(ctx, "conv:4"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Lock on a closed handle: %v", err)
	}

	// The other handles stay open and share the data.
	if err := b.Update(ctx, func(tx store.Tx) error {
		return tx.PutConversation(store.ConvID{1}, store.Conversation{Agent: "main"})
	}); err != nil {
		t.Fatal(err)
	}
	if err := ms.View(ctx, func(r store.Reader) error {
		c, err := r.Conversation(store.ConvID{1})
		if err == nil && c.Agent != "main" {
			t.Errorf("agent %q", c.Agent)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
