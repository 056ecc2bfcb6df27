package subagent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/diskspace"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// world is a parent conversation with three context items (the last
// hidden) and a summary, and a child conversation of session key
// childKey, in one in-memory store.
type world struct {
	l             Lifecycle
	parent, child store.ConvID
}

const childKey = "agent:main:subagent:1"

func newWorld(t *testing.T, childMessages int64) world {
	t.Helper()
	w := world{l: newLifecycle(), parent: records.NewConvID("main", "k:agent:main:p"), child: records.NewConvID("main", "k:"+childKey)}
	err := w.l.St.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.PutConversation(w.parent, store.Conversation{Agent: "main", Key: "agent:main:p", NextSeq: 4, Messages: 3}); err != nil {
			return err
		}
		for seq := uint64(1); seq <= 3; seq++ {
			flags := byte(0)
			if seq == 3 {
				flags = store.FlagHidden
			}
			it := dag.Item{Pos: seq * records.PosStep, Ref: dag.MessageRef(seq), Tokens: 10, Depth: -1}
			if err := tx.PutItem(w.parent, store.Item{Item: it, Flags: flags}); err != nil {
				return err
			}
		}
		if err := tx.PutSummary(w.parent, dag.Summary{ID: "sum_parent", Kind: dag.KindLeaf, Text: "p"}); err != nil {
			return err
		}
		if err := tx.PutConversation(w.child, store.Conversation{Agent: "main", Key: childKey, SessionIDs: []string{"cs"}, Messages: childMessages}); err != nil {
			return err
		}
		if err := tx.PutSummary(w.child, dag.Summary{ID: "sum_child", Kind: dag.KindLeaf, Text: "c"}); err != nil {
			return err
		}
		return tx.PutName(store.Name{Agent: "main", Kind: store.NameSessionKey, Value: childKey}, w.child)
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// prepare prepares the child (fork of the parent, ttl in ms) under Lock.
func (w world) prepare(t *testing.T, ttl int64) (store.SubID, store.Subagent) {
	t.Helper()
	sp := core.SubagentSpawnParams{ChildSessionKey: childKey, ChildSessionID: "cs", ParentSessionKey: "agent:main:p", TTLMs: ttl}
	sub, rec := NewPreparation("main", "main", core.ContextModeFork, sp, time.Now().UnixMilli())
	rec.ParentConv = w.parent.String()
	unlock, err := w.l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	parent := w.parent
	if err := w.l.Prepare(context.Background(), sub, rec, &parent); err != nil {
		t.Fatal(err)
	}
	return sub, rec
}

// counts returns how many records sub has of each kind: record, alias,
// snapshot items, parent links.
func (w world) counts(t *testing.T, sub store.SubID) string {
	t.Helper()
	var rec, alias, items, links int
	err := w.l.St.View(context.Background(), func(r store.Reader) error {
		if _, err := r.Subagent(sub); err == nil {
			rec++
		}
		if _, err := r.SubagentByChild("main", "cs"); err == nil {
			alias++
		}
		for _, err := range r.ForkItems(sub) {
			if err != nil {
				return err
			}
			items++
		}
		for l, err := range r.SubagentLinks(w.parent) {
			if err != nil {
				return err
			}
			if l.ID == sub {
				links++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("record %d alias %d items %d links %d", rec, alias, items, links)
}

// TestLifecycleFork: a fork's preparation snapshots the parent's items
// (tokens of the shown ones), the child's first assemble activates it, the
// fork child sees the parent's summaries (Holder), its end links it to the
// parent (Children, Holder from the parent) and a deletion removes every
// record of it.
func TestLifecycleFork(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 0)
	sub, _ := w.prepare(t, 0)
	rec, ok, err := w.l.Info(ctx, "main", childKey)
	if err != nil || !ok || rec.SnapshotItems != 3 || rec.SnapshotTokens != 20 || rec.State != Prepared {
		t.Fatalf("prepared: %+v %v %v; want 3 items, 20 tokens", rec, ok, err)
	}
	if got := w.counts(t, sub); got != "record 1 alias 1 items 3 links 0" {
		t.Fatalf("prepared: %s", got)
	}
	lk, err := w.l.Find(ctx, "main", "cs", "")
	if err != nil || !lk.Found || lk.ID != sub {
		t.Fatalf("Find by the child's session id: %+v %v", lk, err)
	}
	_, rec, ok, err = w.l.Started(ctx, Lookup{}, "main", "", childKey)
	if err != nil || !ok || rec.State != Active {
		t.Fatalf("Started: %+v %v %v; want active", rec, ok, err)
	}
	if c, ok, err := w.l.Holder(ctx, w.child, "sum_parent"); err != nil || !ok || c != w.parent {
		t.Fatalf("the fork child's holder of a parent summary: %v %v %v", c, ok, err)
	}
	if kids, err := w.l.Children(ctx, w.parent); err != nil || len(kids) != 0 {
		t.Fatalf("children before the end: %v %v", kids, err)
	}
	w.l.Forks.Get(sub)
	unlock, err := w.l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = w.l.Ended(ctx, sub, core.SubagentCompleted)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	if w.l.Forks.Contains(sub) {
		t.Error("the ended child's fork cache is kept")
	}
	if rec, _, _ := w.l.Info(ctx, "main", childKey); rec.State != Ended || rec.EndReason != core.SubagentCompleted {
		t.Fatalf("ended: %+v", rec)
	}
	if kids, err := w.l.Children(ctx, w.parent); err != nil || len(kids) != 1 || kids[0] != w.child {
		t.Fatalf("children: %v %v; want the child", kids, err)
	}
	if c, ok, err := w.l.Holder(ctx, w.parent, "sum_child"); err != nil || !ok || c != w.child {
		t.Fatalf("the parent's holder of a child summary: %v %v %v", c, ok, err)
	}
	if err := w.l.Ended(ctx, sub, core.SubagentDeleted); err != nil {
		t.Fatal(err)
	}
	if got := w.counts(t, sub); got != "record 0 alias 0 items 0 links 0" {
		t.Fatalf("deleted: %s", got)
	}
}

// TestRemoveByToken: a rollback removes only the preparation its token
// names; a preparation made again replaces the previous one.
func TestRemoveByToken(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 0)
	_, old := w.prepare(t, 0)
	sub, cur := w.prepare(t, 0)
	if old.Token == cur.Token {
		t.Fatal("two preparations share a token")
	}
	if got := w.counts(t, sub); got != "record 1 alias 1 items 3 links 0" {
		t.Fatalf("prepared again: %s", got)
	}
	if err := w.l.Remove(ctx, sub, old.Token); err != nil {
		t.Fatal(err)
	}
	if got := w.counts(t, sub); got != "record 1 alias 1 items 3 links 0" {
		t.Fatalf("after the older rollback: %s", got)
	}
	if err := w.l.Remove(ctx, sub, cur.Token); err != nil {
		t.Fatal(err)
	}
	if got := w.counts(t, sub); got != "record 0 alias 0 items 0 links 0" {
		t.Fatalf("after its own rollback: %s", got)
	}
}

// TestSweep: an expired preparation whose child never started is
// removed, as is a snapshot without a record; an expired one whose child
// stored messages stays.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	for _, started := range []bool{false, true} {
		var msgs int64
		if started {
			msgs = 2
		}
		w := newWorld(t, msgs)
		sub, _ := w.prepare(t, 1)
		orphan := ID("main", "orphan")
		if err := w.l.St.Update(ctx, func(tx store.Tx) error {
			return tx.PutForkItem(orphan, store.Item{Item: dag.Item{Pos: 1, Ref: dag.MessageRef(1)}})
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		n, err := w.l.Sweep(ctx)
		want, wantCounts := 1, "record 0 alias 0 items 0 links 0"
		if started {
			want, wantCounts = 0, "record 1 alias 1 items 3 links 0"
		}
		if err != nil || n != want {
			t.Fatalf("started %v: swept %d, %v; want %d", started, n, err, want)
		}
		if got := w.counts(t, sub); got != wantCounts {
			t.Errorf("started %v: %s, want %s", started, got, wantCounts)
		}
		if got := w.counts(t, orphan); got != "record 0 alias "+map[bool]string{false: "0", true: "1"}[started]+" items 0 links 0" {
			t.Errorf("started %v: orphan snapshot: %s", started, got)
		}
	}
}

// TestPrepareOnAFullDisk: behind a free-space guard that finds the disk
// full, a preparation is refused (store.ErrDiskFull) and leaves nothing.
func TestPrepareOnAFullDisk(t *testing.T) {
	w := newWorld(t, 0)
	w.l.Space = diskspace.NewGuard(t.TempDir(), 1<<20, func(string) (uint64, error) { return 0, nil })
	sp := core.SubagentSpawnParams{ChildSessionKey: childKey, ChildSessionID: "cs"}
	sub, rec := NewPreparation("main", "main", core.ContextModeFork, sp, time.Now().UnixMilli())
	parent := w.parent
	if err := w.l.Prepare(context.Background(), sub, rec, &parent); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("Prepare on a full disk: %v, want ErrDiskFull", err)
	}
	if got := w.counts(t, sub); got != "record 0 alias 0 items 0 links 0" {
		t.Fatalf("a refused preparation left %s", got)
	}
}
