package recall

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// Render over a memstore (moved from package lossless's white-box tests,
// which reached it through the engine).

// storeTurns stores conversation c (session key "agent:main:old") of
// turns texts stamped stamps (user first, then alternating) in a memstore
// and returns Deps over it and its items by seq (1-based).
func storeTurns(t *testing.T, c store.ConvID, texts []string, stamps []int64) (Deps, map[uint64]recalled.Item) {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	items := map[uint64]recalled.Item{}
	err := st.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.PutConversation(c, store.Conversation{Agent: "main", Key: "agent:main:old", SessionIDs: []string{"old"}, NextSeq: uint64(len(texts) + 1)}); err != nil {
			return err
		}
		for i, s := range texts {
			m := core.UserText(s, stamps[i])
			if i%2 == 1 {
				m = core.AssistantText(s, stamps[i])
			}
			seq := uint64(i + 1)
			if err := tx.PutMessage(c, store.Message{Seq: seq, Role: m.Role(), Timestamp: stamps[i], Hash: records.HashRaw(m.Raw()), Raw: m.Raw()}); err != nil {
				return err
			}
			items[seq] = recalled.Item{ID: MessageDocID(c, seq), Kind: index.KindMessage, Conversation: c.String(), Seq: seq,
				Role: m.Role(), Timestamp: stamps[i]}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return Deps{Counter: core.Chars4{}, Store: st, Names: mapNames{}}, items
}

// renderFixture stores one conversation of eight turns, a second apart,
// but turn 6 two hours after turn 5 and turn 8 a long one (storeTurns).
func renderFixture(t *testing.T) (Deps, string, map[uint64]recalled.Item) {
	t.Helper()
	const t0 = int64(1_700_000_000_000)
	stamps := []int64{t0, t0 + 1000, t0 + 2000, t0 + 3000, t0 + 4000, t0 + 2*3600_000, t0 + 2*3600_000 + 1000, t0 + 2*3600_000 + 2000}
	texts := []string{
		"We adopted a dog in May.", "What is its name?", "Her name is Biscuit.", "Cute! What breed?",
		"A beagle mix from the shelter.", "Later that day we went to the lake.", "Did Biscuit swim?",
		strings.Repeat("She swam for hours, chasing sticks and ducks along the shore while we watched. ", 20),
	}
	c := store.ConvID{3}
	d, items := storeTurns(t, c, texts, stamps)
	return d, c.String(), items
}

// render renders items as Assemble does (Render, no grep tool).
func render(ctx context.Context, d Deps, items []recalled.Item, citations string, max int) (core.Message, int, error) {
	return Render(ctx, d, items, citations, "", max, 1, "", nil)
}

// TestRecallRunsShareAnItem: adjacent turns of a conversation close in
// time share one <item> whose id names the range, in seq order whatever
// the ranking's order; a turn hours later, or not adjacent, starts its
// own; the time is shown to the minute. The block costs fewer tokens than
// one <item> per turn (#28).
func TestRecallRunsShareAnItem(t *testing.T) {
	d, conv, it := renderFixture(t)
	ctx := context.Background()
	ranked := []recalled.Item{it[3], it[2], it[4], it[6], it[7], it[1]}
	m, n, err := render(ctx, d, ranked, "", 4000)
	if err != nil || n == 0 {
		t.Fatal(n, err)
	}
	text := m.Text()
	for _, want := range []string{
		`<item id="` + conv + `:1-4" session="agent:main:old" time="2023-11-14T22:13Z">` + "\nuser: We adopted a dog in May.\nassistant: What is its name?\nuser: Her name is Biscuit.\nassistant: Cute! What breed?\n</item>\n",
		// Two hours after turn 5 (not chosen) and turn 4: an item of its own.
		`<item id="` + conv + `:6-7" session="agent:main:old" time="2023-11-15T00:13Z">` + "\nassistant: Later that day we went to the lake.\nuser: Did Biscuit swim?\n</item>\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("block lacks %q:\n%s", want, text)
		}
	}
	if got := strings.Count(text, "<item "); got != 2 {
		t.Errorf("%d items, want 2:\n%s", got, text)
	}
	// The same turns one <item> each (as before runs): more tokens.
	var each int
	for _, x := range ranked {
		_, k, err := render(ctx, d, []recalled.Item{x}, "", 4000)
		if err != nil {
			t.Fatal(err)
		}
		each += k - d.Counter.CountText(recalled.Head) // the head once
	}
	if n >= each {
		t.Errorf("the block of runs takes %d tokens, one block per turn %d", n, each)
	}
	// Citations off: no ids, the runs stay.
	m, _, err = render(ctx, d, ranked, core.CitationsOff, 4000)
	if err != nil || strings.Contains(m.Text(), "id=") || strings.Count(m.Text(), "<item ") != 2 {
		t.Errorf("citations off: %v\n%s", err, m.Text())
	}
}

