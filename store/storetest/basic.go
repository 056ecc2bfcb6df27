package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

func testEmpty(t *testing.T, s store.Store) {
	if n := s.MaxTxnBytes(); n <= 0 {
		t.Errorf("MaxTxnBytes() = %d, want > 0", n)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Errorf("Sync: %v", err)
	}
	if n, err := s.Size(context.Background()); err != nil || n < 0 {
		t.Errorf("Size() = %d, %v", n, err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Size(done); !errors.Is(err, context.Canceled) {
		t.Errorf("Size with a cancelled context = %v, want an error wrapping context.Canceled", err)
	}
	update(t, s, func(store.Tx) error { return nil })
	w := newWorld(0, convID(1))
	view(t, s, func(r store.Reader) error {
		d := w.convs[0]
		var errs []error
		errs = append(errs, d.checkScoped(r, false), d.checkUnscoped(r, false))
		m, err := r.Meta()
		errs = append(errs, expect("Meta()", m, err, nil, false))
		for sub := range w.g.subs {
			got, err := r.Subagent(sub)
			errs = append(errs, expect(fmt.Sprintf("Subagent(%x)", sub), got, err, nil, false))
			forks, err := all(r.ForkItems(sub))
			errs = append(errs, expectScan(fmt.Sprintf("ForkItems(%x)", sub), forks, err, nil))
		}
		for k := range w.g.children {
			got, err := r.SubagentByChild(k[0], k[1])
			errs = append(errs, expect("SubagentByChild", got, err, nil, false))
		}
		convs, err := all(r.Conversations())
		errs = append(errs, expectScan("Conversations()", convs, err, nil))
		names, err := all(r.Names())
		errs = append(errs, expectScan("Names()", names, err, nil))
		cps, err := all(r.Checkpoints())
		errs = append(errs, expectScan("Checkpoints()", cps, err, nil))
		subs, err := all(r.Subagents())
		errs = append(errs, expectScan("Subagents()", subs, err, nil))
		snaps, err := all(r.ForkSnapshots())
		errs = append(errs, expectScan("ForkSnapshots()", snaps, err, nil))
		if err := errors.Join(errs...); err != nil {
			t.Error(err)
		}
		return nil
	})
}

// family is one record family for the round trip: key selects one of keys
// records (neighbours of each other: the same conversation and the next
// sequence number, another conversation with the same one, a prefix of a
// string key), ver one of its values.
type family struct {
	name string
	keys int
	put  func(w store.Writer, key, ver int) error
	get  func(r store.Reader, key int) (any, error)
	want func(key, ver int) any
	// del deletes a record (nil: the family has no delete).
	del func(w store.Writer, key int) error
}

var (
	cA, cA2, cB = convID(1), convID(1, 0), convID(2)
	convKeys    = []store.ConvID{cA, cA2, cB}
	seqKeys     = []struct {
		c   store.ConvID
		seq uint64
	}{{cA, 256}, {cA, 255}, {cB, 256}, {cA2, 0}}
	subKeys = []store.SubID{subID(1), subID(1, 0), subID(2)}
	tagA    = fileTag(1)
	tagB    = fileTag(1, 0)
)

func families() []family {
	hash := func(key int) store.Hash { return hashOf([]byte{byte(key)}) }
	str := []string{"sum", "sum0", "sum", "su"}
	strConv := []store.ConvID{cA, cA, cB, cA}
	agents := []struct{ agent, path string }{{"main", "/a"}, {"main", "/a/b"}, {"main2", "/a"}, {"mai", "n/a"}}
	names := []store.Name{{Agent: "main", Kind: store.NameSessionKey, Value: "x"}, {Agent: "main", Kind: store.NameSessionID, Value: "x"},
		{Agent: "main2", Kind: store.NameSessionKey, Value: "x"}, {Agent: "main", Kind: store.NameSessionKey, Value: "x:"}}
	entries := []struct {
		c     store.ConvID
		tag   store.FileTag
		m     store.EntryMap
		index uint64
	}{{cA, tagA, store.EntriesCurrent, 256}, {cA, tagA, store.EntriesPrevious, 256}, {cA, tagB, store.EntriesCurrent, 256},
		{cB, tagA, store.EntriesCurrent, 256}, {cA, tagA, store.EntriesCurrent, 255}}
	return []family{
		{name: "Meta", keys: 1,
			put: func(w store.Writer, _, ver int) error {
				return w.PutMeta(store.Meta{Format: ver, Engine: "e", Tokenizer: "t"})
			},
			get:  func(r store.Reader, _ int) (any, error) { return r.Meta() },
			want: func(_, ver int) any { return store.Meta{Format: ver, Engine: "e", Tokenizer: "t"} }},
		{name: "Conversation", keys: 3,
			put: func(w store.Writer, key, ver int) error {
				return w.PutConversation(convKeys[key], newConvData(convKeys[key], "main", ver).conv)
			},
			get:  func(r store.Reader, key int) (any, error) { return r.Conversation(convKeys[key]) },
			want: func(key, ver int) any { return newConvData(convKeys[key], "main", ver).conv },
			del:  func(w store.Writer, key int) error { return w.DeleteConversation(convKeys[key]) }},
		{name: "Name", keys: 4,
			put:  func(w store.Writer, key, ver int) error { return w.PutName(names[key], convID(byte(ver))) },
			get:  func(r store.Reader, key int) (any, error) { return r.ConvByName(names[key]) },
			want: func(_, ver int) any { return convID(byte(ver)) },
			del:  func(w store.Writer, key int) error { return w.DeleteName(names[key]) }},
		{name: "Message", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutMessage(seqKeys[key].c, message(seqKeys[key].c, seqKeys[key].seq, ver))
			},
			get:  func(r store.Reader, key int) (any, error) { return r.Message(seqKeys[key].c, seqKeys[key].seq) },
			want: func(key, ver int) any { return message(seqKeys[key].c, seqKeys[key].seq, ver) },
			del:  func(w store.Writer, key int) error { return w.DeleteMessage(seqKeys[key].c, seqKeys[key].seq) }},
		{name: "Hash", keys: 4,
			put:  func(w store.Writer, key, ver int) error { return w.PutHash(seqKeys[key].c, hash(key), uint64(ver)<<32) },
			get:  func(r store.Reader, key int) (any, error) { return r.SeqByHash(seqKeys[key].c, hash(key)) },
			want: func(_, ver int) any { return uint64(ver) << 32 },
			del:  func(w store.Writer, key int) error { return w.DeleteHash(seqKeys[key].c, hash(key)) }},
		{name: "Large", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutLarge(seqKeys[key].c, seqKeys[key].seq, rawFor(seqKeys[key].c, uint64(ver), key))
			},
			get:  func(r store.Reader, key int) (any, error) { return r.Large(seqKeys[key].c, seqKeys[key].seq) },
			want: func(key, ver int) any { return rawFor(seqKeys[key].c, uint64(ver), key) },
			del:  func(w store.Writer, key int) error { return w.DeleteLarge(seqKeys[key].c, seqKeys[key].seq) }},
		{name: "Item", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutItem(seqKeys[key].c, itemVersion(seqKeys[key].seq, ver))
			},
			get:  func(r store.Reader, key int) (any, error) { return r.Item(seqKeys[key].c, seqKeys[key].seq) },
			want: func(key, ver int) any { return itemVersion(seqKeys[key].seq, ver) },
			del:  func(w store.Writer, key int) error { return w.DeleteItem(seqKeys[key].c, seqKeys[key].seq) }},
		{name: "Summary", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutSummary(strConv[key], summary(str[key], ver, dag.MessageRef(uint64(ver))))
			},
			get:  func(r store.Reader, key int) (any, error) { return r.Summary(strConv[key], str[key]) },
			want: func(key, ver int) any { return summary(str[key], ver, dag.MessageRef(uint64(ver))) },
			del:  func(w store.Writer, key int) error { return w.DeleteSummary(strConv[key], str[key]) }},
		{name: "EntrySeq", keys: 5,
			put: func(w store.Writer, key, ver int) error {
				e := entries[key]
				return w.PutEntrySeq(e.c, e.tag, e.m, e.index, uint64(ver)<<40)
			},
			get: func(r store.Reader, key int) (any, error) {
				e := entries[key]
				return r.EntrySeq(e.c, e.tag, e.m, e.index)
			},
			want: func(_, ver int) any { return uint64(ver) << 40 },
			del: func(w store.Writer, key int) error {
				e := entries[key]
				return w.DeleteEntrySeq(e.c, e.tag, e.m, e.index)
			}},
		{name: "EntryIndex", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutEntryIndex(strConv[key], tagA, str[key], uint64(ver)+math.MaxUint32)
			},
			get:  func(r store.Reader, key int) (any, error) { return r.EntryIndex(strConv[key], tagA, str[key]) },
			want: func(_, ver int) any { return uint64(ver) + math.MaxUint32 },
			del:  func(w store.Writer, key int) error { return w.DeleteEntryIndex(strConv[key], tagA, str[key]) }},
		{name: "ReconcileFrom", keys: 3,
			put: func(w store.Writer, key, ver int) error {
				return w.PutReconcileFrom(entries[key+1].c, entries[key+1].tag, uint64(ver))
			},
			get: func(r store.Reader, key int) (any, error) {
				return r.ReconcileFrom(entries[key+1].c, entries[key+1].tag)
			},
			want: func(_, ver int) any { return uint64(ver) },
			del: func(w store.Writer, key int) error {
				return w.DeleteReconcileFrom(entries[key+1].c, entries[key+1].tag)
			}},
		{name: "HostEntry", keys: 3,
			put: func(w store.Writer, key, ver int) error {
				e := hostEntry(convKeys[key], hostIndex[key], ver)
				return w.PutHostEntry(convKeys[key], e.Index, e.HostEntry)
			},
			get:  func(r store.Reader, key int) (any, error) { return r.HostEntry(convKeys[key], hostIndex[key]) },
			want: func(key, ver int) any { return hostEntry(convKeys[key], hostIndex[key], ver).HostEntry },
			del:  func(w store.Writer, key int) error { return w.DeleteHostEntries(convKeys[key]) }},
		{name: "HostEntries", keys: 3,
			put: func(w store.Writer, key, ver int) error {
				for _, index := range []uint64{hostIndex[key], hostIndex[key] + 1} {
					e := hostEntry(convKeys[key], index, ver)
					if err := w.PutHostEntry(convKeys[key], e.Index, e.HostEntry); err != nil {
						return err
					}
				}
				return nil
			},
			get: func(r store.Reader, key int) (any, error) {
				es, err := all(r.HostEntries(convKeys[key], hostIndex[key]))
				if err == nil && len(es) == 0 {
					err = store.ErrNotFound
				}
				return es, err
			},
			want: func(key, ver int) any {
				return []store.HostEntryRecord{hostEntry(convKeys[key], hostIndex[key], ver), hostEntry(convKeys[key], hostIndex[key]+1, ver)}
			},
			del: func(w store.Writer, key int) error { return w.DeleteHostEntries(convKeys[key]) }},
		{name: "Order", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutOrder(seqKeys[key].c, seqKeys[key].seq, uint64(ver)*65536)
			},
			get:  func(r store.Reader, key int) (any, error) { return r.Order(seqKeys[key].c, seqKeys[key].seq) },
			want: func(_, ver int) any { return uint64(ver) * 65536 },
			del:  func(w store.Writer, key int) error { return w.DeleteOrder(seqKeys[key].c, seqKeys[key].seq) }},
		{name: "FileCheckpoint", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutFileCheckpoint(agents[key].agent, agents[key].path, newConvData(cA, "main", ver).fileCP)
			},
			get: func(r store.Reader, key int) (any, error) {
				return r.FileCheckpoint(agents[key].agent, agents[key].path)
			},
			want: func(_, ver int) any { return newConvData(cA, "main", ver).fileCP },
			del: func(w store.Writer, key int) error {
				return w.DeleteFileCheckpoint(agents[key].agent, agents[key].path)
			}},
		{name: "HostCheckpoint", keys: 3,
			put: func(w store.Writer, key, ver int) error {
				return w.PutHostCheckpoint(agents[key].agent, convKeys[key], newConvData(convID(byte(ver)), "main", ver).hostCP)
			},
			get:  func(r store.Reader, key int) (any, error) { return r.HostCheckpoint(agents[key].agent, convKeys[key]) },
			want: func(_, ver int) any { return newConvData(convID(byte(ver)), "main", ver).hostCP },
			del:  func(w store.Writer, key int) error { return w.DeleteHostCheckpoint(agents[key].agent, convKeys[key]) }},
		{name: "Turn", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutTurn(strConv[key], str[key], newConvData(cA, "main", 0).turns["adv-"+fmt.Sprint(ver)])
			},
			get:  func(r store.Reader, key int) (any, error) { return r.Turn(strConv[key], str[key]) },
			want: func(_, ver int) any { return newConvData(cA, "main", 0).turns["adv-"+fmt.Sprint(ver)] },
			del:  func(w store.Writer, key int) error { return w.DeleteTurn(strConv[key], str[key]) }},
		{name: "Subagent", keys: 3,
			put: func(w store.Writer, key, ver int) error {
				return w.PutSubagent(subKeys[key], newGlobals(ver).subs[subID(2)])
			},
			get:  func(r store.Reader, key int) (any, error) { return r.Subagent(subKeys[key]) },
			want: func(_, ver int) any { return newGlobals(ver).subs[subID(2)] },
			del:  func(w store.Writer, key int) error { return w.DeleteSubagent(subKeys[key]) }},
		{name: "SubagentByChild", keys: 4,
			put: func(w store.Writer, key, ver int) error {
				return w.PutSubagentByChild(agents[key].agent, agents[key].path, subID(byte(ver)))
			},
			get: func(r store.Reader, key int) (any, error) {
				return r.SubagentByChild(agents[key].agent, agents[key].path)
			},
			want: func(_, ver int) any { return subID(byte(ver)) },
			del: func(w store.Writer, key int) error {
				return w.DeleteSubagentByChild(agents[key].agent, agents[key].path)
			}},
		{name: "ForkItem", keys: 3,
			put: func(w store.Writer, key, ver int) error { return w.PutForkItem(subKeys[key], itemVersion(256, ver)) },
			get: func(r store.Reader, key int) (any, error) {
				its, err := all(r.ForkItems(subKeys[key]))
				if err == nil && len(its) == 0 {
					err = store.ErrNotFound
				}
				return its, err
			},
			want: func(_, ver int) any { return []store.Item{itemVersion(256, ver)} },
			del:  func(w store.Writer, key int) error { return w.DeleteForkItems(subKeys[key]) }},
		{name: "SubagentLink", keys: 3,
			put: func(w store.Writer, key, ver int) error {
				return w.PutSubagentLink(convKeys[key], subKeys[key], childKey(key, ver))
			},
			get: func(r store.Reader, key int) (any, error) {
				links, err := all(r.SubagentLinks(convKeys[key]))
				if err == nil && len(links) == 0 {
					err = store.ErrNotFound
				}
				return links, err
			},
			want: func(key, ver int) any {
				return []store.SubagentLinkRecord{{ID: subKeys[key], ChildKey: childKey(key, ver)}}
			},
			del: func(w store.Writer, key int) error { return w.DeleteSubagentLink(convKeys[key], subKeys[key]) }},
	}
}

