// Package storetest is a reusable contract test suite for dag.Store
// implementations. A backend's test calls Run with a constructor of fresh,
// empty stores:
//
//	func TestStoreContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) (dag.Store, storetest.AppendFunc) {
//			st := openMyStore(t)
//			return st, st.appendForTest
//		})
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
)

// AppendFunc appends a raw message to the store's conversation (role, its
// text as the summarizer should see it, its token count and Unix-ms
// timestamp), adds its context item at the end, and returns its sequence
// number.
type AppendFunc func(ctx context.Context, role, text string, tokens int, timestamp int64) (uint64, error)

// NewStoreFunc returns a fresh, empty store for one conversation and the
// function that appends messages to it. Cleanup is the caller's (t.Cleanup).
type NewStoreFunc func(t *testing.T) (dag.Store, AppendFunc)

// Run runs every contract test against stores made by newStore.
func Run(t *testing.T, newStore NewStoreFunc) {
	t.Run("Empty", func(t *testing.T) { testEmpty(t, newStore) })
	t.Run("AppendAndRead", func(t *testing.T) { testAppendAndRead(t, newStore) })
	t.Run("MessageMeta", func(t *testing.T) { testMessageMeta(t, newStore) })
	t.Run("ReplaceRoundTrip", func(t *testing.T) { testReplaceRoundTrip(t, newStore) })
	t.Run("ReplaceConflict", func(t *testing.T) { testReplaceConflict(t, newStore) })
	t.Run("ConcurrentReplace", func(t *testing.T) { testConcurrentReplace(t, newStore) })
	t.Run("CompactExpandCheck", func(t *testing.T) { testCompactExpandCheck(t, newStore) })
}

func fill(t *testing.T, app AppendFunc, n int) []uint64 {
	t.Helper()
	var seqs []uint64
	roles := []string{"user", "assistant", "toolResult"}
	for i := 0; i < n; i++ {
		role := roles[i%len(roles)]
		text := fmt.Sprintf("%s message %d: %s", role, i, strings.Repeat("lorem ipsum ", 5+i%7))
		seq, err := app(context.Background(), role, text, 10+i%7, 1_700_000_000_000+int64(i)*1000)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if len(seqs) > 0 && seq <= seqs[len(seqs)-1] {
			t.Fatalf("append %d: seq %d not after %d", i, seq, seqs[len(seqs)-1])
		}
		seqs = append(seqs, seq)
	}
	return seqs
}

func items(t *testing.T, st dag.Store) []dag.Item {
	t.Helper()
	its, err := st.Items(context.Background())
	if err != nil {
		t.Fatalf("Items: %v", err)
	}
	return its
}

func testEmpty(t *testing.T, newStore NewStoreFunc) {
	st, _ := newStore(t)
	ctx := context.Background()
	if its := items(t, st); len(its) != 0 {
		t.Fatalf("empty store has %d items", len(its))
	}
	if _, err := st.Summary(ctx, "sum_nope"); !errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("Summary of unknown id: want ErrNotFound, got %v", err)
	}
	if _, err := st.MessageText(ctx, 12345); !errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("MessageText of unknown seq: want ErrNotFound, got %v", err)
	}
}

func testAppendAndRead(t *testing.T, newStore NewStoreFunc) {
	st, app := newStore(t)
	ctx := context.Background()
	text := "user says: héllo 世界 \"quoted\" \\ back\nslash"
	seq, err := app(ctx, "user", text, 7, 1_700_000_000_123)
	if err != nil {
		t.Fatal(err)
	}
	seqs := append([]uint64{seq}, fill(t, app, 20)...)
	its := items(t, st)
	if len(its) != len(seqs) {
		t.Fatalf("%d items for %d messages", len(its), len(seqs))
	}
	for i, it := range its {
		if i > 0 && it.Pos <= its[i-1].Pos {
			t.Fatalf("item %d: position %d not after %d", i, it.Pos, its[i-1].Pos)
		}
		if it.Ref != dag.MessageRef(seqs[i]) || it.Depth != -1 || it.IsSummary() {
			t.Fatalf("item %d: %+v, want raw message %d with depth -1", i, it, seqs[i])
		}
	}
	if its[0].Tokens != 7 || its[0].Timestamp != 1_700_000_000_123 || its[0].Role != "user" {
		t.Fatalf("item 0 = %+v, want tokens 7, timestamp 1700000000123, role user", its[0])
	}
	got, err := st.MessageText(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "héllo 世界") {
		t.Fatalf("MessageText = %q, want the message's text", got)
	}
	if err := dag.Check(ctx, st, seqs); err != nil {
		t.Fatal(err)
	}
}

