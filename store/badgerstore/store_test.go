package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

func msgItem(pos, seq uint64, tokens int) store.Item {
	return store.Item{Item: dag.Item{Pos: pos, Ref: dag.MessageRef(seq), Tokens: tokens, Depth: -1, Timestamp: int64(seq), Role: "user"}}
}

func testMessage(seq uint64, body string) store.Message {
	raw := fmt.Sprintf(`{"role":"user","content":%q}`, body)
	var h store.Hash
	copy(h[:], fmt.Sprintf("%016d", seq))
	return store.Message{Seq: seq, Tokens: len(body), Timestamp: 1700000000000 + int64(seq), Role: "user", Hash: h, Raw: []byte(raw)}
}

// TestRoundTrip puts, reads, and deletes a record of every family.
func TestRoundTrip(t *testing.T) {
	s := openTest(t, Options{})
	c := gConv
	h := gHash()
	long := testMessage(7, strings.Repeat("compressible text ", 100))
	cases := []struct {
		name string
		put  func(w store.Writer) error
		get  func(r store.Reader) (any, error)
		want any
		del  func(w store.Writer) error
	}{
		{"meta", func(w store.Writer) error {
			return w.PutMeta(store.Meta{Format: 2, Engine: "lossless", Tokenizer: "x"})
		},
			func(r store.Reader) (any, error) { return r.Meta() }, store.Meta{Format: 2, Engine: "lossless", Tokenizer: "x"}, nil},
		{"conversation", func(w store.Writer) error { return w.PutConversation(c, store.Conversation{Agent: "a", NextSeq: 3}) },
			func(r store.Reader) (any, error) { return r.Conversation(c) }, store.Conversation{Agent: "a", NextSeq: 3},
			func(w store.Writer) error { return w.DeleteConversation(c) }},
		{"name", func(w store.Writer) error {
			return w.PutName(store.Name{Agent: "a", Kind: store.NameSessionID, Value: "s"}, c)
		},
			func(r store.Reader) (any, error) {
				return r.ConvByName(store.Name{Agent: "a", Kind: store.NameSessionID, Value: "s"})
			}, c,
			func(w store.Writer) error {
				return w.DeleteName(store.Name{Agent: "a", Kind: store.NameSessionID, Value: "s"})
			}},
		{"message", func(w store.Writer) error { return w.PutMessage(c, testMessage(5, "hi")) },
			func(r store.Reader) (any, error) { return r.Message(c, 5) }, testMessage(5, "hi"),
			func(w store.Writer) error { return w.DeleteMessage(c, 5) }},
		{"message compressed", func(w store.Writer) error { return w.PutMessage(c, long) },
			func(r store.Reader) (any, error) { return r.Message(c, 7) }, long,
			func(w store.Writer) error { return w.DeleteMessage(c, 7) }},
		{"hash", func(w store.Writer) error { return w.PutHash(c, h, 9) },
			func(r store.Reader) (any, error) { return r.SeqByHash(c, h) }, uint64(9),
			func(w store.Writer) error { return w.DeleteHash(c, h) }},
		{"large", func(w store.Writer) error { return w.PutLarge(c, 4, []byte("ref")) },
			func(r store.Reader) (any, error) { return r.Large(c, 4) }, []byte("ref"),
			func(w store.Writer) error { return w.DeleteLarge(c, 4) }},
		{"item", func(w store.Writer) error { return w.PutItem(c, msgItem(1<<16, 1, 10)) },
			func(r store.Reader) (any, error) { return r.Item(c, 1<<16) }, msgItem(1<<16, 1, 10),
			func(w store.Writer) error { return w.DeleteItem(c, 1<<16) }},
		{"summary", func(w store.Writer) error {
			return w.PutSummary(c, dag.Summary{ID: "s1", Kind: dag.KindLeaf, Text: "t"})
		},
			func(r store.Reader) (any, error) { return r.Summary(c, "s1") }, dag.Summary{ID: "s1", Kind: dag.KindLeaf, Text: "t"},
			func(w store.Writer) error { return w.DeleteSummary(c, "s1") }},
		{"entry x", func(w store.Writer) error { return w.PutEntrySeq(c, gTag, store.EntriesCurrent, 3, 8) },
			func(r store.Reader) (any, error) { return r.EntrySeq(c, gTag, store.EntriesCurrent, 3) }, uint64(8),
			func(w store.Writer) error { return w.DeleteEntrySeq(c, gTag, store.EntriesCurrent, 3) }},
		{"entry o", func(w store.Writer) error { return w.PutEntrySeq(c, gTag, store.EntriesPrevious, 3, 6) },
			func(r store.Reader) (any, error) { return r.EntrySeq(c, gTag, store.EntriesPrevious, 3) }, uint64(6),
			func(w store.Writer) error { return w.DeleteEntrySeq(c, gTag, store.EntriesPrevious, 3) }},
		{"host entry", func(w store.Writer) error {
			return w.PutHostEntry(c, 2, store.HostEntry{Seq: 5, Key: h, EntryID: "e"})
		},
			func(r store.Reader) (any, error) { return r.HostEntry(c, 2) }, store.HostEntry{Seq: 5, Key: h, EntryID: "e"},
			func(w store.Writer) error { return w.DeleteHostEntries(c) }},
		{"entry id", func(w store.Writer) error { return w.PutEntryIndex(c, gTag, "id-1", 4) },
			func(r store.Reader) (any, error) { return r.EntryIndex(c, gTag, "id-1") }, uint64(4),
			func(w store.Writer) error { return w.DeleteEntryIndex(c, gTag, "id-1") }},
		{"reconcile", func(w store.Writer) error { return w.PutReconcileFrom(c, gTag, 11) },
			func(r store.Reader) (any, error) { return r.ReconcileFrom(c, gTag) }, uint64(11),
			func(w store.Writer) error { return w.DeleteReconcileFrom(c, gTag) }},
		{"order", func(w store.Writer) error { return w.PutOrder(c, 3, 99) },
			func(r store.Reader) (any, error) { return r.Order(c, 3) }, uint64(99),
			func(w store.Writer) error { return w.DeleteOrder(c, 3) }},
		{"file checkpoint", func(w store.Writer) error { return w.PutFileCheckpoint("a", "/p", store.FileCheckpoint{Offset: 5}) },
			func(r store.Reader) (any, error) { return r.FileCheckpoint("a", "/p") }, store.FileCheckpoint{Offset: 5},
			func(w store.Writer) error { return w.DeleteFileCheckpoint("a", "/p") }},
		{"host checkpoint", func(w store.Writer) error { return w.PutHostCheckpoint("a", c, store.HostCheckpoint{Entries: 5}) },
			func(r store.Reader) (any, error) { return r.HostCheckpoint("a", c) }, store.HostCheckpoint{Entries: 5},
			func(w store.Writer) error { return w.DeleteHostCheckpoint("a", c) }},
		{"turn", func(w store.Writer) error { return w.PutTurn(c, "k", store.Turn{Seqs: []uint64{1}, Stored: 1}) },
			func(r store.Reader) (any, error) { return r.Turn(c, "k") }, store.Turn{Seqs: []uint64{1}, Stored: 1},
			func(w store.Writer) error { return w.DeleteTurn(c, "k") }},
		{"subagent", func(w store.Writer) error { return w.PutSubagent(gSub, store.Subagent{Agent: "a", Token: "t"}) },
			func(r store.Reader) (any, error) { return r.Subagent(gSub) }, store.Subagent{Agent: "a", Token: "t"},
			func(w store.Writer) error { return w.DeleteSubagent(gSub) }},
		{"subagent alias", func(w store.Writer) error { return w.PutSubagentByChild("a", "child", gSub) },
			func(r store.Reader) (any, error) { return r.SubagentByChild("a", "child") }, gSub,
			func(w store.Writer) error { return w.DeleteSubagentByChild("a", "child") }},
		{"fork item", func(w store.Writer) error { return w.PutForkItem(gSub, msgItem(7, 1, 3)) },
			func(r store.Reader) (any, error) {
				var out []store.Item
				for it, err := range r.ForkItems(gSub) {
					if err != nil {
						return nil, err
					}
					out = append(out, it)
				}
				if len(out) == 0 {
					return nil, store.ErrNotFound
				}
				return out, nil
			}, []store.Item{msgItem(7, 1, 3)},
			func(w store.Writer) error { return w.DeleteForkItems(gSub) }},
		{"subagent link", func(w store.Writer) error { return w.PutSubagentLink(c, gSub2, "agent:main:subagent:2") },
			func(r store.Reader) (any, error) {
				var out []store.SubagentLinkRecord
				for l, err := range r.SubagentLinks(c) {
					if err != nil {
						return nil, err
					}
					out = append(out, l)
				}
				if len(out) == 0 {
					return nil, store.ErrNotFound
				}
				return out, nil
			}, []store.SubagentLinkRecord{{ID: gSub2, ChildKey: "agent:main:subagent:2"}},
			func(w store.Writer) error { return w.DeleteSubagentLink(c, gSub2) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			update(t, s, func(tx store.Tx) error { return tc.put(tx) })
			view(t, s, func(r store.Reader) error {
				got, err := tc.get(r)
				if err != nil {
					return err
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
				return nil
			})
			if tc.del == nil {
				return
			}
			update(t, s, func(tx store.Tx) error { return tc.del(tx) })
			view(t, s, func(r store.Reader) error {
				_, err := tc.get(r)
				wantErr(t, "after delete", err, store.ErrNotFound)
				return nil
			})
		})
	}
}

// TestScans checks every scan's order, its bounds and its start.
func TestScans(t *testing.T) {
	s := openTest(t, Options{})
	c, c2 := gConv, gConv2
	update(t, s, func(tx store.Tx) error {
		for _, id := range []store.ConvID{c2, c} { // written out of order
			must(t, tx.PutConversation(id, store.Conversation{Agent: id.String()}))
		}
		for _, n := range []store.Name{nm("b", 's', "2"), nm("a", 's', "9"), nm("a", 'k', "z"), nm("ab", 'k', "a")} {
			must(t, tx.PutName(n, c))
		}
		for seq := uint64(1); seq <= 5; seq++ {
			must(t, tx.PutMessage(c, testMessage(seq, strings.Repeat("x", int(seq)*100))))
			must(t, tx.PutItem(c, msgItem(seq<<16, seq, int(seq))))
			must(t, tx.PutOrder(c, seq, 100-seq))
			must(t, tx.PutEntrySeq(c, gTag, store.EntriesCurrent, seq-1, seq))
			must(t, tx.PutEntrySeq(c, gTag, store.EntriesPrevious, seq-1, seq+10))
			must(t, tx.PutHostEntry(c, seq-1, store.HostEntry{Seq: seq, EntryID: fmt.Sprint("e", seq)}))
			must(t, tx.PutHostEntry(c2, seq-1, store.HostEntry{Seq: seq, EntryID: "other"}))
		}
		// Neighbours that must not show up in c's scans.
		must(t, tx.PutMessage(c2, testMessage(1, "other")))
		must(t, tx.PutItem(c2, msgItem(1, 1, 1)))
		must(t, tx.PutEntryIndex(c, gTag, "id", 1))
		must(t, tx.PutReconcileFrom(c, gTag, 3))
		for _, id := range []string{"s-b", "s-a", "s-c"} {
			must(t, tx.PutSummary(c, dag.Summary{ID: id}))
		}
		must(t, tx.PutFileCheckpoint("b", "/f", store.FileCheckpoint{Offset: 1}))
		must(t, tx.PutFileCheckpoint("a", "/z", store.FileCheckpoint{Offset: 2}))
		must(t, tx.PutHostCheckpoint("a", c, store.HostCheckpoint{Entries: 3}))
		must(t, tx.PutFileCheckpoint("a", "host:not-an-id", store.FileCheckpoint{Offset: 4}))
		must(t, tx.PutSubagent(gSub2, store.Subagent{Token: "2"}))
		must(t, tx.PutSubagent(gSub, store.Subagent{Token: "1"}))
		for pos := uint64(3); pos >= 1; pos-- {
			must(t, tx.PutForkItem(gSub, msgItem(pos, pos, 1)))
		}
		must(t, tx.PutForkItem(gSub2, msgItem(1, 1, 1)))
		orphan := store.SubID{0xff, 0, 0, 0, 0, 0, 0, 1}
		must(t, tx.PutForkItem(orphan, msgItem(1, 1, 1)))
		must(t, tx.PutSubagentLink(c, gSub2, "k2"))
		must(t, tx.PutSubagentLink(c, gSub, "k1"))
		must(t, tx.PutSubagentLink(c2, gSub, "other"))
		return nil
	})
	view(t, s, func(r store.Reader) error {
		var ids []store.ConvID
		for rec := range collectSeq(t, r.Conversations()) {
			ids = append(ids, rec.ID)
		}
		eqT(t, "conversations", ids, []store.ConvID{c, c2})

		var names []string
		for n := range collectSeq(t, r.Names()) {
			names = append(names, fmt.Sprintf("%s/%c/%s", n.Agent, n.Kind, n.Value))
		}
		eqT(t, "names", names, []string{"a/k/z", "a/s/9", "ab/k/a", "b/s/2"})

		pos := func(items []store.Item) []uint64 {
			var out []uint64
			for _, it := range items {
				out = append(out, it.Pos>>16)
			}
			return out
		}
		eqT(t, "items", pos(collect(t, r.Items(c, 0, ^uint64(0), false))), []uint64{1, 2, 3, 4, 5})
		eqT(t, "items reverse", pos(collect(t, r.Items(c, 0, ^uint64(0), true))), []uint64{5, 4, 3, 2, 1})
		eqT(t, "items [2,4]", pos(collect(t, r.Items(c, 2<<16, 4<<16, false))), []uint64{2, 3, 4})
		eqT(t, "items [2,4] reverse", pos(collect(t, r.Items(c, 2<<16, 4<<16, true))), []uint64{4, 3, 2})
		eqT(t, "items between", pos(collect(t, r.Items(c, 2<<16+1, 4<<16-1, true))), []uint64{3})
		eqT(t, "items none", pos(collect(t, r.Items(c, 6<<16, 9<<16, false))), []uint64(nil))

		var seqs []uint64
		for _, m := range collect(t, r.Messages(c, 3, true)) {
			seqs = append(seqs, m.Seq)
			if want := testMessage(m.Seq, strings.Repeat("x", int(m.Seq)*100)); !reflect.DeepEqual(m, want) {
				t.Errorf("message %d: got %+v", m.Seq, m)
			}
		}
		eqT(t, "messages from 3", seqs, []uint64{3, 4, 5})
		for _, m := range collect(t, r.Messages(c, 0, false)) {
			if m.Raw != nil || m.Role != "user" {
				t.Errorf("header-only scan: message %d has raw %q, role %q", m.Seq, m.Raw, m.Role)
			}
		}

		eqT(t, "entries x from 2", collect(t, r.Entries(c, gTag, store.EntriesCurrent, 2)),
			[]store.EntryPair{{Index: 2, Seq: 3}, {Index: 3, Seq: 4}, {Index: 4, Seq: 5}})
		eqT(t, "entries o", len(collect(t, r.Entries(c, gTag, store.EntriesPrevious, 0))), 5)
		eqT(t, "host entries from 4", collect(t, r.HostEntries(c, 4)),
			[]store.HostEntryRecord{{Index: 4, HostEntry: store.HostEntry{Seq: 5, EntryID: "e5"}}})
		var hostIDs []string
		for _, e := range collect(t, r.HostEntries(c, 3)) {
			hostIDs = append(hostIDs, e.EntryID)
		}
		eqT(t, "host entries from 3", hostIDs, []string{"e4", "e5"})

		eqT(t, "orders", collect(t, r.Orders(c)), []store.Pair{{Key: 1, Value: 99}, {Key: 2, Value: 98}, {Key: 3, Value: 97}, {Key: 4, Value: 96}, {Key: 5, Value: 95}})

		var sums []string
		for _, sm := range collect(t, r.Summaries(c)) {
			sums = append(sums, sm.ID)
		}
		eqT(t, "summaries", sums, []string{"s-a", "s-b", "s-c"})

		var cps []string
		for _, cp := range collect(t, r.Checkpoints()) {
			switch {
			case cp.Host != nil && cp.File == nil:
				cps = append(cps, fmt.Sprintf("%s host %s %d", cp.Agent, cp.HostConv, cp.Host.Entries))
			case cp.File != nil && cp.Host == nil:
				cps = append(cps, fmt.Sprintf("%s file %s %d", cp.Agent, cp.Path, cp.File.Offset))
			default:
				t.Errorf("checkpoint %+v: neither file nor host", cp)
			}
		}
		eqT(t, "checkpoints", cps, []string{"a file /z 2", "a host " + c.String() + " 3", "a file host:not-an-id 4", "b file /f 1"})

		var subs []string
		for _, sr := range collect(t, r.Subagents()) {
			subs = append(subs, sr.Token)
		}
		eqT(t, "subagents", subs, []string{"1", "2"})
		eqT(t, "fork items", pos16(collect(t, r.ForkItems(gSub))), []uint64{1, 2, 3})
		eqT(t, "fork snapshots", collect(t, r.ForkSnapshots()), []store.SubID{gSub, gSub2, {0xff, 0, 0, 0, 0, 0, 0, 1}})
		eqT(t, "links", collect(t, r.SubagentLinks(c)), []store.SubagentLinkRecord{{ID: gSub, ChildKey: "k1"}, {ID: gSub2, ChildKey: "k2"}})
		return nil
	})
}

func nm(agent string, kind store.NameKind, value string) store.Name {
	return store.Name{Agent: agent, Kind: kind, Value: value}
}

func pos16(items []store.Item) []uint64 {
	var out []uint64
	for _, it := range items {
		out = append(out, it.Pos)
	}
	return out
}

// collectSeq turns a scan into a single-value sequence, failing on errors.
func collectSeq[T any](t *testing.T, seq func(func(T, error) bool)) func(func(T) bool) {
	return func(yield func(T) bool) {
		for v, err := range seq {
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			if !yield(v) {
				return
			}
		}
	}
}

func eqT(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// TestScanBreak breaks off scans midway: their iterators are closed (the
// transaction ends without Badger's unclosed-iterator panic), and the
// transaction goes on.
func TestScanBreak(t *testing.T) {
	s := openTest(t, Options{})
	update(t, s, func(tx store.Tx) error {
		for seq := uint64(1); seq <= 600; seq++ {
			must(t, tx.PutItem(gConv, msgItem(seq, seq, 1)))
			must(t, tx.PutMessage(gConv, testMessage(seq, "m")))
		}
		return nil
	})
	for _, write := range []bool{false, true} {
		fn := func(r store.Reader) error {
			n := 0
			for _, err := range r.Items(gConv, 0, ^uint64(0), true) {
				must(t, err)
				if n++; n == 3 {
					break
				}
			}
			for _, err := range r.Messages(gConv, 1, true) {
				must(t, err)
				break
			}
			func() {
				for range r.Items(gConv, 0, ^uint64(0), false) {
					return // a return from inside the loop closes it too
				}
			}()
			if _, err := r.Item(gConv, 5); err != nil {
				return err
			}
			if len(collect(t, r.Items(gConv, 0, ^uint64(0), false))) != 600 {
				t.Error("a scan after broken ones does not see every item")
			}
			return nil
		}
		if write {
			must(t, s.Update(context.Background(), func(tx store.Tx) error {
				if err := fn(tx); err != nil {
					return err
				}
				return tx.PutItem(gConv, msgItem(601, 601, 1))
			}))
		} else {
			must(t, s.View(context.Background(), fn))
		}
	}
}

// TestScanContext: a scan stops with the context's error once it is done.
func TestScanContext(t *testing.T) {
	s := openTest(t, Options{})
	update(t, s, func(tx store.Tx) error {
		for seq := uint64(1); seq <= 1000; seq++ {
			must(t, tx.PutItem(gConv, msgItem(seq, seq, 1)))
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	must(t, s.View(ctx, func(r store.Reader) error {
		n := 0
		var last error
		for _, err := range r.Items(gConv, 0, ^uint64(0), false) {
			if err != nil {
				last = err
				break
			}
			if n++; n == 10 {
				cancel()
			}
		}
		wantErr(t, "scan after cancel", last, context.Canceled)
		if n >= 1000 {
			t.Errorf("scan ran to the end (%d items) after cancel", n)
		}
		return nil
	}))
}

// TestNotFound: every getter of an empty store.
func TestNotFound(t *testing.T) {
	s := openTest(t, Options{})
	view(t, s, func(r store.Reader) error {
		c := gConv
		errs := map[string]error{}
		_, errs["meta"] = r.Meta()
		_, errs["conversation"] = r.Conversation(c)
		_, errs["name"] = r.ConvByName(store.Name{Agent: "a", Kind: 's', Value: "x"})
		_, errs["message"] = r.Message(c, 1)
		_, errs["header"] = r.MessageHeader(c, 1)
		_, errs["hash"] = r.SeqByHash(c, store.Hash{})
		_, errs["large"] = r.Large(c, 1)
		_, errs["item"] = r.Item(c, 1)
		_, errs["summary"] = r.Summary(c, "x")
		_, errs["entry"] = r.EntrySeq(c, gTag, store.EntriesCurrent, 1)
		_, errs["entry id"] = r.EntryIndex(c, gTag, "x")
		_, errs["reconcile"] = r.ReconcileFrom(c, gTag)
		_, errs["host entry"] = r.HostEntry(c, 1)
		_, errs["order"] = r.Order(c, 1)
		_, errs["file checkpoint"] = r.FileCheckpoint("a", "p")
		_, errs["host checkpoint"] = r.HostCheckpoint("a", c)
		_, errs["turn"] = r.Turn(c, "k")
		_, errs["subagent"] = r.Subagent(gSub)
		_, errs["alias"] = r.SubagentByChild("a", "s")
		for what, err := range errs {
			wantErr(t, what, err, store.ErrNotFound)
		}
		if n := len(collect(t, r.Conversations())); n != 0 {
			t.Errorf("%d conversations in an empty store", n)
		}
		return nil
	})
}

// TestCorrupt writes records that do not decode under every family's keys
// (with Badger directly) and reads them through the store.
func TestCorrupt(t *testing.T) {
	s := openTest(t, Options{})
	c := gConv
	raw := map[string][]byte{
		"meta":          metaKey,
		"conversation":  convKey(c),
		"name":          nameKey(store.Name{Agent: "a", Kind: 's', Value: "x"}),
		"message":       msgKey(c, 1),
		"message zstd":  msgKey(c, 2),
		"hash":          hashKey(c, store.Hash{}),
		"item":          itemKey(c, 1),
		"summary":       summaryKey(c, "x"),
		"entry":         entryKey(c, gTag, 'x', 1),
		"host entry":    hostEntryKey(c, 1),
		"entry id":      entryIDKey(c, gTag, "x"),
		"reconcile":     reconcileFromKey(c, gTag),
		"order":         orderKey(c, 1),
		"checkpoint":    checkKey("a", "p"),
		"host cp":       hostCheckKey("a", c),
		"turn":          turnKey(c, "k"),
		"subagent":      subKey(gSub),
		"alias":         subAliasKey("a", "s"),
		"fork item":     forkItemKey(gSub, 1),
		"summary empty": summaryKey(c, "y"),
	}
	vals := map[string][]byte{
		// A zstd record whose header is whole and whose body is not a
		// frame: MessageHeader reads it, Message cannot.
		"message zstd":  append([]byte{recordZstd, 0, 1, 2, 1, 'u'}, make([]byte, 16+5)...),
		"summary empty": append([]byte{recordVersion}, `{"id":""}`...),
		"item":          {recordVersion, 0, 9}, // unknown ref kind
		"host entry":    make([]byte, 10),      // shorter than seq + key
	}
	must(t, s.db.Update(func(txn *badger.Txn) error {
		for what, k := range raw {
			v, ok := vals[what]
			if !ok {
				v = []byte{0xff, 0xfe, 0xfd}
			}
			if err := txn.Set(k, v); err != nil {
				return err
			}
		}
		return nil
	}))
	view(t, s, func(r store.Reader) error {
		errs := map[string]error{}
		_, errs["meta"] = r.Meta()
		_, errs["conversation"] = r.Conversation(c)
		_, errs["name"] = r.ConvByName(store.Name{Agent: "a", Kind: 's', Value: "x"})
		_, errs["message"] = r.Message(c, 1)
		_, errs["message header"] = r.MessageHeader(c, 1)
		_, errs["message zstd"] = r.Message(c, 2)
		_, errs["hash"] = r.SeqByHash(c, store.Hash{})
		_, errs["item"] = r.Item(c, 1)
		_, errs["summary"] = r.Summary(c, "x")
		_, errs["summary empty"] = r.Summary(c, "y")
		_, errs["entry"] = r.EntrySeq(c, gTag, store.EntriesCurrent, 1)
		_, errs["host entry"] = r.HostEntry(c, 1)
		_, errs["entry id"] = r.EntryIndex(c, gTag, "x")
		_, errs["reconcile"] = r.ReconcileFrom(c, gTag)
		_, errs["order"] = r.Order(c, 1)
		_, errs["checkpoint"] = r.FileCheckpoint("a", "p")
		_, errs["host cp"] = r.HostCheckpoint("a", c)
		_, errs["turn"] = r.Turn(c, "k")
		_, errs["subagent"] = r.Subagent(gSub)
		_, errs["alias"] = r.SubagentByChild("a", "s")
		scanErr := func(seq func(func(any, error) bool)) error {
			for _, err := range seq {
				if err != nil {
					return err
				}
			}
			return nil
		}
		errs["scan conversations"] = scanErr(anySeq(r.Conversations()))
		errs["scan names"] = scanErr(anySeq(r.Names()))
		errs["scan messages"] = scanErr(anySeq(r.Messages(c, 0, true)))
		errs["scan items"] = scanErr(anySeq(r.Items(c, 0, ^uint64(0), true)))
		errs["scan summaries"] = scanErr(anySeq(r.Summaries(c)))
		errs["scan entries"] = scanErr(anySeq(r.Entries(c, gTag, store.EntriesCurrent, 0)))
		errs["scan host entries"] = scanErr(anySeq(r.HostEntries(c, 0)))
		errs["scan orders"] = scanErr(anySeq(r.Orders(c)))
		errs["scan checkpoints"] = scanErr(anySeq(r.Checkpoints()))
		errs["scan subagents"] = scanErr(anySeq(r.Subagents()))
		errs["scan fork items"] = scanErr(anySeq(r.ForkItems(gSub)))
		for what, err := range errs {
			wantErr(t, what, err, store.ErrCorrupt)
		}
		// The header of the record with the broken body decodes: it is
		// never decompressed.
		m, err := r.MessageHeader(c, 2)
		if err != nil || m.Role != "u" || m.Raw != nil {
			t.Errorf("header of a record with a bad body: %+v, %v", m, err)
		}
		return nil
	})
	// Leave nothing corrupt for openTest's check.
	must(t, s.db.DropAll())
}

func anySeq[T any](seq func(func(T, error) bool)) func(func(any, error) bool) {
	return func(yield func(any, error) bool) {
		for v, err := range seq {
			if !yield(v, err) {
				return
			}
		}
	}
}

// TestReadOnly: a store reopened read-only reads and refuses writes.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, Options{Dir: dir})
	must(t, err)
	must(t, s.Update(ctx, func(tx store.Tx) error { return tx.PutConversation(gConv, store.Conversation{Agent: "a"}) }))
	must(t, s.Close())

	ro := openTest(t, Options{Dir: dir, ReadOnly: true})
	view(t, ro, func(r store.Reader) error {
		rec, err := r.Conversation(gConv)
		if err != nil || rec.Agent != "a" {
			t.Errorf("read-only read: %+v, %v", rec, err)
		}
		return nil
	})
	called := false
	err = ro.Update(ctx, func(tx store.Tx) error { called = true; return nil })
	wantErr(t, "update", err, store.ErrReadOnly)
	if called {
		t.Error("Update ran fn on a read-only store")
	}
	_, err = ro.NewBatch(ctx)
	wantErr(t, "new batch", err, store.ErrReadOnly)
	must(t, ro.Sync(ctx))
}

// TestUpdateAtomic: an Update whose fn fails, or whose context ends before
// the commit, writes nothing.
func TestUpdateAtomic(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	writeAll := func(tx store.Tx) {
		must(t, tx.PutConversation(gConv, store.Conversation{Agent: "a"}))
		must(t, tx.PutMessage(gConv, testMessage(1, "m")))
		must(t, tx.PutItem(gConv, msgItem(1, 1, 1)))
		must(t, tx.PutName(store.Name{Agent: "a", Kind: 's', Value: "s"}, gConv))
		// The transaction reads its own writes.
		if _, err := tx.Message(gConv, 1); err != nil {
			t.Errorf("tx does not read its own write: %v", err)
		}
		if n := len(collect(t, tx.Items(gConv, 0, ^uint64(0), false))); n != 1 {
			t.Errorf("tx scan sees %d of its items, want 1", n)
		}
	}
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx store.Tx) error { writeAll(tx); return boom })
	if err != boom {
		t.Errorf("Update returned %v, want fn's error as it is", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	err = s.Update(cctx, func(tx store.Tx) error { writeAll(tx); cancel(); return nil })
	wantErr(t, "cancelled update", err, context.Canceled)
	if got := rawKVs(t, s.db); len(got) != 0 {
		t.Errorf("failed updates left %d keys", len(got))
	}
	err = s.Update(cctx, func(tx store.Tx) error { t.Error("fn ran with a done context"); return nil })
	wantErr(t, "update with a done context", err, context.Canceled)
	err = s.View(cctx, func(store.Reader) error { t.Error("fn ran with a done context"); return nil })
	wantErr(t, "view with a done context", err, context.Canceled)
}

// TestReopen: what is committed is there after Close and Open.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	g := newCompatRecords3()
	s, err := Open(ctx, Options{Dir: dir, SyncWrites: true})
	must(t, err)
	must(t, s.Update(ctx, func(tx store.Tx) error { return g.write(tx, nil) }))
	must(t, s.Close())
	s = openTest(t, Options{Dir: dir})
	checkGolden(t, s.db, golden3)
	g.checkRead(t, s)
}

// TestClose: Close is idempotent, every call after it fails with
// store.ErrClosed, and so does a Reader, Tx or Batch used after its end.
func TestClose(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: t.TempDir()})
	must(t, err)
	var kept store.Tx
	must(t, s.Update(ctx, func(tx store.Tx) error { kept = tx; return tx.PutMeta(store.Meta{Format: 2}) }))
	_, err = kept.Meta()
	wantErr(t, "read after the update", err, store.ErrClosed)
	wantErr(t, "write after the update", kept.PutMeta(store.Meta{}), store.ErrClosed)
	for _, err := range kept.Items(gConv, 0, 1, false) {
		wantErr(t, "scan after the update", err, store.ErrClosed)
	}
	b, err := s.NewBatch(ctx)
	must(t, err)
	must(t, b.PutMeta(store.Meta{Format: 3}))
	must(t, b.Flush())
	wantErr(t, "batch write after flush", b.PutMeta(store.Meta{}), store.ErrClosed)
	b.Cancel() // a no-op after Flush
	open, err := s.NewBatch(ctx)
	must(t, err)

	must(t, s.Close())
	must(t, s.Close())
	wantErr(t, "view", s.View(ctx, func(store.Reader) error { return nil }), store.ErrClosed)
	wantErr(t, "update", s.Update(ctx, func(store.Tx) error { return nil }), store.ErrClosed)
	_, err = s.NewBatch(ctx)
	wantErr(t, "new batch", err, store.ErrClosed)
	wantErr(t, "sync", s.Sync(ctx), store.ErrClosed)
	_, err = s.Size(ctx)
	wantErr(t, "size", err, store.ErrClosed)
	wantErr(t, "open batch write", open.PutMeta(store.Meta{}), store.ErrClosed)
	wantErr(t, "open batch flush", open.Flush(), store.ErrClosed)
}

// TestTooBig: an Update over Badger's limit fails with store.ErrTooBig and
// writes nothing; a batch writes the same in parts.
func TestTooBig(t *testing.T) {
	s := openTest(t, Options{MemTableSize: 1 << 20})
	ctx := context.Background()
	if got, want := s.MaxTxnBytes(), s.db.MaxBatchSize()/2; got != want || got <= 0 {
		t.Fatalf("MaxTxnBytes %d, want %d", got, want)
	}
	n := int(s.MaxTxnBytes()/100) * 4 // 4 × MaxTxnBytes in 100-byte items
	item := func(i int) store.Item {
		it := msgItem(uint64(i), uint64(i), 1)
		it.Role = strings.Repeat("r", 60)
		return it
	}
	err := s.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			if err := tx.PutItem(gConv, item(i)); err != nil {
				return err
			}
		}
		return nil
	})
	wantErr(t, "big update", err, store.ErrTooBig)
	if got := rawKVs(t, s.db); len(got) != 0 {
		t.Errorf("a refused update left %d keys", len(got))
	}
	// The same with fn ignoring the errors: Badger's ErrTxnTooBig (small
	// values: Badger's count is reached first) fails the Update.
	err = s.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			_ = tx.PutItem(gConv, item(i))
		}
		return nil
	})
	wantErr(t, "big update, errors ignored", err, store.ErrTooBig)
	if got := rawKVs(t, s.db); len(got) != 0 {
		t.Errorf("a refused update left %d keys", len(got))
	}
	// Large values go to the value log and count as their pointers, as in
	// Badger: an Update of more than twice MaxTxnBytes of them commits (a
	// turn holding one large tool result is one Update).
	big := make([]byte, 64<<10) // incompressible
	x := uint32(1)
	for i := range big {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		big[i] = byte(x)
	}
	nbig := uint64(2*s.MaxTxnBytes()>>16) + 2
	err = s.Update(ctx, func(tx store.Tx) error {
		for seq := uint64(1); seq <= nbig; seq++ {
			m := testMessage(seq, "")
			m.Raw = big
			if err := tx.PutMessage(gConv, m); err != nil {
				return err
			}
		}
		return nil
	})
	must(t, err)
	view(t, s, func(r store.Reader) error {
		m, err := r.Message(gConv, nbig)
		if err != nil || !bytes.Equal(m.Raw, big) {
			t.Errorf("large value %d of an Update of %d: %d bytes, %v", nbig, nbig, len(m.Raw), err)
		}
		return nil
	})
	b, err := s.NewBatch(ctx)
	must(t, err)
	for i := range n {
		must(t, b.PutItem(gConv, item(i)))
	}
	must(t, b.Flush())
	view(t, s, func(r store.Reader) error {
		if got := len(collect(t, r.Items(gConv, 0, ^uint64(0), false))); got != n {
			t.Errorf("batch wrote %d items, want %d", got, n)
		}
		return nil
	})
	// The batch deletes them all in one DeleteConversationData.
	b, err = s.NewBatch(ctx)
	must(t, err)
	must(t, b.DeleteConversationData(gConv))
	must(t, b.Flush())
	if got := rawKVs(t, s.db); len(got) != 0 {
		t.Errorf("%d keys left after DeleteConversationData", len(got))
	}
}

