package lossless

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// TestAssembleCacheBounded: assembling many conversations keeps the cached
// windows within AssembleCacheBytes (the most recent one stays), and a
// conversation whose window was forgotten assembles the same messages.
func TestAssembleCacheBounded(t *testing.T) {
	ctx := context.Background()
	const max = 64 << 10
	e := openTest(t, func(c *config.Config) { c.AssembleCacheBytes = max })
	first := make(map[string][]byte)
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("s%d", i)
		var msgs []core.Message
		for j := 0; j < 20; j++ {
			msgs = append(msgs, core.UserText(fmt.Sprintf("%s message %d %0200d", id, j, j), int64(j+1)))
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: id, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		res, err := e.Assemble(ctx, core.AssembleParams{SessionID: id, TokenBudget: 100000})
		if err != nil {
			t.Fatal(err)
		}
		first[id] = rawJoin(res.Messages)
		if got := e.asmCacheBytes(); got > max+int64(len(first[id]))*3 {
			t.Fatalf("after %d conversations the cache holds %d bytes, bound %d", i+1, got, max)
		}
	}
	cached := 0
	view := e.lru.Inspect() // looked at without touching (a touch may evict)
	for _, s := range view.Entries {
		if s.WinBytes > 0 {
			cached++
		}
	}
	if cached == 0 || cached == 40 {
		t.Fatalf("%d of 40 windows cached under a %d-byte bound", cached, max)
	}
	// Forgotten windows are parsed again: the same messages.
	for id, want := range first {
		res, err := e.Assemble(ctx, core.AssembleParams{SessionID: id, TokenBudget: 100000})
		if err != nil || string(rawJoin(res.Messages)) != string(want) {
			t.Fatalf("%s assembled differently after its window was forgotten: %v", id, err)
		}
	}
}