// hostIndex are the entry indexes of the HostEntry families, one per
// conversation of convKeys.
var hostIndex = []uint64{256, 255, 256}

// childKey is a subagent link's session key (empty for one version).
func childKey(key, ver int) string {
	if ver == 2 {
		return ""
	}
	return fmt.Sprintf("agent:main:subagent:%d:%d", key, ver)
}

// itemVersion is a context item whose every field depends on ver.
func itemVersion(pos uint64, ver int) store.Item {
	if ver%2 == 0 {
		return summaryItem(pos, fmt.Sprintf("sum_%d", ver), ver)
	}
	return messageItem(pos, uint64(ver)<<33, ver)
}

// testRoundTrip writes, reads, overwrites and deletes a record of every
// family, checking its neighbours stay as they are.
func testRoundTrip(t *testing.T, open OpenFunc) {
	for _, f := range families() {
		t.Run(f.name, func(t *testing.T) {
			s := open(t)
			checkAll := func(r store.Reader, when string, want func(key int) (any, bool)) error {
				var errs []error
				for key := range f.keys {
					got, err := f.get(r, key)
					w, ok := want(key)
					if err := expect(fmt.Sprintf("%s: %s key %d", when, f.name, key), got, err, w, ok); err != nil {
						errs = append(errs, err)
					}
				}
				return errors.Join(errs...)
			}
			none := func(int) (any, bool) { return nil, false }
			v1 := func(key int) (any, bool) { return f.want(key, 1), true }
			// HasData: any record but the format record (which every
			// family's store but Meta's holds first, as the engine's does).
			hasData := func(r store.Reader, when string, want bool) error {
				got, err := r.HasData()
				if err != nil || got != want {
					return fmt.Errorf("%s: %s: HasData() = %v, %v, want %v", when, f.name, got, err, want)
				}
				return nil
			}
			if f.name != "Meta" {
				update(t, s, func(tx store.Tx) error { return tx.PutMeta(store.Meta{Format: 1, Engine: "e"}) })
			}
			view(t, s, func(r store.Reader) error {
				return errors.Join(checkAll(r, "empty", none), hasData(r, "empty", false))
			})
			update(t, s, func(tx store.Tx) error {
				for key := range f.keys {
					if err := f.put(tx, key, 1); err != nil {
						return err
					}
				}
				return errors.Join(checkAll(tx, "in the writing transaction", v1),
					hasData(tx, "in the writing transaction", f.name != "Meta"))
			})
			view(t, s, func(r store.Reader) error {
				return errors.Join(checkAll(r, "written", v1), hasData(r, "written", f.name != "Meta"))
			})
			v2 := func(key int) (any, bool) {
				if key == 0 {
					return f.want(key, 2), true
				}
				return v1(key)
			}
			update(t, s, func(tx store.Tx) error {
				if err := f.put(tx, 0, 2); err != nil {
					return err
				}
				return checkAll(tx, "overwritten, in the transaction", v2)
			})
			view(t, s, func(r store.Reader) error { return checkAll(r, "overwritten", v2) })
			if f.del == nil {
				return
			}
			gone := func(key int) (any, bool) {
				if key == 0 {
					return nil, false
				}
				return v1(key)
			}
			update(t, s, func(tx store.Tx) error {
				if err := f.del(tx, 0); err != nil {
					return err
				}
				return checkAll(tx, "deleted, in the transaction", gone)
			})
			view(t, s, func(r store.Reader) error { return checkAll(r, "deleted", gone) })
			update(t, s, func(tx store.Tx) error {
				if err := f.del(tx, 0); err != nil {
					return fmt.Errorf("deleting a missing record: %w", err)
				}
				return nil
			})
			update(t, s, func(tx store.Tx) error { return f.put(tx, 0, 3) })
			view(t, s, func(r store.Reader) error {
				return checkAll(r, "written again after a delete", func(key int) (any, bool) {
					if key == 0 {
						return f.want(key, 3), true
					}
					return v1(key)
				})
			})
		})
	}
}