// TestBatch: a batch's writes are visible after Flush, dropped by Cancel.
func TestBatch(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	b, err := s.NewBatch(ctx)
	must(t, err)
	must(t, b.PutConversation(gConv, store.Conversation{Agent: "a"}))
	view(t, s, func(r store.Reader) error {
		_, err := r.Conversation(gConv)
		wantErr(t, "before flush", err, store.ErrNotFound)
		return nil
	})
	must(t, b.Flush())
	view(t, s, func(r store.Reader) error {
		_, err := r.Conversation(gConv)
		return err
	})
	b, err = s.NewBatch(ctx)
	must(t, err)
	must(t, b.PutConversation(gConv2, store.Conversation{Agent: "b"}))
	b.Cancel()
	wantErr(t, "flush after cancel", b.Flush(), store.ErrClosed)
	view(t, s, func(r store.Reader) error {
		_, err := r.Conversation(gConv2)
		wantErr(t, "cancelled write", err, store.ErrNotFound)
		return nil
	})
	cctx, cancel := context.WithCancel(ctx)
	b, err = s.NewBatch(cctx)
	must(t, err)
	must(t, b.PutConversation(gConv2, store.Conversation{Agent: "b"}))
	cancel()
	wantErr(t, "flush with a done context", b.Flush(), context.Canceled)
	view(t, s, func(r store.Reader) error {
		_, err := r.Conversation(gConv2)
		wantErr(t, "write of a batch flushed with a done context", err, store.ErrNotFound)
		return nil
	})
}