// TestStateCacheEvicts: the per-conversation state (record, window,
// resolution entries, display name) stays within AssembleCacheBytes however
// many conversations are served, and conversations whose state was evicted
// work again: workers ingest into and assemble 150 conversations at once,
// each in its own order, so that states are evicted while other goroutines
// hold, wait for or have just looked up the same conversations. Two states
// for one conversation would let two ingests write the same sequence
// number: every message must be stored once, in the counts of its record
// (checkInvariants runs at cleanup), and every assemble must show the
// conversation's own newest message.
func TestStateCacheEvicts(t *testing.T) {
	ctx := context.Background()
	const (
		max     = 48 << 10
		convs   = 150
		workers = 4
		rounds  = 3
	)
	e := openTest(t, func(c *config.Config) { c.AssembleCacheBytes = max; off := false; c.Recall.Enabled = &off })
	session := func(i int) string { return fmt.Sprintf("conv-%03d", i) }
	var peakStates atomic.Int64
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := rand.New(rand.NewPCG(uint64(w), 7)).Perm(convs)
			for r := 0; r < rounds; r++ {
				for _, i := range order {
					id := session(i)
					text := fmt.Sprintf("%s worker %d round %d %0300d", id, w, r, i)
					m := core.UserText(text, int64(1+r*workers+w))
					if _, err := e.Ingest(ctx, core.IngestParams{SessionID: id, Message: m}); err != nil {
						errs <- err
						return
					}
					res, err := e.Assemble(ctx, core.AssembleParams{SessionID: id, TokenBudget: 100000})
					if err != nil {
						errs <- err
						return
					}
					if n := len(res.Messages); n == 0 || !strings.HasPrefix(res.Messages[n-1].Text(), id+" worker") {
						errs <- fmt.Errorf("%s assembled %d messages, the last not its own", id, n)
						return
					}
					if n := int64(e.cachedStates()); n > peakStates.Load() {
						peakStates.Store(n) // racy max, enough for a bound
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every message stored once, whatever evictions happened meanwhile.
	for i := 0; i < convs; i++ {
		if got := storedMessages(t, e, "", session(i)); len(got) != workers*rounds {
			t.Fatalf("%s holds %d messages, want %d", session(i), len(got), workers*rounds)
		}
	}
	if n := e.cachedStates(); n >= convs/2 {
		t.Fatalf("%d of %d conversations kept in memory under a %d-byte bound", n, convs, max)
	}
	if p := peakStates.Load(); p >= convs/2 {
		t.Fatalf("up to %d of %d conversations kept in memory under a %d-byte bound", p, convs, max)
	}
	if b := e.asmCacheBytes(); b > max+64<<10 {
		t.Fatalf("the cache counts %d bytes, bound %d", b, max)
	}
	// That the cache's own accounting adds up (every state's cost, every
	// resolution key listed by its state) is lossless/internal/assemble's
	// TestCacheBounded.
}

// TestStateCacheEvictionRace: with a cache of one state, every lookup of
// another conversation evicts whatever is idle, so states are evicted
// between a goroutine's lookup and its lock all the time. Eight workers
// ingest into six conversations at once: with two states (two locks) for
// one conversation, two ingests would take the same sequence number and one
// message would overwrite the other.
func TestStateCacheEvictionRace(t *testing.T) {
	ctx := context.Background()
	const convs, workers, rounds = 6, 8, 40
	e := openTest(t, func(c *config.Config) { c.AssembleCacheBytes = 1; off := false; c.Recall.Enabled = &off })
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				id := fmt.Sprintf("c%d", (r+w)%convs)
				m := core.UserText(fmt.Sprintf("worker %d round %d", w, r), int64(1+r))
				if _, err := e.Ingest(ctx, core.IngestParams{SessionID: id, Message: m}); err != nil {
					errs <- err
					return
				}
				if r%4 == 0 {
					if _, err := e.Assemble(ctx, core.AssembleParams{SessionID: id, TokenBudget: 100000}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for i := 0; i < convs; i++ {
		total += len(storedMessages(t, e, "", fmt.Sprintf("c%d", i)))
	}
	if total != workers*rounds {
		t.Fatalf("%d messages stored, want %d", total, workers*rounds)
	}
	if err := checkInvariants(e); err != nil {
		t.Fatal(err)
	}
}

func rawJoin(msgs []core.Message) []byte {
	var b []byte
	for _, m := range msgs {
		b = append(append(b, m.Raw()...), '\n')
	}
	return b
}

// BenchmarkSessionsHeap ingests and assembles across 10,000 conversations
// (20 messages each, a 16K budget) and reports the in-use heap at the end
// (sessions.heap_mb) and the assemble p99: the cached windows stay within
// AssembleCacheBytes however many sessions are served.
func BenchmarkSessionsHeap(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		e := openTest(b, func(c *config.Config) { off := false; c.Recall.Enabled = &off })
		var lat []float64
		for i := 0; i < 10_000; i++ {
			id := fmt.Sprintf("s%d", i)
			var msgs []core.Message
			for j := 0; j < 20; j++ {
				msgs = append(msgs, core.UserText(fmt.Sprintf("%s message %d: %0400d", id, j, j), int64(j+1)))
			}
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: id, Messages: msgs}); err != nil {
				b.Fatal(err)
			}
			start := nowNanos()
			if _, err := e.Assemble(ctx, core.AssembleParams{SessionID: id, TokenBudget: 16000}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, float64(nowNanos()-start)/1e6)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if path := os.Getenv("LOSSLESS_HEAP_PROFILE"); path != "" {
			if f, err := os.Create(path); err == nil {
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
		b.ReportMetric(float64(e.asmCacheBytes())/(1<<20), "cache-MB")
		b.ReportMetric(percentile(lat, 0.99), "assemble-p99-ms")
	}
}

func nowNanos() int64 { return time.Now().UnixNano() }

// percentile returns the p-quantile of xs (sorted in place).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	return xs[int(p*float64(len(xs)-1))]
}
