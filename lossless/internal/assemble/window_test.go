package assemble

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// conversation returns a memstore holding conversation c: msgs as context
// items (seq 1, 2, ...), each of tokens tokens, after a summary s (the
// first item) when s.ID is set.
func conversation(t *testing.T, c store.ConvID, s dag.Summary, tokens int, msgs ...core.Message) *memstore.Store {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	err := st.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.PutConversation(c, store.Conversation{Agent: "main", SessionIDs: []string{"s1"}, Created: 7, NextSeq: uint64(len(msgs) + 1)}); err != nil {
			return err
		}
		pos := uint64(1 << 16)
		if s.ID != "" {
			if err := tx.PutSummary(c, s); err != nil {
				return err
			}
			if err := tx.PutItem(c, store.Item{Item: dag.Item{Pos: pos, Ref: dag.SummaryRef(s.ID), Tokens: tokens, Depth: 0}}); err != nil {
				return err
			}
		}
		for i, m := range msgs {
			seq := uint64(i + 1)
			pos += 1 << 16
			if err := tx.PutMessage(c, store.Message{Seq: seq, Role: m.Role(), Timestamp: m.Timestamp(), Hash: records.HashRaw(m.Raw()), Raw: m.Raw(), Tokens: tokens}); err != nil {
				return err
			}
			if err := tx.PutItem(c, store.Item{Item: dag.Item{Pos: pos, Ref: dag.MessageRef(seq), Tokens: tokens, Depth: -1, Role: m.Role()}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestInnerWindow: Inner over a memstore reads the newest items that fit
// the budget (a cut says so), renders the summary, hands back what it
// parsed for the engine's window cache, reuses a cached message instead
// of reading it again, and on a shared store whose conversation is gone
// says so (Gone) and passes the host's messages through.
func TestInnerWindow(t *testing.T) {
	c := store.ConvID{1}
	msgs := []core.Message{core.UserText("q1", 1), core.AssistantText("a1", 2), core.UserText("q2", 3), core.AssistantText("a2", 4)}
	st := conversation(t, c, dag.Summary{ID: "sum_1", Text: "older things", Depth: 0}, 10, msgs...)
	d := Deps{Store: st, Counter: core.Chars4{}, DefaultTokenBudget: 30}
	ctx := context.Background()
	call := &Call{Conv: c, Known: true, Agent: "main"}
	out, err := Inner(ctx, d, call, core.AssembleParams{}, Cached{})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Result.Messages
	if len(got) != 3 || got[1].Text() != "q2" || got[2].Text() != "a2" || out.Result.Cut == nil || out.Result.EstimatedTokens != 30 {
		t.Fatalf("window %d messages, cut %+v, %d tokens", len(got), out.Result.Cut, out.Result.EstimatedTokens)
	}
	if id, ok := recalled.SummaryID(got[0]); !ok || id != "sum_1" {
		t.Fatalf("the leading summary is not kept ahead of the cut window: %q", got[0].Text())
	}
	if out.Next == nil || len(out.Next.Msgs) != 2 || len(out.Next.Sums) != 1 || out.Size <= 0 || out.Gone {
		t.Fatalf("next window %+v, size %d", out.Next, out.Size)
	}

	// A cached message is reused: the cache says seq 4 is another text.
	prev := *out.Next
	prev.Msgs = map[uint64]core.Message{4: core.AssistantText("cached a2", 4)}
	out, err = Inner(ctx, d, call, core.AssembleParams{TokenBudget: 100}, prev)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Result.Messages; len(got) != 5 || got[4].Text() != "cached a2" || out.Result.Cut != nil {
		t.Fatalf("window with the cache: %d messages, cut %+v", len(got), out.Result.Cut)
	}

	// Deleted on a shared store: Gone, the host's messages instead.
	if err := st.Update(ctx, func(tx store.Tx) error { return tx.DeleteConversation(c) }); err != nil {
		t.Fatal(err)
	}
	d.Shared = true
	host := []core.Message{core.UserText("from the host", 9)}
	out, err = Inner(ctx, d, &Call{Conv: c, Known: true, Agent: "main"}, core.AssembleParams{Messages: host}, prev)
	if err != nil || !out.Gone || len(out.Result.Messages) != 1 || out.Result.Messages[0].Text() != "from the host" {
		t.Fatalf("gone: %v %v %d", err, out.Gone, len(out.Result.Messages))
	}
}
