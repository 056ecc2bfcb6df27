package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// testFresh checks a store.FreshWriter (nothing when the backend's Tx has
// none): records written fresh read back as puts do, in the transaction
// and after it; a fresh write over a stored key either fails the whole
// transaction or overwrites the record.
func testFresh(t *testing.T, s store.Store) {
	c := store.ConvID{0xf1}
	msg := func(seq uint64, text string) (store.Message, store.Hash, store.Item) {
		raw := fmt.Appendf(nil, `{"role":"user","content":%q}`, text)
		m := store.Message{Seq: seq, Tokens: len(raw) / 4, Timestamp: 1_700_000_000_000 + int64(seq), Role: "user", Hash: hashOf(raw), Raw: raw}
		it := store.Item{Item: dag.Item{Pos: seq << 16, Ref: dag.MessageRef(seq), Tokens: m.Tokens, Depth: -1, Timestamp: m.Timestamp, Role: m.Role}, Flags: 1}
		return m, m.Hash, it
	}
	check := func(r store.Reader, seq uint64, text string) error {
		m, h, it := msg(seq, text)
		got, err := r.Message(c, seq)
		if err != nil || !equal(got, m) {
			return fmt.Errorf("Message(%d) = %+v, %v; want %+v", seq, got, err, m)
		}
		if s, err := r.SeqByHash(c, h); err != nil || s != seq {
			return fmt.Errorf("SeqByHash of message %d = %d, %v", seq, s, err)
		}
		if got, err := r.Item(c, it.Pos); err != nil || !equal(got, it) {
			return fmt.Errorf("Item(%d) = %+v, %v; want %+v", it.Pos, got, err, it)
		}
		return nil
	}
	fresh := func(tx store.Tx, seq uint64, text string) error {
		fw := tx.(store.FreshWriter)
		m, h, it := msg(seq, text)
		if err := fw.PutFreshMessage(c, m); err != nil {
			return err
		}
		if err := fw.PutFreshHash(c, h, seq); err != nil {
			return err
		}
		return fw.PutFreshItem(c, it)
	}
	supported := false
	update(t, s, func(tx store.Tx) error {
		if _, ok := tx.(store.FreshWriter); !ok {
			return nil
		}
		supported = true
		for seq := uint64(1); seq <= 3; seq++ {
			if err := fresh(tx, seq, fmt.Sprintf("fresh %d", seq)); err != nil {
				return err
			}
		}
		return check(tx, 2, "fresh 2") // read in the transaction
	})
	if !supported {
		t.Skip("the backend's Tx is no store.FreshWriter")
	}
	view(t, s, func(r store.Reader) error {
		for seq := uint64(1); seq <= 3; seq++ {
			if err := check(r, seq, fmt.Sprintf("fresh %d", seq)); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	// Over a stored key, beside another write.
	other := store.ConvID{0xf2}
	err := s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.PutConversation(other, store.Conversation{Agent: "main", NextSeq: 1}); err != nil {
			return err
		}
		return fresh(tx, 2, "over message 2")
	})
	view(t, s, func(r store.Reader) error {
		_, convErr := r.Conversation(other)
		if err != nil {
			if convErr == nil {
				t.Errorf("a failed Update (%v) stored its other write", err)
			}
			if err := check(r, 2, "fresh 2"); err != nil {
				t.Errorf("after a failed Update (%v): %v", err, err)
			}
			return nil
		}
		if convErr != nil {
			t.Errorf("Update succeeded, its other write is missing: %v", convErr)
		}
		if err := check(r, 2, "over message 2"); err != nil {
			t.Errorf("Update succeeded without overwriting: %v", err)
		}
		return nil
	})
}