// TestRecallPassesOverWhatDoesNotFit: a turn too long for the room left is
// passed over for the shorter ones ranked after it, and cut into what room
// remains at the end; the best item is cut rather than passed over.
func TestRecallPassesOverWhatDoesNotFit(t *testing.T) {
	d, conv, it := renderFixture(t)
	ctx := context.Background()
	// Room for turns 1 and 3 and some 80 tokens more, not for the long
	// turn 8 (some 340 tokens) whole.
	_, short, err := render(ctx, d, []recalled.Item{it[1], it[3]}, "", 4000)
	if err != nil {
		t.Fatal(err)
	}
	max := short + 80
	m, n, err := render(ctx, d, []recalled.Item{it[1], it[8], it[3]}, "", max)
	if err != nil || n == 0 || n > max {
		t.Fatalf("%d tokens (max %d), %v", n, max, err)
	}
	text := m.Text()
	if !strings.Contains(text, "Her name is Biscuit.") {
		t.Errorf("turn 3, ranked after the long turn 8, was not shown:\n%s", text)
	}
	if !strings.Contains(text, "She swam for hours") || strings.Count(text, "She swam for hours") == 20 {
		t.Errorf("the long turn is not cut into the room left:\n%s", text)
	}
	if strings.Index(text, conv+":1") > strings.Index(text, conv+":8") {
		t.Errorf("items out of seq order:\n%s", text)
	}
	// Best first and too long: cut, not passed over.
	m, _, err = render(ctx, d, []recalled.Item{it[8], it[3]}, "", max)
	if err != nil || !strings.Contains(m.Text(), "She swam for hours") {
		t.Errorf("the best item was passed over: %v\n%s", err, m.Text())
	}
}

// countingCounter counts the texts holding needle that it counts.
type countingCounter struct {
	core.TokenCounter
	needle string
	n      int
}

func (c *countingCounter) CountText(s string) int {
	if strings.Contains(s, c.needle) {
		c.n++
	}
	return c.TokenCounter.CountText(s)
}

