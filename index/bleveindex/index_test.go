package bleveindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"

	"github.com/lossless-engine/contextengine/index"
)

// openTest opens an index in a temp dir and closes it after the test.
func openTest(t testing.TB, opts Options) (*Index, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ix")
	ix, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, dir
}

func msg(agent, session string, seq uint64, text string) index.Doc {
	return index.Doc{
		ID: fmt.Sprintf("%s/%s/%d", agent, session, seq), Agent: agent, Conversation: session,
		Session: session, Role: "user", Kind: index.KindMessage, Seq: seq, Timestamp: int64(seq) * 1000, Text: text,
	}
}

func ids(hs []index.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

func mustSearch(t *testing.T, ix *Index, q index.Query) []index.Hit {
	t.Helper()
	q.WaitForLag = true
	hs, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

func TestAnalyzerTerms(t *testing.T) {
	ix, _ := openTest(t, Options{})
	cases := []struct {
		text string
		want []string // terms that must be produced
		not  []string // terms that must not
	}{
		{"The runners were running quickly", []string{"runner", "run", "quickli"}, []string{"the", "were"}},
		{"open src/index/index.go now", []string{"src/index/index.go", "src", "index", "go"}, nil},
		{"id 550e8400-e29b-41d4-a716-446655440000", []string{"550e8400-e29b-41d4-a716-446655440000", "550e8400", "e29b", "446655440000"}, nil},
		{"call parse_json_file", []string{"parse_json_fil", "pars", "json", "file"}, nil},
		{"the parseJSONFile helper", []string{"parsejsonfil", "pars", "json", "file"}, nil},
		{"HTTPServer2 started", []string{"httpserver2", "http", "server", "2"}, nil},
		{"我们明天在北京开会", []string{"北京", "明天", "开会"}, nil},
		{"東京タワーに行きました", []string{"東京", "タワ"}, nil},
		{"ＦＵＬＬＷＩＤＴＨ text", []string{"fullwidth"}, nil},
	}
	for _, c := range cases {
		got := ix.Terms(c.text)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("Terms(%q) = %q, missing %q", c.text, got, w)
			}
		}
		for _, w := range c.not {
			if slices.Contains(got, w) {
				t.Errorf("Terms(%q) = %q, has %q", c.text, got, w)
			}
		}
	}
}

func TestSearchAnalyzers(t *testing.T) {
	ix, _ := openTest(t, Options{StoreText: true})
	ix.Add(
		msg("a", "s", 1, "I was running the migration in src/store/badger_store.go yesterday"),
		msg("a", "s", 2, "the store package has several files"),
		msg("a", "s", 3, "request 550e8400-e29b-41d4-a716-446655440000 failed"),
		msg("a", "s", 4, "we call parseJSONFile before loadConfig"),
		msg("a", "s", 5, "我们明天在北京开会讨论搜索引擎"),
		msg("a", "s", 6, "东京的天气很好"),
		msg("a", "s", 7, "unrelated words about gardening and tomatoes"),
	)
	cases := []struct {
		q     string
		first string // id expected first
		none  bool   // expect no hit
	}{
		{"runs", "a/s/1", false},                                 // stemming
		{"badger_store.go", "a/s/1", false},                      // identifier whole
		{"badger", "a/s/1", false},                               // identifier part
		{"src/store/badger_store.go", "a/s/1", false},            // whole path beats the "store" doc
		{"550e8400-e29b-41d4-a716-446655440000", "a/s/3", false}, // UUID whole
		{"446655440000", "a/s/3", false},                         // UUID part
		{"json", "a/s/4", false},                                 // camelCase part
		{"load_config", "a/s/4", false},                          // parts match across styles
		{"北京", "a/s/5", false},                                   // CJK bigram
		{"搜索引擎", "a/s/5", false},                                 // CJK multi-bigram
		{"上海", "", true},                                         // CJK miss
		{"zeppelin", "", true},                                   // miss
	}
	for _, c := range cases {
		hs := mustSearch(t, ix, index.Query{Agent: "a", Text: c.q})
		if c.none {
			if len(hs) != 0 {
				t.Errorf("%q: want no hit, got %v", c.q, ids(hs))
			}
			continue
		}
		if len(hs) == 0 || hs[0].ID != c.first {
			t.Errorf("%q: want %s first, got %v", c.q, c.first, ids(hs))
		}
	}
	// Hits carry the stored fields (Text only with StoreText).
	hs := mustSearch(t, ix, index.Query{Agent: "a", Text: "tomatoes"})
	if len(hs) != 1 || hs[0].Text != "unrelated words about gardening and tomatoes" || hs[0].Seq != 7 ||
		hs[0].Session != "s" || hs[0].Role != "user" || hs[0].Kind != index.KindMessage || hs[0].Timestamp != 7000 || hs[0].Score <= 0 {
		t.Fatalf("stored fields: %+v", hs)
	}
}

