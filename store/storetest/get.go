package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// testGet checks the batched read (Reader.Get): every kind of Ref, of
// several conversations, in one call, answers as the point reads do; a
// FlagLarge message comes with its reference and without its raw bytes
// (with them when its reference is missing); missing records are
// ErrNotFound in their Got, the others still read; a Ref given twice is
// answered twice; an Update's Get reads its own writes.
func testGet(t *testing.T, s store.Store) {
	c1, c2 := store.ConvID{0x61, 1}, store.ConvID{0x61, 2}
	sub, orphan := store.SubID{0x61, 1}, store.SubID{0x61, 2}
	msg := func(seq uint64, flags byte) store.Message {
		raw := fmt.Appendf(nil, `{"role":"user","content":"message %d"}`, seq)
		return store.Message{Seq: seq, Flags: flags, Tokens: 5, Timestamp: 1_700_000_000_000 + int64(seq), Role: "user", Hash: hashOf(raw), Raw: raw}
	}
	conv1 := store.Conversation{Agent: "a", Key: "agent:a:one", SessionIDs: []string{"s1"}, NextSeq: 4, NextPos: 4 << 16, Messages: 3}
	conv2 := store.Conversation{Agent: "a", SessionIDs: []string{"s2"}, NextSeq: 2, NextPos: 2 << 16, Messages: 1}
	plain, large, unref, other := msg(1, 0), msg(2, store.FlagLarge), msg(3, store.FlagLarge), msg(1, store.FlagHeartbeat)
	ref := []byte(`{"role":"user","content":"[large content lcm_file_2]"}`)
	sum := dag.Summary{ID: "sum-get", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1)}, Text: "what message 1 said", Tokens: 4}
	rec := store.Subagent{Agent: "a", ChildSessionKey: "agent:a:subagent:get", ChildSessionID: "child-1", Token: "t1"}
	update(t, s, func(tx store.Tx) error {
		return errors.Join(
			tx.PutConversation(c1, conv1), tx.PutConversation(c2, conv2),
			tx.PutMessage(c1, plain), tx.PutMessage(c1, large), tx.PutLarge(c1, 2, ref), tx.PutMessage(c1, unref),
			tx.PutMessage(c2, other), tx.PutSummary(c1, sum),
			tx.PutSubagent(sub, rec), tx.PutSubagentByChild("a", "child-1", sub), tx.PutSubagentByChild("a", "child-2", orphan))
	})
	refs := []store.Ref{
		{Kind: store.RefConversation, Conv: c1},
		{Kind: store.RefMessage, Conv: c1, Seq: 1},
		{Kind: store.RefMessage, Conv: c1, Seq: 2},
		{Kind: store.RefMessage, Conv: c1, Seq: 3},
		{Kind: store.RefMessage, Conv: c2, Seq: 1},
		{Kind: store.RefSummary, Conv: c1, ID: "sum-get"},
		{Kind: store.RefSubagent, Sub: sub},
		{Kind: store.RefSubagentByChild, Agent: "a", ID: "child-1"},
		{Kind: store.RefConversation, Conv: c2},
		{Kind: store.RefMessage, Conv: c1, Seq: 1}, // again
		// Missing: each an ErrNotFound of its own.
		{Kind: store.RefConversation, Conv: store.ConvID{0x61, 9}},
		{Kind: store.RefMessage, Conv: c1, Seq: 99},
		{Kind: store.RefSummary, Conv: c2, ID: "sum-get"},
		{Kind: store.RefSubagent, Sub: orphan},
		{Kind: store.RefSubagentByChild, Agent: "a", ID: "child-9"},
		{Kind: store.RefSubagentByChild, Agent: "a", ID: "child-2"}, // mapped, record gone
	}
	largeHeader := large
	largeHeader.Raw = nil
	want := []store.Got{
		{Conversation: conv1},
		{Message: plain},
		{Message: largeHeader, Large: ref},
		{Message: unref},
		{Message: other},
		{Summary: sum},
		{Subagent: rec},
		{Sub: sub, Subagent: rec},
		{Conversation: conv2},
		{Message: plain},
	}
	check := func(r store.Reader) error {
		got, err := r.Get(refs)
		if err != nil {
			return fmt.Errorf("batched read: %w", err)
		}
		if len(got) != len(refs) {
			return fmt.Errorf("batched read of %d refs returned %d", len(refs), len(got))
		}
		for i, w := range want {
			if got[i].Err != nil || !equal(got[i], w) {
				return fmt.Errorf("batched read: ref %d %+v = %+v; want %+v", i, refs[i], got[i], w)
			}
		}
		for i := len(want); i < len(refs); i++ {
			if !errors.Is(got[i].Err, store.ErrNotFound) {
				return fmt.Errorf("batched read: missing ref %d %+v = %+v; want an error wrapping ErrNotFound", i, refs[i], got[i])
			}
		}
		if got[len(refs)-1].Sub != orphan {
			return fmt.Errorf("batched read: a mapped child whose record is gone: Sub %x, want %x", got[len(refs)-1].Sub, orphan)
		}
		if empty, err := r.Get(nil); err != nil || len(empty) != 0 {
			return fmt.Errorf("batched read of no refs: %v, %v", empty, err)
		}
		return nil
	}
	view(t, s, check)
	// In an Update, after writes of its own.
	fresh := msg(4, 0)
	update(t, s, func(tx store.Tx) error {
		if err := tx.PutMessage(c1, fresh); err != nil {
			return err
		}
		if err := check(tx); err != nil {
			return err
		}
		got, err := tx.Get([]store.Ref{{Kind: store.RefMessage, Conv: c1, Seq: 4}})
		if err != nil || got[0].Err != nil || !equal(got[0].Message, fresh) {
			return fmt.Errorf("batched read of a message the Update wrote: %+v, %v", got, err)
		}
		return nil
	})
}