func testMessageMeta(t *testing.T, newStore NewStoreFunc) {
	st, app := newStore(t)
	mr, ok := st.(dag.MessageMetaReader)
	if !ok {
		t.Skip("store does not implement dag.MessageMetaReader (Check cannot verify leaf roll-ups)")
	}
	seq, err := app(context.Background(), "assistant", "hi", 42, 1_700_000_000_999)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mr.MessageMeta(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	if m.Seq != seq || m.Tokens != 42 || m.Timestamp != 1_700_000_000_999 || m.Role != "assistant" {
		t.Fatalf("MessageMeta = %+v", m)
	}
	if _, err := mr.MessageMeta(context.Background(), seq+1000); !errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("MessageMeta of unknown seq: want ErrNotFound, got %v", err)
	}
}

// leafOver builds a valid leaf summary over its[a:b].
func leafOver(id string, its []dag.Item) (dag.Summary, dag.Item) {
	s := dag.Summary{ID: id, Kind: dag.KindLeaf, Text: "summary " + id + " ✓", Tokens: 3,
		Earliest: its[0].Timestamp, Latest: its[len(its)-1].Timestamp, DescendantCount: len(its),
		CreatedAt: 1_800_000_000_000, Method: "normal"}
	for _, it := range its {
		s.Sources = append(s.Sources, it.Ref)
		s.DescendantTokens += it.Tokens
	}
	return s, dag.Item{Pos: its[0].Pos, Ref: dag.SummaryRef(id), Tokens: s.Tokens, Depth: 0, Timestamp: s.Latest}
}

func testReplaceRoundTrip(t *testing.T, newStore NewStoreFunc) {
	st, app := newStore(t)
	ctx := context.Background()
	seqs := fill(t, app, 10)
	before := items(t, st)
	s, it := leafOver("sum_rt1", before[2:5])
	if err := st.Replace(ctx, before[2:5], s, it); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	after := items(t, st)
	want := append(append(append([]dag.Item(nil), before[:2]...), it), before[5:]...)
	if !reflect.DeepEqual(after, want) {
		t.Fatalf("items after Replace:\n got %+v\nwant %+v (positions must not be renumbered)", after, want)
	}
	got, err := st.Summary(ctx, "sum_rt1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("Summary round trip:\n got %+v\nwant %+v", got, s)
	}
	// A condensed summary over two leaves.
	after = items(t, st)
	s2, it2 := leafOver("sum_rt2", after[3:6])
	if err := st.Replace(ctx, after[3:6], s2, it2); err != nil {
		t.Fatal(err)
	}
	after = items(t, st)
	c := dag.Summary{ID: "sum_rt3", Kind: dag.KindCondensed, Depth: 1, Text: "both", Tokens: 2,
		Sources: []dag.Ref{dag.SummaryRef("sum_rt1"), dag.SummaryRef("sum_rt2")}, Earliest: s.Earliest, Latest: s2.Latest,
		DescendantCount: s.DescendantCount + s2.DescendantCount, DescendantTokens: s.DescendantTokens + s2.DescendantTokens, Method: "aggressive"}
	cit := dag.Item{Pos: after[2].Pos, Ref: dag.SummaryRef(c.ID), Tokens: 2, Depth: 1, Timestamp: c.Latest}
	if err := st.Replace(ctx, after[2:4], c, cit); err != nil {
		t.Fatal(err)
	}
	if err := dag.Check(ctx, st, seqs); err != nil {
		t.Fatal(err)
	}
	// Appending after replacements keeps positions growing.
	more := fill(t, app, 2)
	its := items(t, st)
	if last := its[len(its)-1]; last.Ref != dag.MessageRef(more[1]) || last.Pos <= its[len(its)-2].Pos {
		t.Fatalf("append after Replace: %+v", its)
	}
	if err := dag.Check(ctx, st, append(seqs, more...)); err != nil {
		t.Fatal(err)
	}
}

