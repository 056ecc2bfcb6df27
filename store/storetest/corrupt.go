package storetest

import (
	"errors"
	"iter"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// CorruptFunc changes one byte of the stored value of every record of s
// but the format record and the messages, under the store (through the
// backend's raw storage, as a damaged disk would), and returns s or the
// store reopened over the changed data.
type CorruptFunc func(t *testing.T, s store.Store) store.Store

// Corrupt adds the Corrupt case, for a backend that checksums its records:
// after fn has changed a byte of every record but the format record and
// the messages, every read of one fails with store.ErrCorrupt (a get
// returns no value, a scan yields the error before any record), and the
// messages still read. Backends without record checksums (memstore;
// pgstore, which leaves it to the server's page checksums) do not pass it.
func Corrupt(fn CorruptFunc) Option { return func(c *config) { c.corrupt = fn } }

// corruptRecords is what the Corrupt case writes: one record of every
// family the engine reads back.
func writeCorruptRecords(tx store.Tx, c store.ConvID, sub store.SubID, tag store.FileTag) error {
	it := store.Item{Item: dag.Item{Pos: 1 << 16, Ref: dag.MessageRef(1), Tokens: 5, Role: "user"}}
	sum := dag.Summary{ID: "sum-1", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1)}, Text: "getAvailableModels was called", Tokens: 7}
	for _, err := range []error{
		tx.PutMeta(store.Meta{Format: 3, Engine: "storetest", Since: 3}),
		tx.PutConversation(c, store.Conversation{Agent: "a", SessionIDs: []string{"s"}, NextSeq: 2, NextPos: 2 << 16, Messages: 1}),
		tx.PutName(store.Name{Agent: "a", Kind: store.NameSessionID, Value: "s"}, c),
		tx.PutMessage(c, store.Message{Seq: 1, Tokens: 5, Role: "user", Raw: []byte(`{"role":"user","content":"hi"}`)}),
		tx.PutHash(c, store.Hash{1}, 1),
		tx.PutLarge(c, 1, []byte(`{"role":"user","content":"[large]"}`)),
		tx.PutItem(c, it),
		tx.PutItem(c, store.Item{Item: dag.Item{Pos: 2 << 16, Ref: dag.SummaryRef("sum-1"), Tokens: 7, Depth: 1}}),
		tx.PutSummary(c, sum),
		tx.PutEntrySeq(c, tag, store.EntriesCurrent, 0, 1),
		tx.PutEntryIndex(c, tag, "e0", 0),
		tx.PutReconcileFrom(c, tag, 1),
		tx.PutOrder(c, 1, 1<<16),
		tx.PutFileCheckpoint("a", "/f.jsonl", store.FileCheckpoint{SessionID: "s", Conv: c.String(), Offset: 10}),
		tx.PutHostCheckpoint("a", c, store.HostCheckpoint{Conv: c.String(), Cursor: "x"}),
		tx.PutHostEntry(c, 0, store.HostEntry{Seq: 1, EntryID: "h0"}),
		tx.PutTurn(c, "k", store.Turn{Seqs: []uint64{1}, Stored: 1}),
		tx.PutSubagent(sub, store.Subagent{Agent: "a", ChildSessionKey: "agent:a:subagent:1", Token: "t"}),
		tx.PutSubagentByChild("a", "child", sub),
		tx.PutForkItem(sub, it),
		tx.PutSubagentLink(c, sub, "agent:a:subagent:1"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func testCorrupt(t *testing.T, s store.Store, fn CorruptFunc) {
	c, sub, tag := store.ConvID{0xc0, 1}, store.SubID{0x5b, 1}, store.FileTag{0xf1}
	update(t, s, func(tx store.Tx) error { return writeCorruptRecords(tx, c, sub, tag) })
	s = fn(t, s)
	first := func(seq iter.Seq2[any, error]) error {
		for _, err := range seq {
			if err == nil {
				return errors.New("a record read back without an error")
			}
			return err
		}
		return errors.New("the scan yields nothing")
	}
	gets := map[string]func(r store.Reader) error{
		"Conversation": func(r store.Reader) error { _, err := r.Conversation(c); return err },
		"ConvByName": func(r store.Reader) error {
			_, err := r.ConvByName(store.Name{Agent: "a", Kind: store.NameSessionID, Value: "s"})
			return err
		},
		"SeqByHash":       func(r store.Reader) error { _, err := r.SeqByHash(c, store.Hash{1}); return err },
		"Large":           func(r store.Reader) error { _, err := r.Large(c, 1); return err },
		"Item":            func(r store.Reader) error { _, err := r.Item(c, 1<<16); return err },
		"Item (summary)":  func(r store.Reader) error { _, err := r.Item(c, 2<<16); return err },
		"Summary":         func(r store.Reader) error { _, err := r.Summary(c, "sum-1"); return err },
		"EntrySeq":        func(r store.Reader) error { _, err := r.EntrySeq(c, tag, store.EntriesCurrent, 0); return err },
		"EntryIndex":      func(r store.Reader) error { _, err := r.EntryIndex(c, tag, "e0"); return err },
		"ReconcileFrom":   func(r store.Reader) error { _, err := r.ReconcileFrom(c, tag); return err },
		"Order":           func(r store.Reader) error { _, err := r.Order(c, 1); return err },
		"FileCheckpoint":  func(r store.Reader) error { _, err := r.FileCheckpoint("a", "/f.jsonl"); return err },
		"HostCheckpoint":  func(r store.Reader) error { _, err := r.HostCheckpoint("a", c); return err },
		"HostEntry":       func(r store.Reader) error { _, err := r.HostEntry(c, 0); return err },
		"Turn":            func(r store.Reader) error { _, err := r.Turn(c, "k"); return err },
		"Subagent":        func(r store.Reader) error { _, err := r.Subagent(sub); return err },
		"SubagentByChild": func(r store.Reader) error { _, err := r.SubagentByChild("a", "child"); return err },
		"Conversations":   func(r store.Reader) error { return first(anySeq(r.Conversations())) },
		"Names":           func(r store.Reader) error { return first(anySeq(r.Names())) },
		"Items":           func(r store.Reader) error { return first(anySeq(r.Items(c, 0, ^uint64(0), false))) },
		"Items (reverse)": func(r store.Reader) error { return first(anySeq(r.Items(c, 0, ^uint64(0), true))) },
		"Summaries":       func(r store.Reader) error { return first(anySeq(r.Summaries(c))) },
		"Entries":         func(r store.Reader) error { return first(anySeq(r.Entries(c, tag, store.EntriesCurrent, 0))) },
		"Orders":          func(r store.Reader) error { return first(anySeq(r.Orders(c))) },
		"Checkpoints":     func(r store.Reader) error { return first(anySeq(r.Checkpoints())) },
		"HostEntries":     func(r store.Reader) error { return first(anySeq(r.HostEntries(c, 0))) },
		"Subagents":       func(r store.Reader) error { return first(anySeq(r.Subagents())) },
		"ForkItems":       func(r store.Reader) error { return first(anySeq(r.ForkItems(sub))) },
		"SubagentLinks":   func(r store.Reader) error { return first(anySeq(r.SubagentLinks(c))) },
	}
	for name, get := range gets {
		err := s.View(t.Context(), get)
		if !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("%s of a changed record: %v, want store.ErrCorrupt", name, err)
		}
	}
	view(t, s, func(r store.Reader) error {
		if _, err := r.Meta(); err != nil {
			t.Errorf("format record: %v", err)
		}
		if m, err := r.Message(c, 1); err != nil || string(m.Raw) != `{"role":"user","content":"hi"}` {
			t.Errorf("message: %q %v", m.Raw, err)
		}
		return nil
	})
}

// anySeq turns a typed scan into one of any, for testCorrupt's table.
func anySeq[T any](seq iter.Seq2[T, error]) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		for v, err := range seq {
			if !yield(v, err) {
				return
			}
		}
	}
}