// TestDeleteConversationData deletes one conversation's data, in an Update
// and in a batch: everything under convScoped goes; its record, names,
// checkpoints and links, and every other conversation's data, stay.
func TestDeleteConversationData(t *testing.T) {
	for _, inBatch := range []bool{false, true} {
		t.Run(fmt.Sprint("batch=", inBatch), func(t *testing.T) {
			s := openTest(t, Options{})
			ctx := context.Background()
			g := newCompatRecords()
			// The golden records (gConv's data, and the rest), and the same
			// data for a neighbour whose id follows gConv's.
			next := store.ConvID{1, 2, 3, 4, 5, 6, 7, 9}
			update(t, s, func(tx store.Tx) error {
				if err := g.write(tx, nil); err != nil {
					return err
				}
				must(t, tx.PutSubagentLink(gConv, gSub, "k"))
				must(t, tx.PutMessage(next, g.msgs[0]))
				must(t, tx.PutItem(next, g.itemMsg))
				must(t, tx.PutTurn(next, "k", g.turn))
				return tx.PutEntrySeq(next, gTag, store.EntriesCurrent, 1, 1)
			})
			before := rawKVs(t, s.db)
			del := func(w store.Writer) error { return w.DeleteConversationData(gConv) }
			if inBatch {
				b, err := s.NewBatch(ctx)
				must(t, err)
				must(t, del(b))
				must(t, b.Flush())
			} else {
				update(t, s, func(tx store.Tx) error { return del(tx) })
			}
			after := rawKVs(t, s.db)
			for k := range before {
				kb, _ := decodeHexKey(k)
				scoped := false
				for _, p := range convScoped {
					if bytes.HasPrefix(kb, convPrefix(p, gConv)) {
						scoped = true
					}
				}
				if _, kept := after[k]; kept == scoped {
					t.Errorf("key %s (%c): kept %v, conversation data %v", k, kb[0], kept, scoped)
				}
			}
		})
	}
}

