package records

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// TestCheckNext: each disagreement of a record with what is stored beyond
// it is refused with store.ErrCorrupt naming it; a record that agrees is
// not.
func TestCheckNext(t *testing.T) {
	c := store.ConvID{1, 2, 3, 4, 5, 6, 7, 8}
	rec := store.Conversation{Agent: "main", NextSeq: 3, NextPos: 3 * PosStep, Messages: 2}
	msg := func(seq uint64) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			return tx.PutMessage(c, store.Message{Seq: seq, Role: "user", Tokens: 1, Raw: []byte(`{"role":"user","content":"x"}`)})
		}
	}
	item := func(pos uint64, ref dag.Ref) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			return tx.PutItem(c, store.Item{Item: dag.Item{Pos: pos, Ref: ref, Depth: -1}})
		}
	}
	sum := func(tx store.Tx) error {
		return tx.PutSummary(c, dag.Summary{ID: "sum_a", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1)}, Text: "s", DescendantCount: 1})
	}
	for _, tc := range []struct {
		name   string
		rec    func(store.Conversation) store.Conversation
		writes []func(tx store.Tx) error
		want   string // "" when the record agrees
	}{
		{name: "agrees", writes: []func(store.Tx) error{msg(1), msg(2), item(PosStep, dag.MessageRef(1)), item(2*PosStep, dag.MessageRef(2))}},
		{name: "agrees with its summary", rec: func(r store.Conversation) store.Conversation { r.Summaries = 1; return r },
			writes: []func(store.Tx) error{msg(1), msg(2), sum, item(PosStep, dag.SummaryRef("sum_a")), item(2*PosStep, dag.MessageRef(2))}},
		{name: "message at next seq", writes: []func(store.Tx) error{msg(1), msg(2), msg(3)}, want: "message 3 (user, 1 tokens) is stored there"},
		{name: "item at next position", writes: []func(store.Tx) error{msg(1), msg(2), item(3*PosStep, dag.MessageRef(2))},
			want: "a context item (message 2) is stored at its next position 196608"},
		{name: "summary while it counts none", writes: []func(store.Tx) error{msg(1), msg(2), sum},
			want: "it counts no summary, and summary sum_a (depth 0, 1 messages) is stored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New()
			r := rec
			if tc.rec != nil {
				r = tc.rec(r)
			}
			err := st.Update(ctx, func(tx store.Tx) error {
				for _, w := range tc.writes {
					if err := w(tx); err != nil {
						return err
					}
				}
				return tx.PutConversation(c, r)
			})
			if err != nil {
				t.Fatal(err)
			}
			err = st.View(ctx, func(rd store.Reader) error { return CheckNext(rd, c, r) })
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("a record that agrees: %v", err)
			case tc.want == "":
			case !errors.Is(err, store.ErrCorrupt):
				t.Fatalf("%v, want store.ErrCorrupt", err)
			case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), c.String()):
				t.Fatalf("error %q does not say %q and the conversation", err, tc.want)
			}
		})
	}
}
