package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// appendMessage stores raw as the engine ingests a message: unless its key
// is indexed already, the message at NextSeq, its key, its context item at
// NextPos and the conversation record with its counters bumped, in tx.
func appendMessage(tx store.Tx, c store.ConvID, raw []byte) (seq uint64, stored bool, err error) {
	conv, err := tx.Conversation(c)
	switch {
	case errors.Is(err, store.ErrNotFound):
		conv = store.Conversation{Agent: "main", SessionIDs: []string{"sid-" + c.String()}}
	case err != nil:
		return 0, false, err
	}
	h := hashOf(raw)
	if seq, err := tx.SeqByHash(c, h); err == nil {
		return seq, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return 0, false, err
	}
	m := store.Message{Seq: conv.NextSeq, Tokens: len(raw) / 4, Timestamp: 1_700_000_000_000 + int64(conv.NextSeq),
		Role: "user", Hash: h, Raw: raw}
	it := store.Item{Item: dag.Item{Pos: conv.NextPos, Ref: dag.MessageRef(m.Seq), Tokens: m.Tokens, Depth: -1,
		Timestamp: m.Timestamp, Role: m.Role}}
	conv.NextSeq++
	conv.NextPos += 65536
	conv.Messages++
	conv.Bytes += int64(len(raw))
	conv.Tokens += int64(m.Tokens)
	err = errors.Join(tx.PutMessage(c, m), tx.PutHash(c, h, m.Seq), tx.PutItem(c, it), tx.PutConversation(c, conv))
	return m.Seq, true, err
}

// convSnapshot is what a conversation holds: its record, messages and
// items (for before/after comparisons).
type convSnapshot struct {
	conv    store.Conversation
	convErr error
	msgs    []store.Message
	items   []store.Item
	sums    []dag.Summary
}

func snapshotOf(t testing.TB, s store.Store, c store.ConvID) convSnapshot {
	t.Helper()
	var cs convSnapshot
	view(t, s, func(r store.Reader) error {
		var err error
		cs.conv, cs.convErr = r.Conversation(c)
		if cs.msgs, err = all(r.Messages(c, 0, true)); err != nil {
			return err
		}
		if cs.items, err = all(r.Items(c, 0, math.MaxUint64, false)); err != nil {
			return err
		}
		cs.sums, err = all(r.Summaries(c))
		return err
	})
	return cs
}

func sameSnapshot(a, b convSnapshot) bool {
	return equal(a.conv, b.conv) && (a.convErr == nil) == (b.convErr == nil) && equal(a.msgs, b.msgs) &&
		equal(a.items, b.items) && equal(a.sums, b.sums)
}

