package assemble

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

func msg(t *testing.T, role, text string) core.Message {
	t.Helper()
	m, err := core.NewMessage(map[string]any{"role": role, "content": []core.Block{{Type: core.BlockText, Text: text}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestInnerUnknownPassesThrough: a session the engine never stored gets
// the host's messages, newest kept within the budget, without a tool
// result left leading at the cut.
func TestInnerUnknownPassesThrough(t *testing.T) {
	msgs := []core.Message{msg(t, core.RoleUser, "first question, long enough to weigh"),
		msg(t, core.RoleToolResult, "a tool result"), msg(t, core.RoleUser, "q2"), msg(t, core.RoleAssistant, "a2")}
	tc := core.Chars4{}
	last2 := core.CountMessages(tc, msgs[2:])
	budget := last2 + core.CountMessage(tc, msgs[1])
	out, err := Inner(context.Background(), Deps{DefaultTokenBudget: budget, Counter: tc}, &Call{}, core.AssembleParams{Messages: msgs}, Cached{})
	if err != nil {
		t.Fatal(err)
	}
	res := out.Result
	if len(res.Messages) != 2 || res.EstimatedTokens != last2 || res.PromptAuthority != core.PromptAuthorityAssembled {
		t.Fatalf("%d messages, %d tokens (want 2, %d)", len(res.Messages), res.EstimatedTokens, last2)
	}
}

// TestWalk: the walk reads newest first within the budget, skips hidden
// items, stops at the first item that does not fit, and Chronological
// drops the tool result whose call the cut left out.
func TestWalk(t *testing.T) {
	var items []store.Item
	roles := []string{core.RoleUser, core.RoleAssistant, core.RoleToolResult, core.RoleUser, core.RoleAssistant}
	for i, r := range roles {
		it := store.Item{Item: dag.Item{Ref: dag.MessageRef(uint64(i + 1)), Tokens: 10, Role: r}}
		if i == 3 {
			it.Flags = store.FlagHidden
		}
		items = append(items, it)
	}
	rev := func(yield func(store.Item, error) bool) {
		for _, it := range slices.Backward(items) {
			if !yield(it, nil) {
				return
			}
		}
	}
	var visited []uint64
	w, err := Walk(context.Background(), rev, 25, "test", func(i int, item dag.Item, _ byte) (core.Message, error) {
		visited = append(visited, item.Ref.Seq)
		return msg(t, item.Role, fmt.Sprint(item.Ref.Seq)), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(visited, []uint64{5, 3}) || w.Cut != 10 || w.Used != 20 || w.Scanned != 4 {
		t.Fatalf("visited %v, cut %d, used %d, scanned %d", visited, w.Cut, w.Used, w.Scanned)
	}
	out, used := w.Chronological()
	if len(out) != 1 || out[0].Role() != core.RoleAssistant || used != 10 {
		t.Fatalf("chronological: %d messages, %d tokens", len(out), used)
	}
}

// state is a cached state of the cache tests.
type state struct{ id int }

// TestCacheBound: the cache keeps its states within its budget (the most
// recent one always stays, the least recently used go first, with their
// resolutions), and its accounting adds up.
func TestCacheBound(t *testing.T) {
	states := map[int]*state{}
	c := NewCache(states, 3*stateBaseBytes, func(k int) *state { return &state{id: k} })
	first := c.State(0)
	for i := 0; i < 10; i++ {
		c.State(i)
		c.Resolve(fmt.Sprint("k", i), i)
	}
	if _, ok := states[0]; ok {
		t.Fatal("the least recently used state was kept over the budget")
	}
	if _, ok := c.Resolved("k0"); ok {
		t.Fatal("an evicted state's resolution was kept")
	}
	if c.State(0) == first {
		t.Fatal("an evicted state came back")
	}
	if _, ok := c.Resolved("k9"); !ok || c.Len() > 3 || c.Bytes() > 3*stateBaseBytes {
		t.Fatalf("%d states of %d bytes, the newest resolved: %v", c.Len(), c.Bytes(), ok)
	}
	c.SetName(9, "nine")
	if n, ok := c.Name(9); !ok || n != "nine" {
		t.Fatalf("name %q %v", n, ok)
	}
	c.Forget(9)
	v := c.Inspect()
	var sum int64
	for _, en := range v.Entries {
		sum += en.Cost
	}
	if _, ok := c.Resolved("k9"); ok || sum != v.Bytes || v.Listed != v.States || v.States != len(states) {
		t.Fatalf("after Forget: %+v, sum %d", v, sum)
	}
	// One state alone over the budget stays (the most recent one).
	one := NewCache(map[int]*state{}, 1, func(k int) *state { return &state{id: k} })
	s := one.State(1)
	if one.Len() != 1 || one.State(1) != s {
		t.Fatalf("the most recent state was not kept: %d states", one.Len())
	}
}
