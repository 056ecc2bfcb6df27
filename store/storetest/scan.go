package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// scanner runs one scan of a reader, breaking it off after n records
// (n < 0: to the end), and returns how many it saw.
type scanner struct {
	name string
	run  func(r store.Reader, n int) (int, error)
}

func count[T any](seq func(func(T, error) bool), n int) (int, error) {
	seen := 0
	for _, err := range seq {
		if err != nil {
			return seen, err
		}
		seen++
		if seen == n {
			break
		}
	}
	return seen, nil
}

func scanners(c store.ConvID, s store.SubID) []scanner {
	return []scanner{
		{"Conversations", func(r store.Reader, n int) (int, error) { return count(r.Conversations(), n) }},
		{"Names", func(r store.Reader, n int) (int, error) { return count(r.Names(), n) }},
		{"Messages", func(r store.Reader, n int) (int, error) { return count(r.Messages(c, 0, true), n) }},
		{"MessagesHeaders", func(r store.Reader, n int) (int, error) { return count(r.Messages(c, 0, false), n) }},
		{"Items", func(r store.Reader, n int) (int, error) { return count(r.Items(c, 0, math.MaxUint64, false), n) }},
		{"ItemsReverse", func(r store.Reader, n int) (int, error) { return count(r.Items(c, 0, math.MaxUint64, true), n) }},
		{"Summaries", func(r store.Reader, n int) (int, error) { return count(r.Summaries(c), n) }},
		{"Entries", func(r store.Reader, n int) (int, error) { return count(r.Entries(c, tagA, store.EntriesCurrent, 0), n) }},
		{"HostEntries", func(r store.Reader, n int) (int, error) { return count(r.HostEntries(c, 0), n) }},
		{"Orders", func(r store.Reader, n int) (int, error) { return count(r.Orders(c), n) }},
		{"Checkpoints", func(r store.Reader, n int) (int, error) { return count(r.Checkpoints(), n) }},
		{"Subagents", func(r store.Reader, n int) (int, error) { return count(r.Subagents(), n) }},
		{"ForkItems", func(r store.Reader, n int) (int, error) { return count(r.ForkItems(s), n) }},
		{"ForkSnapshots", func(r store.Reader, n int) (int, error) { return count(r.ForkSnapshots(), n) }},
		{"SubagentLinks", func(r store.Reader, n int) (int, error) { return count(r.SubagentLinks(c), n) }},
	}
}