// TestRecallBlockRenderedOnce: the question split sizes the recall block
// and then renders it (the question path's CPU at 100K messages is mostly
// rendering and counting). Within one call, an item's text is counted
// once, and a block rendered whole is returned again, uncounted, for the
// same items when it fits; a smaller room renders afresh, within it.
// (Moved from package lossless, where it ran through the engine.)
func TestRecallBlockRenderedOnce(t *testing.T) {
	ctx := context.Background()
	var texts []string
	var stamps []int64
	for i := range 6 {
		texts = append(texts, fmt.Sprintf("Project %d had the code word courier-%d for its releases, and more words around it.", i, i))
		stamps = append(stamps, int64(1_700_000_000_000+i*7_200_000)) // two hours apart: an item each
	}
	here := store.ConvID{4}
	d, byseq := storeTurns(t, here, texts, stamps)
	var items []recalled.Item
	for seq := uint64(1); seq <= 6; seq++ {
		items = append(items, byseq[seq])
	}
	cc := &countingCounter{TokenCounter: d.Counter, needle: "courier"}
	d.Counter = cc
	bodies := &Bodies{}
	first, n1, err := Render(ctx, d, items, core.CitationsOn, "lcm_grep", 4000, 0, here.String(), bodies)
	if err != nil || n1 == 0 {
		t.Fatalf("first render: %d tokens, %v", n1, err)
	}
	counted := cc.n
	if counted != len(items)+1 {
		t.Fatalf("the first render counted %d texts holding the items, want %d (each item, then the block)", counted, len(items)+1)
	}
	again, n2, err := Render(ctx, d, items, core.CitationsOn, "lcm_grep", 8000, 42, here.String(), bodies)
	if err != nil {
		t.Fatal(err)
	}
	if cc.n != counted || n2 != n1 || again.Text() != first.Text() || again.Timestamp() != 42 {
		t.Fatalf("rendering the same items again counted %d more texts (%d tokens, was %d; same text %v; timestamp %d): want the block rendered whole reused",
			cc.n-counted, n2, n1, again.Text() == first.Text(), again.Timestamp())
	}
	small, n3, err := Render(ctx, d, items, core.CitationsOn, "lcm_grep", n1-20, 0, here.String(), bodies)
	if err != nil {
		t.Fatal(err)
	}
	if n3 == 0 || n3 > n1-20 || small.Text() == first.Text() {
		t.Fatalf("a room of %d tokens got a block of %d (the whole one is %d)", n1-20, n3, n1)
	}
	// Other items (the split ranks again against a smaller window): the
	// block is counted, its items' texts are not again.
	before := cc.n
	fewer, n4, err := Render(ctx, d, items[1:], core.CitationsOn, "lcm_grep", 8000, 0, here.String(), bodies)
	if err != nil || n4 == 0 || n4 >= n1 {
		t.Fatalf("a block of %d items: %d tokens (%v), the whole one %d", len(items)-1, n4, err, n1)
	}
	if got := cc.n - before; got != 1 {
		t.Fatalf("rendering %d of the items again counted %d texts holding them, want 1 (the block): %.80s", len(items)-1, got, fewer.Text())
	}
}

// TestIsRecallMessage: nothing to render is no message; a rendered block
// (the grep tool named) is a recall message, also as string content,
// behind a host's stamp or with trailing space; not from an assistant,
// not quoted, not unclosed. Moved from package lossless, where the items
// were ranked through the engine.
func TestIsRecallMessage(t *testing.T) {
	d, _, items := renderFixture(t)
	ctx := context.Background()
	m, n, err := Render(ctx, d, nil, "", "", 1000, 1, "", nil)
	if err != nil || n != 0 || !m.IsZero() {
		t.Fatal("rendered an empty recall")
	}
	if m, _, err = Render(ctx, d, []recalled.Item{items[1], items[3]}, "", "lcm_grep", 4000, 1_700_000_000_000, "", nil); err != nil {
		t.Fatal(err)
	}
	text := m.Text()
	for name, c := range map[string]struct {
		m    core.Message
		want bool
	}{
		"rendered":        {m, true},
		"string content":  {core.MustParseMessage(fmt.Sprintf(`{"role":"user","content":%q}`, text)), true},
		"host stamp":      {core.UserText("[Mon 2026-11-30 10:00 UTC] "+text, 1), true},
		"trailing spaces": {core.UserText(text+"\n", 1), true},
		"assistant":       {core.AssistantText(text, 1), false},
		"quoted":          {core.UserText("what does <lcm_recall> mean in "+text, 1), false},
		"unclosed":        {core.UserText(strings.TrimSuffix(text, "</lcm_recall>"), 1), false},
		"plain":           {core.UserText("hello", 1), false},
	} {
		if got := recalled.IsMessage(c.m); got != c.want {
			t.Errorf("%s: IsMessage = %v", name, got)
		}
	}
}