func decodeHexKey(k string) ([]byte, error) {
	b := make([]byte, len(k)/2)
	_, err := fmt.Sscanf(k, "%x", &b)
	return b, err
}

// TestDeleteForkItems deletes one snapshot, not its neighbours'.
func TestDeleteForkItems(t *testing.T) {
	s := openTest(t, Options{})
	update(t, s, func(tx store.Tx) error {
		for pos := uint64(1); pos <= 300; pos++ {
			must(t, tx.PutForkItem(gSub, msgItem(pos, pos, 1)))
			must(t, tx.PutForkItem(gSub2, msgItem(pos, pos, 1)))
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error { return tx.DeleteForkItems(gSub) })
	view(t, s, func(r store.Reader) error {
		eqT(t, "snapshots", collect(t, r.ForkSnapshots()), []store.SubID{gSub2})
		eqT(t, "items left", len(collect(t, r.ForkItems(gSub2))), 300)
		return nil
	})
}

// TestValuesAreCopies: values read stay the caller's after the transaction
// and later writes; values written are not the caller's slices.
func TestValuesAreCopies(t *testing.T) {
	s := openTest(t, Options{})
	ref := []byte("reference")
	m := testMessage(1, "body")
	update(t, s, func(tx store.Tx) error {
		must(t, tx.PutLarge(gConv, 1, ref))
		must(t, tx.PutMessage(gConv, m))
		ref[0] = 'X' // after Put, before the commit
		m.Raw[0] = 'X'
		return nil
	})
	var large []byte
	var msgs []store.Message
	view(t, s, func(r store.Reader) error {
		var err error
		large, err = r.Large(gConv, 1)
		must(t, err)
		msgs = collect(t, r.Messages(gConv, 0, true))
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		must(t, tx.PutLarge(gConv, 1, []byte("changed!!")))
		return tx.PutMessage(gConv, testMessage(1, "other"))
	})
	if string(large) != "reference" {
		t.Errorf("large reference read %q, want %q", large, "reference")
	}
	if want := testMessage(1, "body").Raw; !bytes.Equal(msgs[0].Raw, want) {
		t.Errorf("message read %q, want %q", msgs[0].Raw, want)
	}
}

// TestRefusedWrites: what a record cannot hold is refused, not written.
func TestRefusedWrites(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	refused := map[string]func(tx store.Tx) error{
		"unknown entry map":    func(tx store.Tx) error { return tx.PutEntrySeq(gConv, gTag, 'q', 1, 1) },
		"host map as a file's": func(tx store.Tx) error { return tx.PutEntrySeq(gConv, hostTag, hostKind, 1, 1) },
		"encoded garbage": func(tx store.Tx) error {
			m := testMessage(1, "m")
			m.Encoded = []byte{0xff, 0, 1}
			return tx.PutMessage(gConv, m)
		},
		"encoded before a change": func(tx store.Tx) error {
			m := testMessage(1, "m")
			m.Encoded = s.EncodeMessage(m)
			m.Flags |= store.FlagHidden
			return tx.PutMessage(gConv, m)
		},
		"summary without id": func(tx store.Tx) error { return tx.PutSummary(gConv, dag.Summary{}) },
		"item of no kind":    func(tx store.Tx) error { return tx.PutItem(gConv, store.Item{}) },
		"negative item tokens": func(tx store.Tx) error {
			it := msgItem(1, 1, 1)
			it.Tokens = -1
			return tx.PutItem(gConv, it)
		},
		"negative message tokens": func(tx store.Tx) error {
			m := testMessage(1, "m")
			m.Tokens = -1
			return tx.PutMessage(gConv, m)
		},
	}
	for what, fn := range refused {
		if err := s.Update(ctx, fn); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	view(t, s, func(r store.Reader) error {
		for _, m := range []store.EntryMap{'q', hostKind} {
			for _, err := range r.Entries(gConv, gTag, m, 0) {
				if err == nil {
					t.Errorf("scan of entry map %q: no error", m)
				}
			}
			if _, err := r.EntrySeq(gConv, hostTag, m, 1); err == nil || errors.Is(err, store.ErrNotFound) {
				t.Errorf("EntrySeq of entry map %q: %v, want a refusal", m, err)
			}
		}
		return nil
	})
	if got := rawKVs(t, s.db); len(got) != 0 {
		t.Errorf("refused writes left %d keys", len(got))
	}
}

// TestEncodedMessage: PutMessage with Encoded made by EncodeMessage stores
// the same bytes as PutMessage without it, for every kind of record
// (plain, compressed, incompressible, empty body), in an Update and in a
// batch.
func TestEncodedMessage(t *testing.T) {
	msgs := newCompatRecords().msgs
	empty := testMessage(4, "")
	empty.Raw = []byte{}
	msgs = append(msgs, empty, testMessage(5, strings.Repeat("compressible ", 1000)))
	write := func(t *testing.T, s *Store, encoded, batch bool) map[string]string {
		put := func(w store.Writer) {
			for _, m := range msgs {
				if encoded {
					m.Encoded = s.EncodeMessage(m)
				}
				must(t, w.PutMessage(gConv, m))
			}
		}
		if batch {
			b, err := s.NewBatch(context.Background())
			must(t, err)
			put(b)
			must(t, b.Flush())
		} else {
			update(t, s, func(tx store.Tx) error { put(tx); return nil })
		}
		return rawKVs(t, s.db)
	}
	for _, batch := range []bool{false, true} {
		plain := write(t, openTest(t, Options{}), false, batch)
		enc := write(t, openTest(t, Options{}), true, batch)
		if len(plain) != len(msgs) {
			t.Fatalf("%d keys written, want %d", len(plain), len(msgs))
		}
		if !reflect.DeepEqual(plain, enc) {
			t.Errorf("batch=%v: PutMessage with Encoded wrote\n%v\nwithout\n%v", batch, enc, plain)
		}
		zstd := 0
		for _, v := range plain {
			if strings.HasPrefix(v, fmt.Sprintf("%02x", recordZstd)) {
				zstd++
			}
		}
		if zstd < 2 {
			t.Errorf("%d compressed records: the test does not cover compression", zstd)
		}
	}
}

// TestDiskFull: with less free space than the reserve, Update and NewBatch
// refuse (store.ErrDiskFull) and View reads.
func TestDiskFull(t *testing.T) {
	var full atomic.Bool
	s := openTest(t, Options{FreeSpace: func(string) (uint64, error) {
		if full.Load() {
			return 1 << 20, nil
		}
		return 1 << 40, nil
	}})
	update(t, s, func(tx store.Tx) error { return tx.PutMeta(store.Meta{Format: 2}) })
	full.Store(true)
	s.space.look.Expire() // look again now
	err := s.Update(context.Background(), func(tx store.Tx) error { return tx.PutMeta(store.Meta{}) })
	wantErr(t, "update", err, store.ErrDiskFull)
	_, err = s.NewBatch(context.Background())
	wantErr(t, "new batch", err, store.ErrDiskFull)
	view(t, s, func(r store.Reader) error {
		m, err := r.Meta()
		if err != nil || m.Format != 2 {
			t.Errorf("read on a full disk: %+v, %v", m, err)
		}
		return nil
	})
	full.Store(false)
	s.space.look.Expire()
	update(t, s, func(tx store.Tx) error { return tx.PutMeta(store.Meta{Format: 3}) })
}

// TestSyncSize: Sync succeeds and Size counts what was written.
func TestSyncSize(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	update(t, s, func(tx store.Tx) error {
		for seq := uint64(1); seq <= 50; seq++ {
			must(t, tx.PutMessage(gConv, testMessage(seq, strings.Repeat("y", 4000))))
		}
		return nil
	})
	must(t, s.Sync(ctx))
	n, err := s.Size(ctx)
	must(t, err)
	if n <= 0 {
		t.Errorf("Size %d after writing 200 KB", n)
	}
}

// TestConcurrent runs Updates and Views at once (go test -race).
func TestConcurrent(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c := store.ConvID{byte(w)}
			for seq := uint64(1); seq <= 50; seq++ {
				err := s.Update(ctx, func(tx store.Tx) error {
					if err := tx.PutMessage(c, testMessage(seq, "m")); err != nil {
						return err
					}
					return tx.PutItem(c, msgItem(seq, seq, 1))
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			c := store.ConvID{byte(w)}
			for range 50 {
				err := s.View(ctx, func(r store.Reader) error {
					for _, err := range r.Items(c, 0, ^uint64(0), true) {
						if err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestCloseWaits: Close waits for a View in progress.
func TestCloseWaits(t *testing.T) {
	s, err := Open(context.Background(), Options{Dir: t.TempDir()})
	must(t, err)
	inView := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.View(context.Background(), func(r store.Reader) error {
			close(inView)
			<-release
			_, err := r.Meta()
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		})
	}()
	<-inView
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) during a View", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	must(t, <-done)
	must(t, <-closed)
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(context.Background(), Options{}); err == nil {
		t.Error("Open without a directory: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Open(ctx, Options{Dir: t.TempDir()})
	wantErr(t, "open with a done context", err, context.Canceled)
	_, err = Open(context.Background(), Options{Dir: t.TempDir() + "/absent", ReadOnly: true})
	if err == nil {
		t.Error("read-only open of an absent store: no error")
	}
}