func TestSearchFilters(t *testing.T) {
	ix, _ := openTest(t, Options{})
	var docs []index.Doc
	for s := 0; s < 3; s++ {
		for i := 0; i < 5; i++ {
			d := msg("a", fmt.Sprint("s", s), uint64(s*10+i), "shared topic words")
			d.Conversation = fmt.Sprint("c", s%2)
			d.Timestamp = int64(s*10+i) * 1000
			if i == 4 {
				d.Kind = index.KindSummary
			}
			docs = append(docs, d)
		}
	}
	ix.Add(docs...)
	all := func(hs []index.Hit, f func(index.Hit) bool) bool {
		for _, h := range hs {
			if !f(h) {
				return false
			}
		}
		return len(hs) > 0
	}
	q := index.Query{Agent: "a", Text: "topic", K: 100}
	if hs := mustSearch(t, ix, q); len(hs) != 15 {
		t.Fatalf("all: %d", len(hs))
	}
	q.Sessions = []string{"s1"}
	if hs := mustSearch(t, ix, q); len(hs) != 5 || !all(hs, func(h index.Hit) bool { return h.Session == "s1" }) {
		t.Fatalf("sessions: %v", ids(hs))
	}
	q.Sessions, q.ExcludeSessions = nil, []string{"s0", "s2"}
	if hs := mustSearch(t, ix, q); len(hs) != 5 || !all(hs, func(h index.Hit) bool { return h.Session == "s1" }) {
		t.Fatalf("exclude sessions: %v", ids(hs))
	}
	q.ExcludeSessions, q.Conversations = nil, []string{"c0"}
	if hs := mustSearch(t, ix, q); len(hs) != 10 || !all(hs, func(h index.Hit) bool { return h.Conversation == "c0" }) {
		t.Fatalf("conversations: %v", ids(hs))
	}
	q.Conversations, q.ExcludeConversation = nil, "c0"
	if hs := mustSearch(t, ix, q); len(hs) != 5 || !all(hs, func(h index.Hit) bool { return h.Conversation == "c1" }) {
		t.Fatalf("exclude conversation: %v", ids(hs))
	}
	q.ExcludeConversation, q.Kind = "", index.KindSummary
	if hs := mustSearch(t, ix, q); len(hs) != 3 || !all(hs, func(h index.Hit) bool { return h.Kind == index.KindSummary }) {
		t.Fatalf("kind: %v", ids(hs))
	}
	q.Kind, q.Since, q.Until = "", 10_000, 14_000
	if hs := mustSearch(t, ix, q); len(hs) != 5 || !all(hs, func(h index.Hit) bool { return h.Timestamp >= 10_000 && h.Timestamp <= 14_000 }) {
		t.Fatalf("since/until: %v", ids(hs))
	}
	q.Since, q.Until, q.Spans = 0, 0, []index.TimeSpan{{From: 0, To: 2000}, {From: 20_000, To: 21_000}}
	if hs := mustSearch(t, ix, q); len(hs) != 3 {
		t.Fatalf("spans: %v", ids(hs))
	}
	q.Spans, q.K = nil, 4
	if hs := mustSearch(t, ix, q); len(hs) != 4 {
		t.Fatalf("K: %v", ids(hs))
	}
}