func testAtomic(t *testing.T, open OpenFunc) {
	seed := func(t *testing.T) (store.Store, convSnapshot) {
		s := open(t)
		update(t, s, func(tx store.Tx) error {
			for i := range 10 {
				if _, _, err := appendMessage(tx, cA, rawFor(cA, uint64(i), 0)); err != nil {
					return err
				}
			}
			return nil
		})
		return s, snapshotOf(t, s, cA)
	}
	// unchanged checks that a failed Update left the store as it was.
	unchanged := func(t *testing.T, s store.Store, before convSnapshot, newRaw ...[]byte) {
		t.Helper()
		if after := snapshotOf(t, s, cA); !sameSnapshot(before, after) {
			t.Fatalf("a failed Update changed the store:\nbefore %+v\n after %+v", before, after)
		}
		view(t, s, func(r store.Reader) error {
			for _, raw := range newRaw {
				if seq, err := r.SeqByHash(cA, hashOf(raw)); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("a failed Update left a message key: seq %d, %v", seq, err)
				}
			}
			if _, err := r.Turn(cA, "adv-1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a failed Update left its turn: %v", err)
			}
			return nil
		})
	}
	t.Run("Ingest", func(t *testing.T) {
		s, before := seed(t)
		raw := []byte(`{"role":"user","content":"never stored"}`)
		err := s.Update(t.Context(), func(tx store.Tx) error {
			if _, _, err := appendMessage(tx, cA, raw); err != nil {
				return err
			}
			if err := tx.DeleteMessage(cA, 3); err != nil {
				return err
			}
			return fmt.Errorf("after writing: %w", errBoom)
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("Update = %v, want fn's error", err)
		}
		unchanged(t, s, before, raw)
	})
	turn := func(tx store.Tx, raws [][]byte) error {
		var seqs []uint64
		for _, raw := range raws {
			seq, _, err := appendMessage(tx, cA, raw)
			if err != nil {
				return err
			}
			seqs = append(seqs, seq)
		}
		return tx.PutTurn(cA, "adv-1", store.Turn{LogicalTurnID: "t1", Seqs: seqs, Stored: len(seqs), CommittedAt: 1})
	}
	t.Run("CommitTurn", func(t *testing.T) {
		s, before := seed(t)
		raws := [][]byte{[]byte(`{"role":"user","content":"q"}`), []byte(`{"role":"assistant","content":"a"}`),
			[]byte(`{"role":"toolResult","content":"r"}`)}
		err := s.Update(t.Context(), func(tx store.Tx) error {
			if err := turn(tx, raws); err != nil {
				return err
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("Update = %v, want fn's error", err)
		}
		unchanged(t, s, before, raws...)
		update(t, s, func(tx store.Tx) error { return turn(tx, raws) })
		after := snapshotOf(t, s, cA)
		if after.conv.Messages != before.conv.Messages+3 || len(after.msgs) != len(before.msgs)+3 {
			t.Fatalf("the committed turn: %d messages (record %d), want %d", len(after.msgs), after.conv.Messages, len(before.msgs)+3)
		}
		view(t, s, func(r store.Reader) error {
			tn, err := r.Turn(cA, "adv-1")
			return expect("Turn", tn, err, store.Turn{LogicalTurnID: "t1", Seqs: []uint64{10, 11, 12}, Stored: 3, CommittedAt: 1}, true)
		})
	})
	replace := func(tx store.Tx, its []store.Item) error {
		var srcs []dag.Ref
		for _, it := range its[2:6] {
			srcs = append(srcs, it.Ref)
			if err := tx.DeleteItem(cA, it.Pos); err != nil {
				return err
			}
		}
		conv, err := tx.Conversation(cA)
		if err != nil {
			return err
		}
		conv.Summaries++
		return errors.Join(tx.PutSummary(cA, summary("sum_r", 0, srcs...)), tx.PutItem(cA, summaryItem(its[2].Pos, "sum_r", 0)),
			tx.PutConversation(cA, conv))
	}
	t.Run("SummaryReplace", func(t *testing.T) {
		s, before := seed(t)
		err := s.Update(t.Context(), func(tx store.Tx) error {
			if err := replace(tx, before.items); err != nil {
				return err
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("Update = %v, want fn's error", err)
		}
		unchanged(t, s, before)
		update(t, s, func(tx store.Tx) error { return replace(tx, before.items) })
		after := snapshotOf(t, s, cA)
		want := append(append(append([]store.Item(nil), before.items[:2]...), summaryItem(before.items[2].Pos, "sum_r", 0)), before.items[6:]...)
		if err := expectScan("items after the replacement", after.items, nil, want); err != nil {
			t.Fatal(err)
		}
		if len(after.sums) != 1 || after.conv.Summaries != 1 {
			t.Fatalf("after the replacement: %d summaries, record says %d; want 1", len(after.sums), after.conv.Summaries)
		}
	})
	t.Run("CancelledBefore", func(t *testing.T) {
		s, before := seed(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		raw := []byte(`{"role":"user","content":"cancelled"}`)
		err := s.Update(ctx, func(tx store.Tx) error {
			_, _, err := appendMessage(tx, cA, raw)
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Update with a cancelled context = %v, want an error wrapping context.Canceled", err)
		}
		unchanged(t, s, before, raw)
		if err := s.View(ctx, func(store.Reader) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("View with a cancelled context = %v, want an error wrapping context.Canceled", err)
		}
	})
	t.Run("CancelledDuring", func(t *testing.T) {
		s, before := seed(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		raw := []byte(`{"role":"user","content":"cancelled"}`)
		err := s.Update(ctx, func(tx store.Tx) error {
			_, _, err := appendMessage(tx, cA, raw)
			cancel()
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Update whose context was cancelled before it committed = %v, want an error wrapping context.Canceled", err)
		}
		unchanged(t, s, before, raw)
	})
}

// testIdempotent writes the same message and key twice (in two Updates, in
// one, in a batch): the store holds one.
func testIdempotent(t *testing.T, s store.Store) {
	m := message(cA, 5, 0)
	it := messageItem(5*65536, 5, 0)
	put := func(w store.Writer) error {
		return errors.Join(w.PutMessage(cA, m), w.PutHash(cA, m.Hash, m.Seq), w.PutItem(cA, it))
	}
	update(t, s, func(tx store.Tx) error { return put(tx) })
	update(t, s, func(tx store.Tx) error { return errors.Join(put(tx), put(tx)) })
	b, err := s.NewBatch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Cancel()
	if err := errors.Join(put(b), put(b), b.Flush()); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(r store.Reader) error {
		msgs, err := all(r.Messages(cA, 0, true))
		if err := expectScan("Messages after writing one message thrice", msgs, err, []store.Message{m}); err != nil {
			t.Error(err)
		}
		items, err := all(r.Items(cA, 0, math.MaxUint64, false))
		if err := expectScan("Items after writing one item thrice", items, err, []store.Item{it}); err != nil {
			t.Error(err)
		}
		seq, err := r.SeqByHash(cA, m.Hash)
		return expect("SeqByHash", seq, err, m.Seq, true)
	})
}

// testDeleteConversationData deletes one conversation's scoped records, in
// an Update, in a batch and in a failed Update.
func testDeleteConversationData(t *testing.T, open OpenFunc) {
	// cA's neighbours in id order on both sides, and one with cA's bytes
	// shifted.
	ids := []store.ConvID{cA, convID(0), cB, cA2, convID(0xff)}
	type how struct {
		name string
		run  func(t *testing.T, s store.Store) error
	}
	for _, h := range []how{
		{"Update", func(t *testing.T, s store.Store) error {
			return s.Update(t.Context(), func(tx store.Tx) error {
				if err := tx.DeleteConversationData(cA); err != nil {
					return err
				}
				return newConvData(cA, "main", 0).checkScoped(tx, false)
			})
		}},
		{"Batch", func(t *testing.T, s store.Store) error {
			b, err := s.NewBatch(t.Context())
			if err != nil {
				return err
			}
			defer b.Cancel()
			if err := b.DeleteConversationData(cA); err != nil {
				return err
			}
			view(t, s, func(r store.Reader) error {
				if err := newConvData(cA, "main", 0).checkScoped(r, true); err != nil {
					t.Errorf("before Flush: %v", err)
				}
				return nil
			})
			return b.Flush()
		}},
	} {
		t.Run(h.name, func(t *testing.T) {
			s := open(t)
			w := newWorld(0, ids...)
			update(t, s, func(tx store.Tx) error { return w.write(tx) })
			if err := h.run(t, s); err != nil {
				t.Fatal(err)
			}
			view(t, s, func(r store.Reader) error {
				errs := []error{w.convs[0].checkScoped(r, false), w.convs[0].checkUnscoped(r, true), w.g.check(r)}
				for _, d := range w.convs[1:] {
					errs = append(errs, d.check(r))
				}
				if err := errors.Join(errs...); err != nil {
					t.Error(err)
				}
				return nil
			})
			// The conversation can be written again from scratch.
			update(t, s, func(tx store.Tx) error { return w.convs[0].write(tx) })
			view(t, s, func(r store.Reader) error { return w.check(r) })
		})
	}
	t.Run("FailedUpdate", func(t *testing.T) {
		s := open(t)
		w := newWorld(0, ids...)
		update(t, s, func(tx store.Tx) error { return w.write(tx) })
		err := s.Update(t.Context(), func(tx store.Tx) error {
			if err := tx.DeleteConversationData(cA); err != nil {
				return err
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("Update = %v, want fn's error", err)
		}
		view(t, s, func(r store.Reader) error { return w.check(r) })
	})
}

func testBatch(t *testing.T, open OpenFunc) {
	newBatch := func(t *testing.T, s store.Store) store.Batch {
		t.Helper()
		b, err := s.NewBatch(t.Context())
		if err != nil {
			t.Fatalf("NewBatch: %v", err)
		}
		return b
	}
	absent := func(t *testing.T, s store.Store, w *world, when string) {
		t.Helper()
		view(t, s, func(r store.Reader) error {
			for _, d := range w.convs {
				if err := errors.Join(d.checkScoped(r, false), d.checkUnscoped(r, false)); err != nil {
					t.Errorf("%s: %v", when, err)
				}
			}
			if m, err := r.Meta(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: Meta() = %+v, %v; want ErrNotFound", when, m, err)
			}
			return nil
		})
	}
	t.Run("Flush", func(t *testing.T) {
		s := open(t)
		w := newWorld(0, cA, cB)
		b := newBatch(t, s)
		defer b.Cancel()
		if err := w.write(b); err != nil {
			t.Fatal(err)
		}
		absent(t, s, w, "before Flush")
		// Updates go on while a batch is open.
		other := newConvData(convID(7), "ops", 1)
		update(t, s, func(tx store.Tx) error { return other.write(tx) })
		if err := b.Flush(); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		w.convs = append(w.convs, other)
		view(t, s, func(r store.Reader) error { return w.check(r) })
		b.Cancel() // after Flush: nothing to drop
		view(t, s, func(r store.Reader) error { return w.check(r) })
	})
	t.Run("Deletes", func(t *testing.T) {
		s := open(t)
		w := newWorld(0, cA)
		update(t, s, func(tx store.Tx) error { return w.write(tx) })
		d := w.convs[0]
		b := newBatch(t, s)
		defer b.Cancel()
		err := errors.Join(b.DeleteMessage(cA, d.msgs[0].Seq), b.DeleteItem(cA, d.items[0].Pos), b.DeleteConversation(cA),
			b.DeleteName(d.names[0]), b.DeleteFileCheckpoint(d.agent, d.filePath), b.DeleteForkItems(subID(2)),
			b.DeleteHostEntries(cA))
		if err != nil {
			t.Fatal(err)
		}
		view(t, s, func(r store.Reader) error { return w.check(r) })
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		view(t, s, func(r store.Reader) error {
			var errs []error
			m, err := r.Message(cA, d.msgs[0].Seq)
			errs = append(errs, expect("deleted Message", m, err, nil, false))
			it, err := r.Item(cA, d.items[0].Pos)
			errs = append(errs, expect("deleted Item", it, err, nil, false))
			c, err := r.Conversation(cA)
			errs = append(errs, expect("deleted Conversation", c, err, nil, false))
			id, err := r.ConvByName(d.names[0])
			errs = append(errs, expect("deleted name", id, err, nil, false))
			cp, err := r.FileCheckpoint(d.agent, d.filePath)
			errs = append(errs, expect("deleted FileCheckpoint", cp, err, nil, false))
			its, err := all(r.ForkItems(subID(2)))
			errs = append(errs, expectScan("deleted ForkItems", its, err, nil))
			hosts, err := all(r.HostEntries(cA, 0))
			errs = append(errs, expectScan("deleted HostEntries", hosts, err, nil))
			m, err = r.Message(cA, d.msgs[1].Seq)
			errs = append(errs, expect("kept Message", m, err, d.msgs[1], true))
			return errors.Join(errs...)
		})
	})
	t.Run("Cancel", func(t *testing.T) {
		s := open(t)
		w := newWorld(0, cA, cB)
		b := newBatch(t, s)
		if err := w.write(b); err != nil {
			t.Fatal(err)
		}
		b.Cancel()
		absent(t, s, w, "after Cancel")
		// The store takes writes after a cancelled batch.
		update(t, s, func(tx store.Tx) error { return w.write(tx) })
		view(t, s, func(r store.Reader) error { return w.check(r) })
	})
	t.Run("OverMaxTxnBytes", func(t *testing.T) {
		s := open(t)
		limit := s.MaxTxnBytes()
		if limit > 32<<20 {
			t.Skipf("MaxTxnBytes is %d: a batch over it would take too much memory here", limit)
		}
		b := newBatch(t, s)
		defer b.Cancel()
		n := bigMessages(limit + 256<<10)
		for seq := range n {
			if err := b.PutMessage(cA, bigMessage(seq)); err != nil {
				t.Fatalf("batch write %d of %d (%d bytes each, MaxTxnBytes %d): %v", seq, n, bigSize, limit, err)
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatalf("Flush of a batch over MaxTxnBytes: %v", err)
		}
		view(t, s, func(r store.Reader) error {
			seq := uint64(0)
			for m, err := range r.Messages(cA, 0, true) {
				if err != nil {
					return err
				}
				if want := bigMessage(seq); m.Seq != seq || !bytes.Equal(m.Raw, want.Raw) {
					return fmt.Errorf("message %d: seq %d, %d bytes", seq, m.Seq, len(m.Raw))
				}
				seq++
			}
			if seq != n {
				return fmt.Errorf("%d messages after Flush, want %d", seq, n)
			}
			return nil
		})
	})
}

const bigSize = 64 << 10

// bigMessages is how many bigMessages make more than n bytes.
func bigMessages(n int64) uint64 { return uint64(n/bigSize) + 1 }

// bigMessage is a 64 KiB message that does not compress much.
func bigMessage(seq uint64) store.Message {
	raw := make([]byte, bigSize)
	x := seq*0x9e3779b97f4a7c15 + 1
	for i := range raw {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		raw[i] = byte(x)
	}
	return store.Message{Seq: seq, Role: "toolResult", Tokens: bigSize / 4, Hash: hashOf(raw), Raw: raw}
}

// smallSize is the size of the messages testTooBig fills an Update with:
// small enough that no backend stores them out of line.
const smallSize = 512

// smallMessages is how many smallMessages make more than n bytes.
func smallMessages(n int64) uint64 { return uint64(n/smallSize) + 1 }

// smallMessage is a 512-byte message that does not compress much.
func smallMessage(seq uint64) store.Message {
	m := bigMessage(seq)
	m.Raw = m.Raw[:smallSize]
	m.Hash, m.Tokens = hashOf(m.Raw), smallSize/4
	return m
}

// testTooBig checks that an Update writing well over MaxTxnBytes of small
// records fails with ErrTooBig and commits nothing, and that one writing a
// quarter of it commits.
func testTooBig(t *testing.T, s store.Store) {
	limit := s.MaxTxnBytes()
	if limit > 64<<20 {
		t.Skipf("MaxTxnBytes is %d: an Update over it would take too much memory here", limit)
	}
	quarter := smallMessages(limit/4 - smallSize)
	update(t, s, func(tx store.Tx) error {
		for seq := range quarter {
			if err := tx.PutMessage(cA, smallMessage(seq)); err != nil {
				return fmt.Errorf("write %d of %d (%d bytes each, MaxTxnBytes %d): %w", seq, quarter, smallSize, limit, err)
			}
		}
		return nil
	})
	n, written := smallMessages(2*limit+1<<20), uint64(0)
	err := s.Update(t.Context(), func(tx store.Tx) error {
		for seq := range n {
			if err := tx.PutMessage(cB, smallMessage(seq)); err != nil {
				return err
			}
			written++
		}
		return nil
	})
	if !errors.Is(err, store.ErrTooBig) {
		t.Fatalf("an Update writing %d bytes (%d messages; MaxTxnBytes %d) = %v, want an error wrapping ErrTooBig",
			written*smallSize, written, limit, err)
	}
	view(t, s, func(r store.Reader) error {
		got, err := count(r.Messages(cB, 0, false), -1)
		if err != nil || got != 0 {
			t.Errorf("the Update that failed with ErrTooBig left %d messages (%v)", got, err)
		}
		got, err = count(r.Messages(cA, 0, false), -1)
		if err != nil || uint64(got) != quarter {
			t.Errorf("the Update of a quarter of MaxTxnBytes: %d messages (%v), want %d", got, err, quarter)
		}
		return nil
	})
}

// testClosed checks that every call after Close fails with ErrClosed.
func testClosed(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error { return tx.PutMeta(store.Meta{Format: 1}) })
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	called := false
	for name, err := range map[string]error{
		"View":   s.View(ctx, func(store.Reader) error { called = true; return nil }),
		"Update": s.Update(ctx, func(tx store.Tx) error { return tx.PutMeta(store.Meta{Format: 2}) }),
		"Sync":   s.Sync(ctx),
	} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want an error wrapping ErrClosed", name, err)
		}
	}
	if called {
		t.Errorf("View after Close ran its function")
	}
	if b, err := s.NewBatch(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("NewBatch after Close = %v, want an error wrapping ErrClosed", err)
		if b != nil {
			b.Cancel()
		}
	}
	if _, err := s.Size(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Size after Close = %v, want an error wrapping ErrClosed", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Errorf("Close again = %v, want nil or an error wrapping ErrClosed", err)
	}
}

// testReopen checks that everything committed or flushed is there after a
// reopen, byte for byte, and nothing deleted, cancelled or failed is.
func testReopen(t *testing.T, open OpenFunc, reopen ReopenFunc) {
	s := open(t)
	w := newWorld(0, cA, cA2, cB)
	update(t, s, func(tx store.Tx) error { return w.write(tx) })
	// Written then deleted.
	gone := newConvData(convID(5), "main", 5)
	update(t, s, func(tx store.Tx) error { return gone.write(tx) })
	update(t, s, func(tx store.Tx) error {
		err := errors.Join(tx.DeleteConversationData(gone.id), tx.DeleteConversation(gone.id),
			tx.DeleteFileCheckpoint(gone.agent, gone.filePath), tx.DeleteHostCheckpoint(gone.agent, gone.id))
		for _, n := range gone.names {
			err = errors.Join(err, tx.DeleteName(n))
		}
		for _, l := range gone.links {
			err = errors.Join(err, tx.DeleteSubagentLink(gone.id, l.ID))
		}
		return err
	})
	// Flushed, cancelled, failed.
	flushed, cancelled, failed := newConvData(convID(6), "ops", 6), newConvData(convID(7), "ops", 7), newConvData(convID(8), "ops", 8)
	b, err := s.NewBatch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(flushed.write(b), b.Flush()); err != nil {
		t.Fatal(err)
	}
	b, err = s.NewBatch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := cancelled.write(b); err != nil {
		t.Fatal(err)
	}
	b.Cancel()
	if err := s.Update(t.Context(), func(tx store.Tx) error { return errors.Join(failed.write(tx), errBoom) }); !errors.Is(err, errBoom) {
		t.Fatalf("failed Update = %v", err)
	}
	w.convs = append(w.convs, flushed)
	check := func(s store.Store, when string) {
		t.Helper()
		view(t, s, func(r store.Reader) error {
			errs := []error{w.check(r)}
			for _, d := range []*convData{gone, cancelled, failed} {
				errs = append(errs, d.checkScoped(r, false), d.checkUnscoped(r, false))
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			return nil
		})
	}
	if err := s.Sync(t.Context()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	check(s, "before the reopen")
	s = reopen(t, s)
	check(s, "after a reopen")
	// Written after a reopen, then reopened again.
	w.convs = append(w.convs, newConvData(convID(9), "main2", 9))
	update(t, s, func(tx store.Tx) error { return w.convs[len(w.convs)-1].write(tx) })
	s = reopen(t, s)
	check(s, "after a second reopen")
}

// testReadOnly checks a read-only store: it reads everything, and writes
// fail with ErrReadOnly and change nothing.
func testReadOnly(t *testing.T, open OpenFunc, readOnly ReadOnlyFunc) {
	s := open(t)
	w := newWorld(0, cA, cB)
	update(t, s, func(tx store.Tx) error { return w.write(tx) })
	ro := readOnly(t, s)
	view(t, ro, func(r store.Reader) error { return w.check(r) })
	err := ro.Update(t.Context(), func(tx store.Tx) error {
		return tx.PutMeta(store.Meta{Format: 99})
	})
	if !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Update on a read-only store = %v, want an error wrapping ErrReadOnly", err)
	}
	err = ro.Update(t.Context(), func(tx store.Tx) error {
		_ = tx.DeleteConversationData(cA)
		_ = tx.DeleteMessage(cB, w.convs[1].msgs[0].Seq)
		return nil // ignoring the write errors
	})
	if err != nil && !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Update on a read-only store = %v, want nil or an error wrapping ErrReadOnly", err)
	}
	if b, err := ro.NewBatch(t.Context()); err == nil {
		werr := b.PutMeta(store.Meta{Format: 99})
		ferr := b.Flush()
		if !errors.Is(werr, store.ErrReadOnly) && !errors.Is(ferr, store.ErrReadOnly) {
			t.Errorf("a batch on a read-only store: write %v, Flush %v; want one to wrap ErrReadOnly", werr, ferr)
		}
		b.Cancel()
	} else if !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("NewBatch on a read-only store = %v, want nil or an error wrapping ErrReadOnly", err)
	}
	view(t, ro, func(r store.Reader) error { return w.check(r) })
	if err := ro.Close(); err != nil {
		t.Errorf("Close of the read-only store: %v", err)
	}
}

// testOneLargeMessage checks that an Update holding one large message (8
// MiB, incompressible) beside small records and a turn commits, and that
// the message reads back byte for byte: a commitTurn with a large tool
// result is one Update.
func testOneLargeMessage(t *testing.T, s store.Store) {
	const size = 8 << 20
	big := bigMessage(2)
	raw := make([]byte, 0, size)
	for seq := uint64(0); len(raw) < size; seq++ {
		raw = append(raw, bigMessage(100+seq).Raw...)
	}
	big.Raw = raw[:size]
	big.Hash, big.Tokens = hashOf(big.Raw), size/4
	update(t, s, func(tx store.Tx) error {
		for _, m := range []store.Message{smallMessage(0), smallMessage(1), big} {
			if err := tx.PutMessage(cA, m); err != nil {
				return err
			}
			if err := tx.PutHash(cA, m.Hash, m.Seq); err != nil {
				return err
			}
		}
		return tx.PutTurn(cA, "turn-large", store.Turn{Seqs: []uint64{0, 1, 2}, Stored: 3})
	})
	view(t, s, func(r store.Reader) error {
		m, err := r.Message(cA, 2)
		if err != nil {
			return err
		}
		if !bytes.Equal(m.Raw, big.Raw) {
			t.Errorf("the large message came back with %d bytes, not the %d written", len(m.Raw), len(big.Raw))
		}
		if _, err := r.Turn(cA, "turn-large"); err != nil {
			t.Errorf("the turn committed with the large message: %v", err)
		}
		return nil
	})
}
