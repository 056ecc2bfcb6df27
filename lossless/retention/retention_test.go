package retention

import (
	"context"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// fakePort is a Port over a memstore without an engine: its locks and
// caches only count their calls.
type fakePort struct {
	st       *memstore.Store
	limits   Limits
	before   int
	locks    int
	unlocks  int
	names    int
	forgot   []string
	unindex  []store.ConvID
	retiring int
}

func (p *fakePort) Limits() Limits         { return p.limits }
func (p *fakePort) Enter() (func(), error) { return func() {}, nil }
func (p *fakePort) View(ctx context.Context, fn func(store.Reader) error) error {
	return p.st.View(ctx, fn)
}
func (p *fakePort) Update(ctx context.Context, fn func(store.Tx) error) error {
	return p.st.Update(ctx, fn)
}
func (p *fakePort) Batch(ctx context.Context) (store.Batch, error) { return p.st.NewBatch(ctx) }
func (p *fakePort) MessageTimes(_ store.Reader, _ store.ConvID, rec store.Conversation) (int64, int64, error) {
	return 0, 0, nil // none: conversations age by their last write
}
func (p *fakePort) BeforeDelete() { p.before++ }
func (p *fakePort) Lock(context.Context, store.ConvID) (Held, error) {
	p.locks++
	return fakeHeld{p}, nil
}
func (p *fakePort) LockNames(context.Context, string) (func(), error) {
	p.names++
	return func() {}, nil
}
func (p *fakePort) Unindex(_ context.Context, c store.ConvID) error {
	p.unindex = append(p.unindex, c)
	return nil
}

type fakeHeld struct{ p *fakePort }

func (h fakeHeld) Unlock()                       { h.p.unlocks++ }
func (h fakeHeld) MarkRetiring()                 { h.p.retiring++ }
func (h fakeHeld) Forget(rec store.Conversation) { h.p.forgot = append(h.p.forgot, rec.Key) }

var _ Port = (*fakePort)(nil)

const day = 24 * 3600 * 1000

// TestRetainOverPort: over a fake port, a pass deletes an orphan and a
// conversation past the age limit, keeps the others, and a dry run
// reports the same deleting nothing.
func TestRetainOverPort(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	p := &fakePort{st: memstore.New(), limits: Limits{MaxAgeDays: 10}}
	old, fresh, orphan := store.ConvID{7: 1}, store.ConvID{7: 2}, store.ConvID{7: 3}
	err := p.st.Update(ctx, func(tx store.Tx) error {
		for _, c := range []struct {
			id      store.ConvID
			key     string
			updated int64
		}{{old, "agent:a:old", now.UnixMilli() - 11*day}, {fresh, "agent:a:fresh", now.UnixMilli() - day}, {orphan, "", now.UnixMilli()}} {
			rec := store.Conversation{Agent: "a", Key: c.key, Created: c.updated, Updated: c.updated, Messages: 1, Bytes: 10}
			if err := tx.PutConversation(c.id, rec); err != nil {
				return err
			}
			if c.key != "" {
				if err := tx.PutName(store.Name{Agent: "a", Kind: store.NameSessionKey, Value: c.key}, c.id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Retain(ctx, p, now, Options{DryRun: true})
	if err != nil || len(plan.Deleted) != 2 || p.before != 0 || p.locks != 0 {
		t.Fatalf("dry run: %+v %v (%d deletions begun, %d locks)", plan, err, p.before, p.locks)
	}
	res, err := Retain(ctx, p, now, Options{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, d := range res.Deleted {
		reasons[d.ID] = d.Reason
	}
	if len(res.Deleted) != 2 || reasons[old.String()] != "age" || reasons[orphan.String()] != "orphan" || res.Messages != 2 || res.Bytes != 20 {
		t.Fatalf("pass: %+v", res)
	}
	if p.before != 2 || p.locks != 4 || p.unlocks != 4 || p.names != 2 || len(p.forgot) != 2 || len(p.unindex) != 2 || p.retiring != 2 {
		t.Errorf("port calls: %+v", p)
	}
	err = p.st.View(ctx, func(r store.Reader) error {
		n := 0
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			if n++; cr.ID != fresh {
				t.Errorf("conversation %s left", cr.ID)
			}
		}
		for nm, err := range r.Names() {
			if err != nil {
				return err
			}
			if nm.Conv != fresh {
				t.Errorf("name %+v left", nm)
			}
		}
		if n != 1 {
			t.Errorf("%d conversations left, want 1", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if retiring, err := AnyRetiring(ctx, p); err != nil || retiring {
		t.Errorf("AnyRetiring after the pass: %v %v", retiring, err)
	}
}

// TestDeleteChangedConversation: a conversation written to since the
// decision (its Updated moved) is kept, and Retain does not count it.
func TestDeleteChangedConversation(t *testing.T) {
	ctx := context.Background()
	p := &fakePort{st: memstore.New()}
	c := store.ConvID{7: 9}
	if err := p.st.Update(ctx, func(tx store.Tx) error {
		return tx.PutConversation(c, store.Conversation{Agent: "a", Updated: 5})
	}); err != nil {
		t.Fatal(err)
	}
	if err := Delete(ctx, p, c, 4); err != errConvChanged {
		t.Fatalf("delete after a write: %v, want errConvChanged", err)
	}
	if err := Delete(ctx, p, store.ConvID{7: 10}, 4); err != errConvGone {
		t.Fatalf("delete of a missing conversation: %v, want errConvGone", err)
	}
	if p.locks != p.unlocks {
		t.Errorf("%d locks, %d unlocks", p.locks, p.unlocks)
	}
}

// TestStopNilLoop: a loop that Start did not start stops at once.
func TestStopNilLoop(t *testing.T) {
	var l *Loop
	l.Stop()
	p := &fakePort{st: memstore.New(), limits: Limits{IntervalMinutes: -1}}
	if l := Start(p, Timing{First: time.Hour, Unit: time.Minute, DefaultIntervalMinutes: 60}); l != nil {
		l.Stop()
		t.Fatal("Start ran a pass with no limit and nothing Retiring")
	}
}