func TestIsolation(t *testing.T) {
	ix, _ := openTest(t, Options{})
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima")
	for i := 0; i < 200; i++ {
		text := words[i%len(words)] + " " + words[(i*7)%len(words)] + " secret"
		ix.Add(msg("agentA", fmt.Sprint("sa", i%4), uint64(i), text+" from A"))
		ix.Add(msg("agentB", fmt.Sprint("sb", i%4), uint64(i), text+" from B"))
	}
	ctx := context.Background()
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	queries := append(words, "secret", "secret alpha", "alpha secret bravo")
	for _, agent := range []string{"agentA", "agentB"} {
		for _, w := range queries {
			hs, err := ix.Search(ctx, index.Query{Agent: agent, Text: w, K: 1000})
			if err != nil {
				t.Fatal(err)
			}
			rs, err := ix.Recall(ctx, index.RecallQuery{Agent: agent, Text: w, K: 1000, Neighbours: 3, NeighbourHits: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) == 0 || len(rs) == 0 {
				t.Fatalf("%s %q: no hits", agent, w)
			}
			for _, h := range append(hs, rs...) {
				if h.Agent != agent || !strings.HasPrefix(h.ID, agent+"/") {
					t.Fatalf("agent %s query %q got a doc of %s: %s", agent, w, h.Agent, h.ID)
				}
			}
		}
	}
	if _, err := ix.Search(ctx, index.Query{Text: "secret"}); !errors.Is(err, index.ErrNoAgent) {
		t.Fatalf("no agent: %v", err)
	}
	if _, err := ix.Recall(ctx, index.RecallQuery{Text: "secret"}); !errors.Is(err, index.ErrNoAgent) {
		t.Fatalf("recall without agent: %v", err)
	}
	hs, err := ix.Search(ctx, index.Query{AllAgents: true, Text: "secret", K: 1000})
	if err != nil || len(hs) != 400 {
		t.Fatalf("all agents: %d %v", len(hs), err)
	}
}

func TestLagAndFlush(t *testing.T) {
	ix, _ := openTest(t, Options{BatchSize: 100})
	const n = 800
	docs := make([]index.Doc, n)
	for i := range docs {
		docs[i] = msg("a", "s", uint64(i), fmt.Sprintf("message number w%d", i))
	}
	for i := 0; i < n; i += 50 {
		ix.Add(docs[i : i+50]...)
	}
	if lag := ix.Lag(); lag < 0 || lag > n {
		t.Fatalf("lag %d", lag)
	}
	// A search that waits sees the last doc at once.
	hs := mustSearch(t, ix, index.Query{Agent: "a", Text: fmt.Sprintf("w%d", n-1)})
	if len(hs) == 0 || hs[0].ID != docs[n-1].ID {
		t.Fatalf("wait for lag: %v", ids(hs))
	}
	if ix.Lag() != 0 {
		t.Fatalf("lag after flush %d", ix.Lag())
	}
	c, err := ix.DocCount()
	if err != nil || c != n {
		t.Fatalf("count %d %v", c, err)
	}
	// Flush honours its context.
	ix.Add(docs[0])
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ix.Flush(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("flush canceled: %v", err)
	}
}

func TestMaxLagBlocksAdd(t *testing.T) {
	ix, _ := openTest(t, Options{BatchSize: 10, MaxLag: 20})
	for i := 0; i < 200; i++ {
		ix.Add(msg("a", "s", uint64(i), "text"))
		ix.mu.Lock()
		q := ix.queue.Len()
		ix.mu.Unlock()
		if q > 21 {
			t.Fatalf("queue %d beyond MaxLag", q)
		}
	}
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestMaxLagBytesBlocksAdd: with the worker stalled, Add of long docs
// blocks at the byte bound, far below the doc-count bound, and resumes
// when the worker drains the queue.
func TestMaxLagBytesBlocksAdd(t *testing.T) {
	ix, _ := openTest(t, Options{BatchSize: 10, MaxLag: 100_000, MaxLagBytes: 64 << 10})
	long := strings.Repeat("lorem ipsum dolor sit amet ", 400) // ~10 KB
	ix.bmu.Lock()                                              // stalls the worker in apply
	var added atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			ix.Add(msg("a", "s", uint64(i), long))
			added.Add(1)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	// At most one batch taken by the stalled worker plus the bytes bound.
	if n := added.Load(); n >= 50 || n > 10+(64<<10)/int64(len(long))+2 {
		ix.bmu.Unlock()
		t.Fatalf("%d long docs added with the worker stalled; the byte bound should hold Add back", n)
	}
	ix.bmu.Unlock()
	<-done
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if b := ix.queue.Bytes(); b != 0 {
		t.Fatalf("queue drained but %d bytes still counted", b)
	}
}

// source yields docs, each at its index as position, from after a
// position on.
func source(docs []index.Doc) Source { return sourceHook(docs, nil) }

// sourceHook is source calling hook(i) before yielding docs[i].
func sourceHook(docs []index.Doc, hook func(i int)) Source {
	return func(ctx context.Context, after []byte, yield func(index.Doc, []byte) bool) error {
		from := 0
		if len(after) == 8 {
			from = int(binary.BigEndian.Uint64(after)) + 1
		}
		for i := from; i < len(docs); i++ {
			if hook != nil {
				hook(i)
			}
			if !yield(docs[i], binary.BigEndian.AppendUint64(nil, uint64(i))) {
				return nil
			}
		}
		return nil
	}
}

func TestRebuildMissingStaleCorrupt(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ix")
	docs := make([]index.Doc, 600)
	for i := range docs {
		docs[i] = msg("a", fmt.Sprint("s", i%3), uint64(i), fmt.Sprintf("stored message %d tag%d", i, i))
	}
	reopen := func(gen uint64) *Index {
		t.Helper()
		ix, err := Open(dir, Options{Generation: gen, BatchSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	rebuild := func(ix *Index) {
		t.Helper()
		var prog []int
		if err := ix.Rebuild(ctx, source(docs), func(n int) { prog = append(prog, n) }); err != nil {
			t.Fatal(err)
		}
		if len(prog) < 5 || prog[len(prog)-1] != len(docs) || !slices.IsSorted(prog) {
			t.Fatalf("progress %v", prog)
		}
		if ix.NeedsRebuild() {
			t.Fatal("still needs rebuild")
		}
		if c, _ := ix.DocCount(); c != uint64(len(docs)) {
			t.Fatalf("count %d", c)
		}
		if hs := mustSearch(t, ix, index.Query{Agent: "a", Text: "tag534"}); len(hs) == 0 || hs[0].ID != docs[534].ID {
			t.Fatalf("search after rebuild: %v", ids(hs))
		}
	}

	// Missing, for a store that has content.
	ix := reopen(7)
	if !ix.NeedsRebuild() || ix.RebuildReason() != "missing" {
		t.Fatalf("missing: %v %q", ix.NeedsRebuild(), ix.RebuildReason())
	}
	rebuild(ix)
	ix.Close()

	// Up to date.
	ix = reopen(7)
	if ix.NeedsRebuild() {
		t.Fatalf("fresh: %q", ix.RebuildReason())
	}
	// Generation advanced through SetGeneration is persisted with the docs.
	ix.Add(msg("a", "s0", 9999, "late message"))
	ix.SetGeneration(8)
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix = reopen(8)
	if ix.NeedsRebuild() {
		t.Fatalf("after SetGeneration: %q", ix.RebuildReason())
	}
	ix.Close()
	// Stale: the store moved on while the index was closed.
	ix = reopen(9)
	if !ix.NeedsRebuild() || !strings.HasPrefix(ix.RebuildReason(), "stale") {
		t.Fatalf("stale: %q", ix.RebuildReason())
	}
	ix.Close()

	// Corrupt: overwrite every file of the index with garbage.
	live, err := readCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(filepath.Join(dir, live), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			return os.WriteFile(p, []byte("garbage, not an index"), 0o644)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ix = reopen(8)
	if !ix.NeedsRebuild() || !strings.HasPrefix(ix.RebuildReason(), "corrupt") {
		t.Fatalf("corrupt: %v %q", ix.NeedsRebuild(), ix.RebuildReason())
	}
	rebuild(ix)
	ix.Close()

	// Corrupt: truncated files.
	if live, err = readCurrent(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, live))
	for _, e := range entries {
		if !e.IsDir() {
			os.Truncate(filepath.Join(dir, live, e.Name()), 3)
		}
	}
	ix = reopen(8)
	if !ix.NeedsRebuild() {
		t.Fatal("truncated: no rebuild")
	}

	// Incomplete: a rebuild whose source fails leaves a marker-less index.
	boom := errors.New("store read failed")
	err = ix.Rebuild(ctx, func(_ context.Context, _ []byte, yield func(index.Doc, []byte) bool) error {
		yield(docs[0], []byte{0, 0, 0, 0, 0, 0, 0, 0})
		return boom
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("rebuild error %v", err)
	}
	ix.Close()
	ix = reopen(8)
	if !ix.NeedsRebuild() || ix.RebuildReason() != "incomplete" {
		t.Fatalf("incomplete: %q", ix.RebuildReason())
	}
	rebuild(ix)
	ix.Close()

	// An empty store needs no rebuild of a missing index.
	ix2, err := Open(filepath.Join(t.TempDir(), "ix"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	if ix2.NeedsRebuild() {
		t.Fatal("empty store: rebuild asked")
	}
}

func TestFormatTooNew(t *testing.T) {
	ix, dir := openTest(t, Options{})
	ix.bi.SetInternal(keyFormat, []byte("99"))
	ix.Close()
	_, err := Open(dir, Options{})
	if !errors.Is(err, core.ErrFormatTooNew) {
		t.Fatalf("want ErrFormatTooNew, got %v", err)
	}
}

func TestRebuildWhileAdding(t *testing.T) {
	ix, _ := openTest(t, Options{BatchSize: 64})
	ctx := context.Background()
	docs := make([]index.Doc, 400)
	for i := range docs {
		docs[i] = msg("a", "s", uint64(i), fmt.Sprintf("old %d", i))
	}
	// Live docs are added while the rebuild reads its source (after the
	// swap to the new index): all of them are indexed once it ends.
	done := make(chan struct{})
	err := ix.Rebuild(ctx, sourceHook(docs, func(i int) {
		if i == 100 {
			go func() {
				defer close(done)
				for i := 0; i < 200; i++ {
					ix.Add(msg("a", "live", uint64(i), fmt.Sprintf("live%d", i)))
				}
			}()
		}
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c, _ := ix.DocCount(); c != 600 {
		t.Fatalf("count %d, want 600", c)
	}
	if hs := mustSearch(t, ix, index.Query{Agent: "a", Text: "live199"}); len(hs) == 0 || hs[0].ID != "a/live/199" {
		t.Fatalf("last live doc: %v", ids(hs))
	}
}

func TestClosed(t *testing.T) {
	ix, _ := openTest(t, Options{})
	ix.Add(msg("a", "s", 1, "hello"))
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	ctx := context.Background()
	if _, err := ix.Search(ctx, index.Query{Agent: "a", Text: "hello"}); !errors.Is(err, index.ErrClosed) || !errors.Is(err, core.ErrClosed) {
		t.Fatalf("search after close: %v", err)
	}
	if err := ix.Rebuild(ctx, source(nil), nil); !errors.Is(err, index.ErrClosed) {
		t.Fatalf("rebuild after close: %v", err)
	}
	ix.Add(msg("a", "s", 2, "ignored"))
	if _, err := ix.DocCount(); !errors.Is(err, index.ErrClosed) {
		t.Fatalf("count after close: %v", err)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add(encodeMeta(&index.Doc{Agent: "a", Conversation: "c", Session: "s", Role: "user", Seq: 7, Timestamp: -3, Text: "hi"}, index.KindMessage))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h index.Hit
		if !decodeMeta(b, &h) {
			return
		}
		// Stored data never makes it read beyond its bytes.
		if n := len(h.Agent) + len(h.Conversation) + len(h.Session) + len(h.Role) + len(h.Kind); n+8 > len(b) {
			t.Fatalf("decoded %d string bytes from %d", n, len(b))
		}
	})
}

func TestMetaRoundTrip(t *testing.T) {
	d := index.Doc{ID: "x", Agent: "ag\x1fent", Conversation: "c1", Session: "s1", Role: "assistant", Seq: 1 << 40, Timestamp: 1700000000123, Text: "Hello, World"}
	var h index.Hit
	if !decodeMeta(encodeMeta(&d, index.KindSummary), &h) {
		t.Fatal("decode")
	}
	if h.Agent != d.Agent || h.Conversation != "c1" || h.Session != "s1" || h.Role != "assistant" || h.Kind != index.KindSummary ||
		h.Seq != d.Seq || h.Timestamp != d.Timestamp || h.TextKey() != index.TextKey("hello world") {
		t.Fatalf("%+v", h)
	}
}

// TestInterruptedRebuildNotStamped: docs and generations added after a
// rebuild was cancelled (Close during an opening rebuild) or failed must not
// record the generation: the index lacks the store's older docs, and the
// next Open has to rebuild it. A generation set while a rebuild runs is
// recorded once it completes.
func TestInterruptedRebuildNotStamped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	docs := make([]index.Doc, 300)
	for i := range docs {
		docs[i] = msg("a", "s", uint64(i), fmt.Sprintf("stored %d", i))
	}
	ix, err := Open(dir, Options{Generation: 300, BatchSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = ix.Rebuild(ctx, sourceHook(docs, func(i int) {
		if i == 120 {
			cancel()
		}
	}), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled rebuild: %v", err)
	}
	ix.Add(msg("a", "s", 300, "ingested after the interruption"))
	ix.SetGeneration(301)
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix, err = Open(dir, Options{Generation: 301, BatchSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !ix.NeedsRebuild() {
		t.Fatal("an index interrupted mid-rebuild was taken for complete")
	}
	// Completed, with a generation set (and its doc added) while the
	// rebuild runs: recorded with that doc after the rebuild.
	all := append(docs, msg("a", "s", 300, "ingested after the interruption"))
	err = ix.Rebuild(context.Background(), sourceHook(all, func(i int) {
		if i == 250 { // after the point where the first run stopped
			ix.Add(msg("a", "s", 301, "ingested during the rebuild"))
			ix.SetGeneration(302)
		}
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix, err = Open(dir, Options{Generation: 302})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.NeedsRebuild() {
		t.Fatalf("complete index rebuilt again: %s", ix.RebuildReason())
	}
	if c, _ := ix.DocCount(); c != 302 {
		t.Fatalf("count %d, want 302", c)
	}
}

// TestDelete: deleted docs are no longer found, in order with adds, and an
// unknown id is no error.
func TestDelete(t *testing.T) {
	ix, _ := openTest(t, Options{})
	ctx := context.Background()
	ix.Add(msg("a", "s", 1, "gondola ferry"), msg("a", "s", 2, "gondola bridge"))
	ix.Delete("a/s/1", "no-such-doc")
	ix.Add(msg("a", "s", 3, "gondola tunnel"))
	hits, err := ix.Search(ctx, index.Query{Agent: "a", Text: "gondola", WaitForLag: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(hits), ","); got != "a/s/2,a/s/3" && got != "a/s/3,a/s/2" {
		t.Fatalf("hits %s, want a/s/2 and a/s/3", got)
	}
	if ix.Lag() != 0 {
		t.Fatalf("lag %d after a flushed search", ix.Lag())
	}
}

// TestConversationDocIDs: every doc of a conversation, across pages, and
// none of another.
func TestConversationDocIDs(t *testing.T) {
	ix, _ := openTest(t, Options{})
	var docs []index.Doc
	for i := 0; i < 25_000; i++ {
		d := msg("a", "c1", uint64(i), "t")
		if i%5 == 0 {
			d.Conversation = "c2"
		}
		docs = append(docs, d)
	}
	ix.Add(docs...)
	ids, err := ix.ConversationDocIDs(context.Background(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 20_000 {
		t.Fatalf("%d ids, want 20000", len(ids))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %s twice", id)
		}
		seen[id] = true
	}
	for i, d := range docs {
		if seen[d.ID] != (i%5 != 0) {
			t.Fatalf("doc %s (conversation %s): listed %v", d.ID, d.Conversation, seen[d.ID])
		}
	}
}

// TestFailedBatchKeepsIndexStale: a batch that fails leaves its docs out
// of the index; a later batch must not record its generation mark, or the
// next Open would take the index for complete and those docs would never
// be searchable. The next Open finds it stale (and the engine rebuilds it).
func TestFailedBatchKeepsIndexStale(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	ix, err := Open(dir, Options{Generation: 0, BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	fails := 1
	ix.failApply = func() error {
		if fails > 0 {
			fails--
			return errors.New("disk full")
		}
		return nil
	}
	ix.AddGeneration(1, msg("a", "s", 1, "first message lost by the failed batch"))
	if err := ix.Flush(context.Background()); err == nil {
		t.Fatal("flush after a failed batch reported no error")
	}
	ix.AddGeneration(1, msg("a", "s", 2, "second message indexed"))
	ix.SetGeneration(2)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix2, err := Open(dir, Options{Generation: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	if !ix2.NeedsRebuild() {
		t.Fatal("an index missing a failed batch's docs opened as complete")
	}
}

// TestTiesInIDOrder: hits of equal score come in the order of their ids,
// whatever segments they sit in. Twelve docs of the same text are added
// newest first, in three batches (three segments, their internal order the
// reverse of their ids'); a search for five returns the smallest ids of
// the best-scored tie, in order. Without the id tie-break the order was the
// segments', which a background merge changes, so the same history could
// recall different turns from one run to the next (TestWindowLoCoMoSlice's
// "run 2 differs" on a loaded machine).
func TestTiesInIDOrder(t *testing.T) {
	ix, _ := openTest(t, Options{})
	for b := 0; b < 3; b++ {
		for i := 0; i < 4; i++ {
			ix.Add(msg("a", "s", uint64(12-4*b-i), "the same tied words"))
		}
		mustSearch(t, ix, index.Query{Agent: "a", Text: "tied", K: 1}) // waits for the batch: one segment each
	}
	var tied []string
	all := mustSearch(t, ix, index.Query{Agent: "a", Text: "tied", K: 12})
	for _, h := range all {
		if h.Score == all[0].Score {
			tied = append(tied, h.ID)
		}
	}
	if len(tied) < 6 {
		t.Fatalf("%d docs tie at the best score, want at least 6: %v", len(tied), ids(all))
	}
	// All of them (no tie at the cut: the ties put in order after Bleve's
	// score-only sort), then five of them (the tie straddles the cut:
	// which docs are kept is Bleve's id tie-break's).
	if !slices.IsSorted(tied) {
		t.Errorf("tied hits of a search for all of them %v, want them in id order", tied)
	}
	slices.Sort(tied)
	if got := ids(mustSearch(t, ix, index.Query{Agent: "a", Text: "tied", K: 5})); !slices.Equal(got, tied[:5]) {
		t.Errorf("tied hits %v, want the five smallest ids of the tie in order %v", got, tied[:5])
	}
}
