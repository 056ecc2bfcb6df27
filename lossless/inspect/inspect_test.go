package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// putConv stores conversation sid of agent with n messages (timestamps
// 1000*seq), leaving out the message numbered skip (0: none).
func putConv(t *testing.T, st *memstore.Store, agent, sid string, n int, skip uint64) store.ConvID {
	t.Helper()
	c := records.NewConvID(agent, sid)
	err := st.Update(context.Background(), func(tx store.Tx) error {
		rec := store.Conversation{Agent: agent, SessionIDs: []string{sid}, NextSeq: uint64(n) + 1, NextPos: uint64(n+1) * records.PosStep, Messages: int64(n), Created: int64(len(sid))}
		if err := tx.PutConversation(c, rec); err != nil {
			return err
		}
		if err := tx.PutName(store.Name{Agent: agent, Kind: store.NameSessionID, Value: sid}, c); err != nil {
			return err
		}
		for seq := uint64(1); seq <= uint64(n); seq++ {
			if seq == skip {
				continue
			}
			raw := []byte(fmt.Sprintf(`{"role":"user","content":"m%d","timestamp":%d}`, seq, 1000*seq))
			m := store.Message{Seq: seq, Timestamp: int64(1000 * seq), Role: "user", Hash: records.HashRaw(raw), Raw: raw}
			if err := tx.PutMessage(c, m); err != nil {
				return err
			}
			it := dag.Item{Pos: seq * records.PosStep, Ref: dag.MessageRef(seq), Depth: -1, Timestamp: int64(1000 * seq)}
			if err := tx.PutItem(c, store.Item{Item: it}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSessionsMessagesStats: over a memstore, Sessions lists by agent then
// creation with the first and last message times, Messages reads a
// conversation in order, and ReadStats totals by agent, with the size of
// the index directory it is given.
func TestSessionsMessagesStats(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	long := putConv(t, st, "b", "s-long", 3, 0)
	putConv(t, st, "a", "s1", 2, 0)

	infos, err := inspect.Sessions(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].Agent != "a" || infos[1].Agent != "b" {
		t.Fatalf("Sessions = %+v, want a's then b's", infos)
	}
	if in := infos[1]; in.Messages != 3 || in.FirstMessage != 1000 || in.LastMessage != 3000 || in.Name() != "s-long" {
		t.Errorf("b's session = %+v", in)
	}
	if only, err := inspect.Sessions(ctx, st, "a"); err != nil || len(only) != 1 {
		t.Errorf("Sessions(a) = %+v, %v", only, err)
	}

	var seqs []uint64
	err = inspect.Messages(ctx, st, long, "s-long", func(seq uint64, m core.Message) error {
		seqs = append(seqs, seq)
		if want := fmt.Sprintf("m%d", seq); m.Text() != want {
			t.Errorf("message %d text %q, want %q", seq, m.Text(), want)
		}
		return nil
	})
	if err != nil || fmt.Sprint(seqs) != "[1 2 3]" {
		t.Errorf("Messages = %v, %v", seqs, err)
	}
	if err := inspect.Messages(ctx, st, store.ConvID{1}, "nope", func(uint64, core.Message) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Messages of an unknown conversation: %v", err)
	}
	stop := errors.New("stop")
	if err := inspect.Messages(ctx, st, long, "s-long", func(uint64, core.Message) error { return stop }); err != stop {
		t.Errorf("Messages with fn failing: %v, want fn's error", err)
	}

	s, err := inspect.ReadStats(ctx, st, 7, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != 7 || s.Agents["a"].Messages != 2 || s.Agents["b"].Conversations != 1 || s.Agents["b"].Messages != 3 || s.IndexBytes != 0 {
		t.Errorf("Stats = %+v", s)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index"), make([]byte, 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := inspect.ReadStats(ctx, st, 7, dir); err != nil || s.IndexBytes < 5000 {
		t.Errorf("Stats with an index directory = %+v, %v; want IndexBytes >= 5000", s, err)
	}
}

// TestMessagesReportsMissingRange: a message gone from the store (a lost
// key, as a corrupt block would lose it) makes reading the conversation
// fail with the conversation and the missing range (store.ErrCorrupt:
// lossless.ErrCorrupt), instead of returning a short list; so does a lost
// tail (the record's count says more). A deep Check reports it too (the
// DAG's items are all there: the lost message's names it). Moved from
// package lossless's corrupt_test.go.
func TestMessagesReportsMissingRange(t *testing.T) {
	ctx := context.Background()
	for _, lost := range []uint64{5, 10} {
		t.Run(fmt.Sprint(lost), func(t *testing.T) {
			st := memstore.New()
			c := putConv(t, st, "a", "s", 10, 0)
			if err := st.Update(ctx, func(tx store.Tx) error { return tx.DeleteMessage(c, lost) }); err != nil {
				t.Fatal(err)
			}
			n := 0
			err := inspect.Messages(ctx, st, c, "s", func(uint64, core.Message) error { n++; return nil })
			want := fmt.Sprintf("messages %d-%d are missing", lost, lost)
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.String()) {
				t.Fatalf("lost message %d: err %v after %d messages", lost, err, n)
			}
			cr, err := inspect.Check(ctx, st, true)
			if err != nil || len(cr.Problems) == 0 || !strings.Contains(fmt.Sprint(cr.Problems), want) {
				t.Fatalf("deep check after losing message %d: %+v %v", lost, cr, err)
			}
		})
	}
	st := memstore.New()
	c := putConv(t, st, "a", "gap", 4, 2)
	err := inspect.Messages(ctx, st, c, "gap", func(uint64, core.Message) error { return nil })
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "messages 2-2 are missing") {
		t.Errorf("Messages over a gap: %v, want messages 2-2 missing (store.ErrCorrupt)", err)
	}
}

func TestCheckReportsWhatItFinds(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	putConv(t, st, "a", "ok", 3, 0)
	putConv(t, st, "a", "gap", 4, 3)

	res, err := inspect.Check(ctx, st, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Conversations != 2 || res.Deep || len(res.NotRead) != 3 || res.Messages != 7 {
		t.Errorf("Check = %+v", res)
	}
	// The gap's item is missing too, so the DAG check finds it.
	if len(res.Problems) != 1 || res.Problems[0].SessionID != "gap" {
		t.Errorf("Check problems = %+v, want one, of session gap", res.Problems)
	}

	deep, err := inspect.Check(ctx, st, true)
	if err != nil {
		t.Fatal(err)
	}
	if !deep.Deep || len(deep.NotRead) != 2 || deep.Messages != 3+2 {
		t.Errorf("deep Check = %+v", deep)
	}
	// The DAG's, the record's count against the messages stored, and the
	// read of every message.
	if len(deep.Problems) != 3 || !strings.Contains(deep.Problems[1].Problem, "3 messages stored (missing: 3), the record counts 4") ||
		!strings.Contains(deep.Problems[2].Problem, "messages 3-3 are missing") {
		t.Errorf("deep Check problems = %+v, want the DAG's, the count's and the missing message 3", deep.Problems)
	}
}

func TestCheckRetiringIsReported(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	c := putConv(t, st, "a", "old", 1, 0)
	err := st.Update(ctx, func(tx store.Tx) error {
		rec, err := tx.Conversation(c)
		if err != nil {
			return err
		}
		rec.Retiring = true
		return tx.PutConversation(c, rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := inspect.Check(ctx, st, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Problem, records.ErrRetiring.Error()) {
		t.Errorf("Check problems = %+v, want the retiring conversation", res.Problems)
	}
	if err := inspect.Messages(ctx, st, c, "old", func(uint64, core.Message) error { return nil }); !errors.Is(err, records.ErrRetiring) {
		t.Errorf("Messages of a retiring conversation: %v", err)
	}
}

// TestCheckReadsMessageMeta: Check's DAG reads each message's metadata
// (dag.MessageMetaReader), so an item costing more tokens than its
// message is found.
func TestCheckReadsMessageMeta(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	c := putConv(t, st, "a", "s", 2, 0)
	err := st.Update(ctx, func(tx store.Tx) error {
		it := dag.Item{Pos: 2 * records.PosStep, Ref: dag.MessageRef(2), Depth: -1, Tokens: 50, Timestamp: 2000}
		return tx.PutItem(c, store.Item{Item: it})
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := inspect.Check(ctx, st, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Problem, "tokens 50, message has only 0") {
		t.Errorf("Check problems = %+v, want item 2's tokens over its message's", res.Problems)
	}
}

// TestSessionsReportMessageTimes: Sessions reports when a conversation
// took place by its messages' own timestamps, the earlier first; a message
// without a timestamp counts as the other one.
func TestSessionsReportMessageTimes(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	put := func(sid string, times ...int64) {
		t.Helper()
		c := records.NewConvID("a", sid)
		err := st.Update(ctx, func(tx store.Tx) error {
			rec := store.Conversation{Agent: "a", SessionIDs: []string{sid}, Messages: int64(len(times)), NextSeq: uint64(len(times)) + 1, Updated: 99_000}
			if err := tx.PutConversation(c, rec); err != nil {
				return err
			}
			for i, ts := range times {
				raw := []byte(`{"role":"user","content":"x"}`)
				if err := tx.PutMessage(c, store.Message{Seq: uint64(i + 1), Timestamp: ts, Role: "user", Raw: raw}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("imported", 7000, 8000, 9000)
	put("no-time", 0, 42)
	put("backwards", 5000, 3000)
	put("empty")
	infos, err := inspect.Sessions(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int64{}
	for _, in := range infos {
		got[in.SessionIDs[0]] = [2]int64{in.FirstMessage, in.LastMessage}
	}
	want := map[string][2]int64{"imported": {7000, 9000}, "no-time": {42, 42}, "backwards": {3000, 5000}, "empty": {0, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("message times %v, want %v", got, want)
	}
}