// testScanBreak breaks every scan off after its first record, in a View
// and in an Update that then writes and commits, and nests scans: a
// backend that leaks an iterator fails here (Badger panics when a
// transaction ends with one open).
func testScanBreak(t *testing.T, s store.Store) {
	w := newWorld(0, convID(1), convID(2), convID(3))
	update(t, s, func(tx store.Tx) error { return w.write(tx) })
	d := w.convs[0]
	sub := subID(2)
	for _, sc := range scanners(d.id, sub) {
		t.Run(sc.name, func(t *testing.T) {
			full := 0
			view(t, s, func(r store.Reader) error {
				n, err := sc.run(r, -1)
				if err != nil || n < 2 {
					return fmt.Errorf("full scan: %d records, %v (the fixture has at least 2)", n, err)
				}
				full = n
				if n, err := sc.run(r, 1); n != 1 || err != nil {
					return fmt.Errorf("broken off after 1: %d records, %v", n, err)
				}
				if n, err := sc.run(r, -1); n != full || err != nil {
					return fmt.Errorf("full scan after a broken one: %d records, %v; want %d", n, err, full)
				}
				return nil
			})
			update(t, s, func(tx store.Tx) error {
				if n, err := sc.run(tx, 1); n != 1 || err != nil {
					return fmt.Errorf("broken off after 1 in an Update: %d records, %v", n, err)
				}
				// Nested: a scan broken off inside another.
				for _, err := range tx.Items(d.id, 0, math.MaxUint64, false) {
					if err != nil {
						return err
					}
					if n, err := sc.run(tx, 1); n != 1 || err != nil {
						return fmt.Errorf("nested, broken off after 1: %d records, %v", n, err)
					}
					break
				}
				return tx.PutMeta(store.Meta{Format: full, Engine: sc.name})
			})
			view(t, s, func(r store.Reader) error {
				if m, err := r.Meta(); err != nil || m.Engine != sc.name {
					return fmt.Errorf("the Update after a broken-off scan did not commit: %+v, %v", m, err)
				}
				return nil
			})
			// Broken off in an Update that fails.
			err := s.Update(t.Context(), func(tx store.Tx) error {
				if _, err := sc.run(tx, 1); err != nil {
					return err
				}
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Fatalf("Update failing after a broken-off scan: %v, want %v", err, errBoom)
			}
		})
	}
}

// testCopies checks that values are copied in and out: a caller mutating a
// slice it passed or got back does not change the store.
func testCopies(t *testing.T, s store.Store) {
	d := newConvData(cA, "main", 0)
	m := d.msgs[1]
	m.Raw = slices.Clone(m.Raw)
	want := message(cA, m.Seq, 0)
	conv := d.conv
	conv.SessionIDs = slices.Clone(conv.SessionIDs)
	sum := summary("sum_copy", 0, dag.MessageRef(1), dag.MessageRef(2))
	turn := store.Turn{Seqs: []uint64{1, 2, 3}, Stored: 3}
	large := []byte("large reference")
	scribble := func() {
		m.Raw[0] ^= 0xff
		conv.SessionIDs[0] = "scribbled"
		sum.Sources[0] = dag.SummaryRef("scribbled")
		turn.Seqs[0] = 99
		large[0] = 'X'
	}
	check := func(r store.Reader, when string) error {
		var errs []error
		got, err := r.Message(cA, m.Seq)
		errs = append(errs, expect(when+": Message", got, err, want, true))
		c, err := r.Conversation(cA)
		errs = append(errs, expect(when+": Conversation", c, err, d.conv, true))
		sm, err := r.Summary(cA, "sum_copy")
		errs = append(errs, expect(when+": Summary", sm, err, summary("sum_copy", 0, dag.MessageRef(1), dag.MessageRef(2)), true))
		tn, err := r.Turn(cA, "adv")
		errs = append(errs, expect(when+": Turn", tn, err, store.Turn{Seqs: []uint64{1, 2, 3}, Stored: 3}, true))
		l, err := r.Large(cA, 1)
		errs = append(errs, expect(when+": Large", l, err, []byte("large reference"), true))
		return errors.Join(errs...)
	}
	update(t, s, func(tx store.Tx) error {
		err := errors.Join(tx.PutMessage(cA, m), tx.PutConversation(cA, conv), tx.PutSummary(cA, sum),
			tx.PutTurn(cA, "adv", turn), tx.PutLarge(cA, 1, large))
		if err != nil {
			return err
		}
		scribble() // the caller's slices, after Put, before the commit
		return check(tx, "after the caller changed what it put (in the transaction)")
	})
	view(t, s, func(r store.Reader) error { return check(r, "after the caller changed what it put") })
	// Returned values are the caller's.
	view(t, s, func(r store.Reader) error {
		got, _ := r.Message(cA, m.Seq)
		got.Raw[0] ^= 0xff
		c, _ := r.Conversation(cA)
		c.SessionIDs[0] = "scribbled"
		sm, _ := r.Summary(cA, "sum_copy")
		sm.Sources[0].ID = "scribbled"
		tn, _ := r.Turn(cA, "adv")
		tn.Seqs[0] = 99
		l, _ := r.Large(cA, 1)
		l[0] = 'X'
		for m, err := range r.Messages(cA, 0, true) {
			if err != nil {
				return err
			}
			m.Raw[0] ^= 0xff
		}
		for c, err := range r.Conversations() {
			if err != nil {
				return err
			}
			c.SessionIDs[0] = "scribbled"
		}
		for sm, err := range r.Summaries(cA) {
			if err != nil {
				return err
			}
			sm.Sources[0].ID = "scribbled"
		}
		return check(r, "after the caller changed what it got (in the same View)")
	})
	view(t, s, func(r store.Reader) error { return check(r, "after the caller changed what it got") })
}

// testHeaderOnly checks that MessageHeader and Messages without raw bytes
// return the header and a nil Raw.
func testHeaderOnly(t *testing.T, s store.Store) {
	d := newConvData(cA, "main", 0)
	update(t, s, func(tx store.Tx) error { return d.write(tx) })
	view(t, s, func(r store.Reader) error {
		got, err := all(r.Messages(cA, 0, false))
		if err != nil {
			return err
		}
		var want []store.Message
		for _, m := range d.msgs {
			m.Raw = nil
			want = append(want, m)
		}
		if err := expectScan("Messages(withRaw false)", got, nil, want); err != nil {
			t.Error(err)
		}
		for _, m := range got {
			if m.Raw != nil {
				t.Errorf("Messages(withRaw false): message %d has Raw %d bytes, want nil", m.Seq, len(m.Raw))
			}
		}
		for _, m := range d.msgs {
			h, err := r.MessageHeader(cA, m.Seq)
			if err != nil || h.Raw != nil {
				t.Errorf("MessageHeader(%d): Raw %d bytes, %v; want nil", m.Seq, len(h.Raw), err)
			}
		}
		return nil
	})
}

// testEncoded stores messages with Message.Encoded set — by the store's
// MessageEncoder, or, for a store without one (which ignores Encoded), to
// bytes that are no record — in an Update and in a batch: they read back as
// the messages put without it, with Encoded nil, and a caller changing
// Encoded after the Put changes nothing.
func testEncoded(t *testing.T, s store.Store) {
	enc, _ := s.(store.MessageEncoder)
	if enc == nil {
		t.Log("the store has no MessageEncoder: Encoded must be ignored")
	}
	d := newConvData(cA, "main", 0)
	encoded := func(m store.Message) store.Message {
		m.Raw = slices.Clone(m.Raw)
		if enc == nil {
			m.Encoded = []byte("not an encoding of this backend")
			return m
		}
		m.Encoded = enc.EncodeMessage(m)
		if again := enc.EncodeMessage(m); !bytes.Equal(again, m.Encoded) {
			t.Errorf("message %d: EncodeMessage of a message with Encoded set differs from EncodeMessage without", m.Seq)
		}
		return m
	}
	scribble := func(m store.Message) {
		for i := range m.Encoded {
			m.Encoded[i] ^= 0xa5
		}
	}
	half := len(d.msgs) / 2
	update(t, s, func(tx store.Tx) error {
		for _, m := range d.msgs[:half] {
			e := encoded(m)
			if err := tx.PutMessage(cA, e); err != nil {
				return fmt.Errorf("PutMessage with Encoded: %w", err)
			}
			scribble(e)
		}
		return nil
	})
	b, err := s.NewBatch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Cancel()
	for _, m := range d.msgs[half:] {
		e := encoded(m)
		if err := b.PutMessage(cA, e); err != nil {
			t.Fatalf("batch PutMessage with Encoded: %v", err)
		}
		scribble(e)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(r store.Reader) error {
		var errs []error
		for _, m := range d.msgs {
			got, err := r.Message(cA, m.Seq)
			errs = append(errs, expect(fmt.Sprintf("Message(%d) put with Encoded", m.Seq), got, err, m, true))
			if got.Encoded != nil {
				errs = append(errs, fmt.Errorf("Message(%d): Encoded set on a read", m.Seq))
			}
			h := m
			h.Raw = nil
			got, err = r.MessageHeader(cA, m.Seq)
			errs = append(errs, expect(fmt.Sprintf("MessageHeader(%d) put with Encoded", m.Seq), got, err, h, true))
		}
		got, err := all(r.Messages(cA, 0, true))
		errs = append(errs, expectScan("Messages put with Encoded", got, err, d.msgs))
		return errors.Join(errs...)
	})
}

// testReadOwnWrites checks that an Update reads its own writes — gets and
// scans, puts and deletes — and that a scan may delete what it scans.
func testReadOwnWrites(t *testing.T, s store.Store) {
	d := newConvData(cA, "main", 0)
	update(t, s, func(tx store.Tx) error { return d.write(tx) })
	update(t, s, func(tx store.Tx) error {
		var errs []error
		// Overwrite one committed message, delete another, add one.
		m0 := message(cA, d.msgs[0].Seq, 7)
		errs = append(errs, tx.PutMessage(cA, m0), tx.DeleteMessage(cA, d.msgs[1].Seq), tx.PutMessage(cA, message(cA, 3, 0)))
		want := append([]store.Message{m0, message(cA, 3, 0)}, d.msgs[2:]...)
		slices.SortFunc(want, func(a, b store.Message) int { return cmpU64(a.Seq, b.Seq) })
		got, err := all(tx.Messages(cA, 0, true))
		errs = append(errs, expectScan("Messages in the writing Update", got, err, want))
		g, err := tx.Message(cA, d.msgs[1].Seq)
		errs = append(errs, expect("deleted Message in the writing Update", g, err, nil, false))
		// Delete every item while scanning them.
		n := 0
		for it, err := range tx.Items(cA, 0, math.MaxUint64, false) {
			if err != nil {
				return err
			}
			n++
			errs = append(errs, tx.DeleteItem(cA, it.Pos))
		}
		if n != len(d.items) {
			errs = append(errs, fmt.Errorf("deleting while scanning: scanned %d items, want %d", n, len(d.items)))
		}
		left, err := all(tx.Items(cA, 0, math.MaxUint64, true))
		errs = append(errs, expectScan("Items after deleting them all in the Update", left, err, nil))
		errs = append(errs, tx.DeleteConversationData(convID(9))) // nothing there
		return errors.Join(errs...)
	})
	view(t, s, func(r store.Reader) error {
		left, err := all(r.Items(cA, 0, math.MaxUint64, false))
		return expectScan("Items after the Update deleted them all", left, err, nil)
	})
}