// testOrder writes records in reverse and random order and checks every
// scan yields them in numeric (or byte) key order, each within its
// conversation, file, map and subagent.
func testOrder(t *testing.T, s store.Store) {
	w := newWorld(0, convID(1), convID(1, 0), convID(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), convID(0), convID(0, 0, 0, 0, 0, 0, 1, 0xff), convID(2))
	for i := len(w.convs) - 1; i >= 0; i-- {
		d := w.convs[i]
		update(t, s, func(tx store.Tx) error {
			var errs []error
			for j := len(d.msgs) - 1; j >= 0; j-- {
				errs = append(errs, tx.PutMessage(d.id, d.msgs[j]))
			}
			for j := len(d.items) - 1; j >= 0; j-- {
				errs = append(errs, tx.PutItem(d.id, d.items[j]))
			}
			for j := len(d.sums) - 1; j >= 0; j-- {
				errs = append(errs, tx.PutSummary(d.id, d.sums[j]))
			}
			for j := len(d.orders) - 1; j >= 0; j-- {
				errs = append(errs, tx.PutOrder(d.id, d.orders[j].Key, d.orders[j].Value))
			}
			return errors.Join(errs...)
		})
	}
	for s2, its := range w.g.forks {
		update(t, s, func(tx store.Tx) error {
			for j := len(its) - 1; j >= 0; j-- {
				if err := tx.PutForkItem(s2, its[j]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// Then everything, each record in its own transaction for some.
	update(t, s, func(tx store.Tx) error { return w.g.write(tx) })
	for _, d := range w.convs {
		update(t, s, func(tx store.Tx) error { return d.write(tx) })
	}
	view(t, s, func(r store.Reader) error {
		if err := w.check(r); err != nil {
			t.Error(err)
		}
		return nil
	})
}

// testBounds checks the from (and to) bounds of the scans that take them.
func testBounds(t *testing.T, s store.Store) {
	c := convID(0, 0, 0, 0, 0, 0, 1, 0)
	neighbours := []store.ConvID{convID(0, 0, 0, 0, 0, 0, 0, 0xff), convID(0, 0, 0, 0, 0, 0, 1, 1), convID(1, 0)}
	var items []store.Item
	for _, seq := range seqSet {
		items = append(items, messageItem(seq, seq, 0))
	}
	update(t, s, func(tx store.Tx) error {
		var errs []error
		for _, cc := range append([]store.ConvID{c}, neighbours...) {
			for _, seq := range seqSet {
				errs = append(errs, tx.PutMessage(cc, message(cc, seq, 0)), tx.PutItem(cc, messageItem(seq, seq, 0)),
					tx.PutEntrySeq(cc, tagA, store.EntriesCurrent, seq, seq), tx.PutHostEntry(cc, seq, hostEntry(cc, seq, 0).HostEntry))
				for _, tag := range []store.FileTag{fileTag(0), fileTag(1, 0), fileTag(2)} {
					errs = append(errs, tx.PutEntrySeq(cc, tag, store.EntriesCurrent, seq, 1))
				}
				errs = append(errs, tx.PutEntrySeq(cc, tagA, store.EntriesPrevious, seq, 2))
			}
		}
		return errors.Join(errs...)
	})
	bounds := append(slices.Clone(seqSet), 3, 300, 1<<32+1, 1<<63+1)
	slices.Sort(bounds)
	view(t, s, func(r store.Reader) error {
		var errs []error
		for _, from := range bounds {
			var wantMsgs []store.Message
			var wantEntries []store.EntryPair
			var wantHosts []store.HostEntryRecord
			for _, seq := range seqSet {
				if seq >= from {
					wantMsgs = append(wantMsgs, message(c, seq, 0))
					wantEntries = append(wantEntries, store.EntryPair{Index: seq, Seq: seq})
					wantHosts = append(wantHosts, hostEntry(c, seq, 0))
				}
			}
			got, err := all(r.Messages(c, from, true))
			errs = append(errs, expectScan(fmt.Sprintf("Messages(%s, from %d)", c, from), got, err, wantMsgs))
			entries, err := all(r.Entries(c, tagA, store.EntriesCurrent, from))
			errs = append(errs, expectScan(fmt.Sprintf("Entries(%s, %x, x, from %d)", c, tagA, from), entries, err, wantEntries))
			hosts, err := all(r.HostEntries(c, from))
			errs = append(errs, expectScan(fmt.Sprintf("HostEntries(%s, from %d)", c, from), hosts, err, wantHosts))
			for _, to := range bounds {
				var want []store.Item
				for _, it := range items {
					if it.Pos >= from && it.Pos <= to {
						want = append(want, it)
					}
				}
				got, err := all(r.Items(c, from, to, false))
				errs = append(errs, expectScan(fmt.Sprintf("Items(%s, %d, %d, forward)", c, from, to), got, err, want))
				slices.Reverse(want)
				got, err = all(r.Items(c, from, to, true))
				errs = append(errs, expectScan(fmt.Sprintf("Items(%s, %d, %d, reverse)", c, from, to), got, err, want))
			}
		}
		if err := errors.Join(errs...); err != nil {
			t.Error(err)
		}
		return nil
	})
}
