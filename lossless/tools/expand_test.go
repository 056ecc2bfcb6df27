package tools

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// dagFixture is one conversation of agent "a" in a memstore: messages 1-6
// of 10 tokens each (message 6 large content, stored under its key), leaf
// sum_a covering 1-3 in the context, then messages 4-6 as context items.
// A second conversation of agent "a" holds sum_other.
type dagFixture struct {
	st           *memstore.Store
	c, other     store.ConvID
	largeKey     string
	largeMessage []byte
}

func newDagFixture(t *testing.T) dagFixture {
	t.Helper()
	f := dagFixture{st: memstore.New(), c: store.ConvID{7: 1}, other: store.ConvID{7: 2}}
	f.largeMessage = []byte(`{"role":"user","content":"a very large paste"}`)
	h := records.HashMessageRaw(f.largeMessage)
	f.largeKey = records.LargeRefPrefix + hex.EncodeToString(h[:])
	err := f.st.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.PutConversation(f.c, store.Conversation{Agent: "a", NextSeq: 7, Messages: 6, Summaries: 1}); err != nil {
			return err
		}
		for seq := uint64(1); seq <= 6; seq++ {
			raw := []byte(`{"role":"user","content":` + strconv.Quote(fmt.Sprintf("message %d about a zebra", seq)) + `}`)
			if seq == 6 {
				raw = f.largeMessage
			}
			if err := tx.PutMessage(f.c, store.Message{Seq: seq, Timestamp: int64(seq), Role: "user", Tokens: 10, Raw: raw}); err != nil {
				return err
			}
			if seq >= 4 {
				it := dag.Item{Pos: seq * records.PosStep, Ref: dag.MessageRef(seq), Tokens: 10, Depth: -1, Role: "user"}
				if err := tx.PutItem(f.c, store.Item{Item: it}); err != nil {
					return err
				}
			}
		}
		if err := tx.PutHash(f.c, h, 6); err != nil {
			return err
		}
		s := dag.Summary{ID: "sum_a", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1), dag.MessageRef(2), dag.MessageRef(3)},
			Text: "three zebra turns", Tokens: 5, DescendantCount: 3, DescendantTokens: 30}
		if err := tx.PutSummary(f.c, s); err != nil {
			return err
		}
		if err := tx.PutItem(f.c, store.Item{Item: dag.Item{Pos: records.PosStep, Ref: dag.SummaryRef("sum_a"), Tokens: 5}}); err != nil {
			return err
		}
		if err := tx.PutConversation(f.other, store.Conversation{Agent: "a", NextSeq: 1}); err != nil {
			return err
		}
		return tx.PutSummary(f.other, dag.Summary{ID: "sum_other", Kind: dag.KindLeaf, Text: "elsewhere"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f dagFixture) conv() Conv { return NewConv(f.st, f.c) }

// TestDescribe: a summary's description names its sources; a message id
// is refused; a summary id that is not stored is dag.ErrNotFound.
func TestDescribe(t *testing.T) {
	ctx := context.Background()
	f := newDagFixture(t)
	d, err := Describe(ctx, f.conv(), "sum_a")
	if err != nil || d.Summary.ID != "sum_a" || len(d.Summary.Sources) != 3 {
		t.Fatalf("Describe: %+v %v", d, err)
	}
	if _, err := Describe(ctx, f.conv(), MessageID(f.c, 2)); !errors.Is(err, ErrBadArgs) {
		t.Errorf("a message id: %v, want ErrBadArgs", err)
	}
	if _, err := Describe(ctx, f.conv(), "sum_nope"); !errors.Is(err, dag.ErrNotFound) {
		t.Errorf("an unknown summary: %v, want dag.ErrNotFound", err)
	}
	if err := f.conv().Replace(ctx, nil, dag.Summary{}, dag.Item{}); err == nil {
		t.Error("the tools' conversation handle writes")
	}
}

// TestDescribeMessage: a summarised message names its leaf; one in the
// context its position; its text is the plain text.
func TestDescribeMessage(t *testing.T) {
	ctx := context.Background()
	f := newDagFixture(t)
	id := MessageID(f.c, 2)
	c, seq, err := CheckMessageID(id)
	if err != nil || c != f.c || seq != 2 {
		t.Fatalf("CheckMessageID: %v %d %v", c, seq, err)
	}
	d, err := DescribeMessage(ctx, f.conv(), id, seq)
	if err != nil || d.CoveredBy != "sum_a" || d.Active || d.Tokens != 10 || !strings.Contains(d.Text, "message 2 about a zebra") {
		t.Fatalf("summarised message: %+v %v", d, err)
	}
	d, err = DescribeMessage(ctx, f.conv(), MessageID(f.c, 5), 5)
	if err != nil || d.CoveredBy != "" || !d.Active || d.Pos != 5*records.PosStep {
		t.Fatalf("message in the context: %+v %v", d, err)
	}
	if _, _, err := CheckMessageID("sum_a"); !errors.Is(err, ErrBadArgs) {
		t.Errorf("a summary id as a message id: %v", err)
	}
	if _, err := DescribeMessage(ctx, f.conv(), MessageID(f.c, 9), 9); !errors.Is(err, dag.ErrNotFound) {
		t.Errorf("a message that is not stored: %v, want dag.ErrNotFound", err)
	}
}

// TestExpand: a summary expands to the messages it covers, verbatim; a
// message id to it and its neighbours within the budget, then from the
// cursor on; a large-content reference to its one message.
func TestExpand(t *testing.T) {
	ctx := context.Background()
	f := newDagFixture(t)
	page, err := Expand(ctx, f.conv(), ExpandParams{ID: "sum_a"})
	if err != nil || fmt.Sprint(seqsOf(page)) != "[1 2 3]" || page.Total != 3 || page.Tokens != 30 {
		t.Fatalf("summary: %+v %v", page, err)
	}
	id := MessageID(f.c, 3)
	page, err = Expand(ctx, f.conv(), ExpandParams{ID: id, MaxTokens: 30})
	if err != nil || fmt.Sprint(seqsOf(page)) != "[2 3 4]" || page.Offset != 1 || page.Total != 6 || page.NextCursor == "" {
		t.Fatalf("around message 3: %+v %v", page, err)
	}
	cursor := page.NextCursor
	if page, err := Expand(ctx, f.conv(), ExpandParams{ID: id, MaxTokens: 50}); err != nil || fmt.Sprint(seqsOf(page)) != "[1 2 3 4 5]" {
		t.Fatalf("around message 3 in 50 tokens: %+v %v", page, err)
	}
	page, err = Expand(ctx, f.conv(), ExpandParams{ID: id, MaxTokens: 30, Cursor: cursor})
	if err != nil || fmt.Sprint(seqsOf(page)) != "[5 6]" || page.NextCursor != "" {
		t.Fatalf("from the cursor: %+v %v", page, err)
	}
	// Bounded by maxTokens: the message alone, then the pages after it;
	// another id's cursor is refused (moved from package lossless's
	// TestGrepMessageHitsOpen).
	page, err = Expand(ctx, f.conv(), ExpandParams{ID: id, MaxTokens: 1})
	if err != nil || fmt.Sprint(seqsOf(page)) != "[3]" || page.NextCursor == "" {
		t.Fatalf("message 3 in 1 token: %+v %v", page, err)
	}
	if next, err := Expand(ctx, f.conv(), ExpandParams{ID: id, MaxTokens: 200, Cursor: page.NextCursor}); err != nil || len(next.Messages) == 0 || next.Messages[0].Seq != 4 {
		t.Fatalf("from its cursor: %+v %v", next, err)
	}
	if _, err := Expand(ctx, f.conv(), ExpandParams{ID: id, Cursor: "sum_a@1"}); !errors.Is(err, dag.ErrBadCursor) {
		t.Errorf("a message id with another id's cursor: %v", err)
	}
	page, err = Expand(ctx, f.conv(), ExpandParams{ID: f.largeKey})
	if err != nil || fmt.Sprint(seqsOf(page)) != "[6]" || string(page.Messages[0].Message.Raw()) != string(f.largeMessage) {
		t.Fatalf("large content: %+v %v", page, err)
	}
	if !IsLargeRef(f.largeKey) || IsLargeRef("sum_a") {
		t.Error("IsLargeRef")
	}
	if _, _, err := f.conv().MessageByKey(ctx, records.LargeRefPrefix+"00"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("a bad key: %v", err)
	}
	if _, err := Expand(ctx, f.conv(), ExpandParams{ID: MessageID(f.c, 7)}); !errors.Is(err, dag.ErrNotFound) {
		t.Errorf("a message past the last: %v", err)
	}
}

// TestHolding: Holds finds a summary in its conversation only;
// AgentHolding finds it among the agent's conversations, not another
// agent's.
func TestHolding(t *testing.T) {
	ctx := context.Background()
	f := newDagFixture(t)
	if ok, err := Holds(ctx, f.st, f.c, "sum_a"); err != nil || !ok {
		t.Errorf("Holds sum_a: %v %v", ok, err)
	}
	if ok, err := Holds(ctx, f.st, f.c, "sum_other"); err != nil || ok {
		t.Errorf("Holds sum_other: %v %v", ok, err)
	}
	if c, ok, err := AgentHolding(ctx, f.st, "a", "sum_other"); err != nil || !ok || c != f.other {
		t.Errorf("AgentHolding: %v %v %v", c, ok, err)
	}
	if _, ok, err := AgentHolding(ctx, f.st, "b", "sum_other"); err != nil || ok {
		t.Errorf("another agent's: %v %v", ok, err)
	}
}

func seqsOf(p ExpandPage) []uint64 {
	var out []uint64
	for _, m := range p.Messages {
		out = append(out, m.Seq)
	}
	return out
}
