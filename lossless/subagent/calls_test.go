package subagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

var errFakeBadParams = errors.New("fake: bad parameters")

// fakePort is a Port whose store is never reached: the calls' checks
// refuse before reading or writing.
type fakePort struct {
	entered, locked int
}

func (f *fakePort) View(context.Context, func(store.Reader) error) error { panic("View") }
func (f *fakePort) Update(context.Context, func(store.Tx) error) error   { panic("Update") }
func (f *fakePort) Batch(context.Context) (store.Batch, error)           { panic("Batch") }
func (f *fakePort) Forks() *Forks                                        { panic("Forks") }
func (f *fakePort) Enter() (func(), error)                               { f.entered++; return func() {}, nil }
func (f *fakePort) Lock(context.Context) (func(), error)                 { f.locked++; return func() {}, nil }
func (f *fakePort) SweepOnce(context.Context)                            {}
func (f *fakePort) Agent(string) string                                  { return "main" }
func (f *fakePort) Lookup(context.Context, string, string, string) (store.ConvID, error) {
	panic("Lookup")
}
func (f *fakePort) Import(context.Context, string, string, string, string) error { panic("Import") }
func (f *fakePort) BadParams() error                                             { return errFakeBadParams }

func TestSpawnRefusesBadParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		sp   core.SubagentSpawnParams
		want error
	}{
		{"no child key", core.SubagentSpawnParams{}, errFakeBadParams},
		{"mode", core.SubagentSpawnParams{ChildSessionKey: "c", ContextMode: "clone"}, errFakeBadParams},
		{"ttl", core.SubagentSpawnParams{ChildSessionKey: "c", TTLMs: -1}, errFakeBadParams},
		{"name", core.SubagentSpawnParams{ChildSessionKey: "c", ParentSessionID: "p\x00"}, core.ErrInvalidSessionID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePort{}
			_, err := Spawn(context.Background(), p, tc.sp)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Spawn: %v, want %v", err, tc.want)
			}
			if p.entered != 1 || p.locked != 0 {
				t.Fatalf("entered %d, locked %d: want 1, 0", p.entered, p.locked)
			}
		})
	}
}

func TestOnEndedRefusesBadParams(t *testing.T) {
	for _, ep := range []core.SubagentEndedParams{{Reason: core.SubagentCompleted}, {ChildSessionKey: "c", Reason: "gone"}} {
		if err := OnEnded(context.Background(), &fakePort{}, ep); !errors.Is(err, errFakeBadParams) {
			t.Fatalf("OnEnded(%+v): %v, want the port's bad-parameters sentinel", ep, err)
		}
	}
}

func TestLockReleasesTheEngineLockWhenTheStoreLockFails(t *testing.T) {
	var mu sync.Mutex
	boom := errors.New("store lock")
	if _, err := Lock(context.Background(), &mu, func(context.Context) (func(), error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Lock: %v, want %v", err, boom)
	}
	if !mu.TryLock() {
		t.Fatal("the engine's lock is still held after a failed store lock")
	}
	mu.Unlock()
	released := false
	unlock, err := Lock(context.Background(), &mu, func(context.Context) (func(), error) { return func() { released = true }, nil })
	if err != nil {
		t.Fatal(err)
	}
	if mu.TryLock() {
		t.Fatal("the engine's lock is free while held")
	}
	unlock()
	if !released || !mu.TryLock() {
		t.Fatalf("unlock: store lock released %v, engine lock free: want both", released)
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

// readPort is a fakePort whose View reads a memstore through a reader
// that fails with err.
type readPort struct {
	fakePort
	st  store.Store
	err error
}

func (p *readPort) View(ctx context.Context, fn func(store.Reader) error) error {
	return p.st.View(ctx, func(r store.Reader) error { return fn(failingReader{r, p.err}) })
}

// TestHolderReturnsReadErrors: a read that fails while looking for the
// conversation holding a summary is returned, not taken for "conv holds
// it" (the tool would then read the wrong conversation and say the id is
// unknown); a summary that is simply absent is no error.
func TestHolderReturnsReadErrors(t *testing.T) {
	ctx := context.Background()
	ioErr := errors.New("read /store/000012.sst: input/output error")
	p := &readPort{st: memstore.New(), err: ioErr}
	conv := store.ConvID{1}
	if _, ok, err := Holder(ctx, p, conv, "sum_00000000000000aa"); !errors.Is(err, ioErr) || ok {
		t.Fatalf("Holder on a failing read: ok %v, err %v; want the read's error", ok, err)
	}
	p.err = store.ErrNotFound
	if _, ok, err := Holder(ctx, p, conv, "sum_00000000000000aa"); err != nil || ok {
		t.Fatalf("Holder of a summary nobody holds: ok %v, err %v; want not held, no error", ok, err)
	}
	p.err = fmt.Errorf("summary sum_00000000000000aa: %w", store.ErrCorrupt)
	if c, ok, err := Holder(ctx, p, conv, "sum_00000000000000aa"); err != nil || ok || c != (store.ConvID{}) {
		t.Fatalf("Holder of a damaged summary of conv: %v %v %v; want conv itself (not ok, no error)", c, ok, err)
	}
}
