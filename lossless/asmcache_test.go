package lossless

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// TestAssembleCacheBounded: assembling many conversations keeps the cached
// windows within AssembleCacheBytes (the most recent one stays), and a
// conversation whose window was forgotten assembles the same messages.
func TestAssembleCacheBounded(t *testing.T) {
	ctx := context.Background()
	const max = 64 << 10
	e := openTest(t, func(c *Config) { c.AssembleCacheBytes = max })
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
	for i := 0; i < 40; i++ {
		s := e.state(convOf(t, e, fmt.Sprintf("s%d", i)))
		s.asmMu.Lock()
		if s.asmMsgs != nil {
			cached++
		}
		s.asmMu.Unlock()
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

func rawJoin(msgs []core.Message) []byte {
	var b []byte
	for _, m := range msgs {
		b = append(append(b, m.Raw()...), '\n')
	}
	return b
}

func convOf(t testing.TB, e *Engine, session string) convID {
	conv, err := e.Conversation(context.Background(), "", session)
	if err != nil {
		t.Fatal(err)
	}
	return conv.id
}

// BenchmarkSessionsHeap ingests and assembles across 10,000 conversations
// (20 messages each, a 16K budget) and reports the in-use heap at the end
// (sessions.heap_mb) and the assemble p99: the cached windows stay within
// AssembleCacheBytes however many sessions are served.
func BenchmarkSessionsHeap(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		e := openTest(b, func(c *Config) { off := false; c.Recall.Enabled = &off })
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
