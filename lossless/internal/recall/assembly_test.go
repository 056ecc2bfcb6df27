package recall

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// mapNames is Names over a map (the engine's is its state cache).
type mapNames map[store.ConvID]string

func (m mapNames) Name(c store.ConvID) (string, bool)  { n, ok := m[c]; return n, ok }
func (m mapNames) SetName(c store.ConvID, name string) { m[c] = name }

var (
	here  = store.ConvID{1}
	other = store.ConvID{2}
)

// indexed returns Deps over a memstore holding conversation other (agent
// "main", session "s-old") of msgs and an empty conversation here, and a
// Bleve recall index built from it.
func indexed(t *testing.T, msgs ...core.Message) Deps {
	t.Helper()
	ctx := context.Background()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	err := st.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutConversation(here, store.Conversation{Agent: "main", SessionIDs: []string{"s-now"}, NextSeq: 1}); err != nil {
			return err
		}
		rec := store.Conversation{Agent: "main", SessionIDs: []string{"s-old"}, NextSeq: uint64(len(msgs) + 1), Messages: int64(len(msgs))}
		if err := tx.PutConversation(other, rec); err != nil {
			return err
		}
		for i, m := range msgs {
			seq := uint64(i + 1)
			if err := tx.PutMessage(other, store.Message{Seq: seq, Role: m.Role(), Timestamp: m.Timestamp(), Hash: records.HashRaw(m.Raw()), Raw: m.Raw()}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := OpenBleve(ctx, filepath.Join(t.TempDir(), "index"), st, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return Deps{Counter: core.Chars4{}, Store: st, Index: ix, Names: mapNames{}}
}

// history is the other conversation: turns about a zebra crossing, each
// about words long, then small talk.
func history(words int) []core.Message {
	var out []core.Message
	for i := range 6 {
		text := fmt.Sprintf("The zebra crossing project deadline is March %d, the council said.", i+1)
		text += strings.Repeat(" paint", words)
		out = append(out, core.UserText(text, int64(1000+i)))
	}
	return append(out, core.UserText("what a nice morning for a walk", 2000), core.AssistantText("indeed, sunny and warm", 2001))
}

// window is an assembled window of n tokens holding one message.
func window(n int) core.AssembleResult {
	return core.AssembleResult{Messages: []core.Message{core.UserText("current turn", 5000)}, EstimatedTokens: n}
}

// TestAssemblyInjects: a task's prompt keeps the base split: recall asks
// for one window within the budget less its share, ranks the other
// conversation's turns through a real index, reads them from the store
// and appends one block naming their session (cached in Names), within
// its share; the report says injected.
func TestAssemblyInjects(t *testing.T) {
	d := indexed(t, history(0)...)
	ctx := context.Background()
	det := &recalled.Details{}
	ctx = recalled.WithDetails(ctx, det)
	call := &Call{Params: core.AssembleParams{Prompt: "the zebra crossing project deadline the council said"}, Budget: 2000, Agent: "main", Conv: here, Known: true}
	a, p, ok := Begin(ctx, d, call)
	if !ok || p.TokenBudget != 1800 {
		t.Fatalf("Begin: ok %v, window budget %d (want 1800)", ok, p.TokenBudget)
	}
	if _, more := a.Window(ctx, Window{Result: window(500)}); more {
		t.Fatal("a task asked for a second window")
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 || !recalled.IsMessage(res.Messages[1]) {
		t.Fatalf("no recall block: %d messages", len(res.Messages))
	}
	block := res.Messages[1].Text()
	if !strings.Contains(block, "zebra crossing project deadline") || !strings.Contains(block, "s-old") {
		t.Fatalf("block without the recalled turns or their session:\n%s", block)
	}
	n := core.CountMessage(d.Counter, res.Messages[1])
	if n > 200 || res.EstimatedTokens != 500+n {
		t.Fatalf("block of %d tokens (share 200), result %d tokens", n, res.EstimatedTokens)
	}
	if name, ok := d.Names.Name(other); !ok || name != "s-old" {
		t.Fatalf("name not cached: %q %v", name, ok)
	}
	if det.Recall.Status != recalled.Injected || det.Recall.Items == 0 {
		t.Fatalf("report %+v", det.Recall)
	}
}

// TestAssemblySplitsForQuestion: a question about the past whose recalled
// turns need more than the probe's window leaves asks for a second,
// smaller window and gives the block the room it leaves; when that
// window fails, the probe's split stands.
func TestAssemblySplitsForQuestion(t *testing.T) {
	d := indexed(t, history(60)...)
	ctx := context.Background()
	call := &Call{Params: core.AssembleParams{Prompt: "When did the council set the zebra crossing project deadline?"}, Budget: 2000, Agent: "main", Conv: here, Known: true}
	for _, fail := range []bool{false, true} {
		a, p, ok := Begin(ctx, d, call)
		if !ok {
			t.Fatal("recall off")
		}
		p, more := a.Window(ctx, Window{Result: window(p.TokenBudget)})
		if !more || p.TokenBudget >= 1800 || p.TokenBudget <= 2000-maxQuestionRoom {
			t.Fatalf("the question's split: more %v, budget %d", more, p.TokenBudget)
		}
		w := Window{Result: window(p.TokenBudget)}
		if fail {
			w = Window{Err: errors.New("window failed")}
		}
		if _, more := a.Window(ctx, w); more {
			t.Fatal("a third window")
		}
		res, err := a.Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 2 || !recalled.IsMessage(res.Messages[1]) {
			t.Fatalf("fail %v: no block", fail)
		}
		n := core.CountMessage(d.Counter, res.Messages[1])
		switch {
		case !fail && (n <= 200 || res.EstimatedTokens > 2000):
			t.Fatalf("split block of %d tokens, result %d", n, res.EstimatedTokens)
		case fail && (n > 200 || res.EstimatedTokens != 1800+n):
			t.Fatalf("base split block of %d tokens, result %d", n, res.EstimatedTokens)
		}
	}
}

// TestAssemblyOff: recall off or no prompt: no Assembly, the report says
// why; no room: the window alone; a failing first window fails the call;
// recall messages the host handed back are dropped from the window's
// input.
func TestAssemblyOff(t *testing.T) {
	d := indexed(t, history(0)...)
	det := &recalled.Details{}
	ctx := recalled.WithDetails(context.Background(), det)
	off := false
	for _, c := range []struct {
		cfg    config.Recall
		prompt string
	}{{config.Recall{Enabled: &off}, "zebra"}, {config.Recall{}, " "}} {
		d := d
		d.Config = c.cfg
		if _, _, ok := Begin(ctx, d, &Call{Params: core.AssembleParams{Prompt: c.prompt}, Budget: 100}); ok || det.Recall.Status != recalled.Off {
			t.Fatalf("%+v %q: ok %v, %+v", c.cfg, c.prompt, ok, det.Recall)
		}
	}
	old := core.UserText(recalled.Head+" x]\n"+recalled.Close, 7)
	a, p, _ := Begin(ctx, d, &Call{Params: core.AssembleParams{Prompt: "zebra", Messages: []core.Message{core.UserText("hi", 1), old}}, Budget: 5})
	if len(p.Messages) != 1 {
		t.Fatalf("recall message handed to the window: %d messages", len(p.Messages))
	}
	a.Window(ctx, Window{Result: window(3)})
	if res, err := a.Result(); err != nil || len(res.Messages) != 1 || det.Recall.Status != recalled.Off {
		t.Fatalf("no room: %d messages, %v, %+v", len(res.Messages), err, det.Recall)
	}
	a, _, _ = Begin(ctx, d, &Call{Params: core.AssembleParams{Prompt: "zebra"}, Budget: 1000})
	boom := errors.New("boom")
	a.Window(ctx, Window{Err: boom})
	if _, err := a.Result(); !errors.Is(err, boom) {
		t.Fatalf("first window's error: %v", err)
	}
}
