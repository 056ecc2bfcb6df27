package subagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// newLifecycle is a Lifecycle over a fresh in-memory store.
func newLifecycle() Lifecycle {
	return Lifecycle{St: memstore.New(), Forks: new(Forks), Mu: new(sync.Mutex)}
}

func TestCheckSpawnRefusesBadParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		sp   core.SubagentSpawnParams
		want error
	}{
		{"no child key", core.SubagentSpawnParams{}, records.ErrBadParams},
		{"mode", core.SubagentSpawnParams{ChildSessionKey: "c", ContextMode: "clone"}, records.ErrBadParams},
		{"ttl", core.SubagentSpawnParams{ChildSessionKey: "c", TTLMs: -1}, records.ErrBadParams},
		{"name", core.SubagentSpawnParams{ChildSessionKey: "c", ParentSessionID: "p\x00"}, core.ErrInvalidSessionID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CheckSpawn(tc.sp); !errors.Is(err, tc.want) {
				t.Fatalf("CheckSpawn: %v, want %v", err, tc.want)
			}
		})
	}
	if mode, err := CheckSpawn(core.SubagentSpawnParams{ChildSessionKey: "c"}); err != nil || mode != core.ContextModeIsolated {
		t.Fatalf("no mode: %q, %v; want isolated", mode, err)
	}
}

func TestNewPreparation(t *testing.T) {
	sp := core.SubagentSpawnParams{ChildSessionKey: "agent:main:sub:1", ChildSessionID: "cs", ParentSessionKey: "agent:main:p", TTLMs: 500}
	sub, rec := NewPreparation("main", "main", core.ContextModeFork, sp, 1000)
	if sub != ID("main", sp.ChildSessionKey) || rec.State != Prepared || rec.ExpiresAt != 1500 || rec.Created != 1000 ||
		rec.Mode != core.ContextModeFork || rec.ChildSessionID != "cs" || rec.ParentKey != "agent:main:p" || rec.Token == "" {
		t.Fatalf("NewPreparation: %v %+v", sub, rec)
	}
	sp.TTLMs = 0
	if _, rec := NewPreparation("main", "main", core.ContextModeFork, sp, 1000); rec.ExpiresAt != 0 {
		t.Fatalf("no TTL: expires at %d", rec.ExpiresAt)
	}
	for _, tc := range []struct {
		sp   core.SubagentSpawnParams
		mode string
		want bool
	}{
		{core.SubagentSpawnParams{ParentSessionFile: "/t.jsonl", ParentSessionID: "p"}, core.ContextModeFork, true},
		{core.SubagentSpawnParams{ParentSessionFile: "/t.jsonl", ParentSessionID: "p"}, core.ContextModeIsolated, false},
		{core.SubagentSpawnParams{ParentSessionID: "p"}, core.ContextModeFork, false},
		{core.SubagentSpawnParams{ParentSessionFile: "/t.jsonl"}, core.ContextModeFork, false},
	} {
		if got := ImportsParent(tc.sp, tc.mode); got != tc.want {
			t.Errorf("ImportsParent(%+v, %s) = %v", tc.sp, tc.mode, got)
		}
	}
}

func TestEndedRefusesBadParams(t *testing.T) {
	if err := CheckEnded(core.SubagentEndedParams{Reason: core.SubagentCompleted}); !errors.Is(err, records.ErrBadParams) {
		t.Fatalf("no child key: %v", err)
	}
	if err := newLifecycle().Ended(context.Background(), ID("main", "c"), "gone"); !errors.Is(err, records.ErrBadParams) {
		t.Fatalf("reason gone: %v, want ErrBadParams", err)
	}
}

// locker is a store.Locker whose Lock fails with err (nil: succeeds and
// counts its releases).
type locker struct {
	err      error
	released int
}

func (l *locker) Lock(context.Context, string) (func(), error) {
	if l.err != nil {
		return nil, l.err
	}
	return func() { l.released++ }, nil
}

func (l *locker) TryLock(context.Context, string) (func(), bool, error) { panic("TryLock") }

func TestLockReleasesTheEngineLockWhenTheStoreLockFails(t *testing.T) {
	var mu sync.Mutex
	boom := errors.New("store lock")
	l := Lifecycle{Mu: &mu, Locker: &locker{err: boom}}
	if _, err := l.Lock(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Lock: %v, want %v", err, boom)
	}
	if !mu.TryLock() {
		t.Fatal("the engine's lock is still held after a failed store lock")
	}
	mu.Unlock()
	lk := &locker{}
	l.Locker = lk
	unlock, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if mu.TryLock() {
		t.Fatal("the engine's lock is free while held")
	}
	unlock()
	if lk.released != 1 || !mu.TryLock() {
		t.Fatalf("unlock: store lock released %d times, engine lock free: want both", lk.released)
	}
}

// failingReader is a memstore reader whose summary reads fail as a disk
// would.
type failingReader struct {
	store.Reader
	err error
}

func (r failingReader) Summary(store.ConvID, string) (dag.Summary, error) {
	return dag.Summary{}, r.err
}

// failingStore is a memstore whose reads go through a failingReader.
type failingStore struct {
	store.Store
	err error
}

func (s *failingStore) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(failingReader{r, s.err}) })
}

// TestHolderReturnsReadErrors: a read that fails while looking for the
// conversation holding a summary is returned, not taken for "conv holds
// it" (the tool would then read the wrong conversation and say the id is
// unknown); a summary that is simply absent is no error.
func TestHolderReturnsReadErrors(t *testing.T) {
	ctx := context.Background()
	ioErr := errors.New("read /store/000012.sst: input/output error")
	st := &failingStore{Store: memstore.New(), err: ioErr}
	l := Lifecycle{St: st}
	conv := store.ConvID{1}
	if _, ok, err := l.Holder(ctx, conv, "sum_00000000000000aa"); !errors.Is(err, ioErr) || ok {
		t.Fatalf("Holder on a failing read: ok %v, err %v; want the read's error", ok, err)
	}
	st.err = store.ErrNotFound
	if _, ok, err := l.Holder(ctx, conv, "sum_00000000000000aa"); err != nil || ok {
		t.Fatalf("Holder of a summary nobody holds: ok %v, err %v; want not held, no error", ok, err)
	}
	st.err = fmt.Errorf("summary sum_00000000000000aa: %w", store.ErrCorrupt)
	if c, ok, err := l.Holder(ctx, conv, "sum_00000000000000aa"); err != nil || ok || c != (store.ConvID{}) {
		t.Fatalf("Holder of a damaged summary of conv: %v %v %v; want conv itself (not ok, no error)", c, ok, err)
	}
}