func testReplaceConflict(t *testing.T, newStore NewStoreFunc) {
	st, app := newStore(t)
	ctx := context.Background()
	seqs := fill(t, app, 8)
	its := items(t, st)
	s, it := leafOver("sum_c1", its[1:4])
	if err := st.Replace(ctx, its[1:4], s, it); err != nil {
		t.Fatal(err)
	}
	// The same, now stale, items again.
	s2, it2 := leafOver("sum_c2", its[1:4])
	if err := st.Replace(ctx, its[1:4], s2, it2); !errors.Is(err, dag.ErrConflict) {
		t.Fatalf("stale Replace: want ErrConflict, got %v", err)
	}
	// Overlapping the replaced range.
	s3, it3 := leafOver("sum_c3", its[3:6])
	if err := st.Replace(ctx, its[3:6], s3, it3); !errors.Is(err, dag.ErrConflict) {
		t.Fatalf("overlapping Replace: want ErrConflict, got %v", err)
	}
	// A wrong ref at a right position.
	cur := items(t, st)
	bad := append([]dag.Item(nil), cur[2:4]...)
	bad[1].Ref = dag.MessageRef(999)
	s4, it4 := leafOver("sum_c4", bad)
	if err := st.Replace(ctx, bad, s4, it4); !errors.Is(err, dag.ErrConflict) {
		t.Fatalf("wrong-ref Replace: want ErrConflict, got %v", err)
	}
	if !reflect.DeepEqual(items(t, st), cur) {
		t.Fatal("a refused Replace changed the items")
	}
	if _, err := st.Summary(ctx, "sum_c2"); !errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("a refused Replace stored its summary: %v", err)
	}
	if err := dag.Check(ctx, st, seqs); err != nil {
		t.Fatal(err)
	}
}

func testConcurrentReplace(t *testing.T, newStore NewStoreFunc) {
	st, app := newStore(t)
	ctx := context.Background()
	seqs := fill(t, app, 12)
	its := items(t, st)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() { // readers during the race
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = st.Items(ctx)
			}
		}
	}()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, it := leafOver(fmt.Sprintf("sum_race%d", i), its[2:7])
			errs[i] = st.Replace(ctx, its[2:7], s, it)
		}(i)
	}
	wg.Wait()
	close(stop)
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, dag.ErrConflict):
			t.Fatalf("concurrent Replace: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent Replaces of one range succeeded, want exactly 1", ok, n)
	}
	if err := dag.Check(ctx, st, seqs); err != nil {
		t.Fatal(err)
	}
}

type wordCounter struct{}

func (wordCounter) Name() string           { return "words" }
func (wordCounter) CountText(s string) int { return len(strings.Fields(s)) }

func testCompactExpandCheck(t *testing.T, newStore NewStoreFunc) {
	st, app := newStore(t)
	ctx := context.Background()
	seqs := fill(t, app, 150)
	c, err := dag.NewCompactor(dag.Config{FreshTailMessages: 10, LeafChunkTokens: 120, LeafTargetTokens: 20, CondensedTargetTokens: 20, MinFanIn: 2}, nil, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, st, dag.Target{Budget: 400, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted() || res.TokensAfter > res.Goal {
		t.Fatalf("compaction: %+v", res)
	}
	if err := dag.Check(ctx, st, seqs); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, it := range items(t, st) {
		if !it.IsSummary() {
			got = append(got, it.Ref.Seq)
			continue
		}
		cursor := ""
		for {
			p, err := dag.Expand(ctx, st, it.Ref.ID, 50, cursor)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Messages...)
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
	}
	if !reflect.DeepEqual(got, seqs) {
		t.Fatalf("expanding every context item gives %v, want %v", got, seqs)
	}
}
