package lossless

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// shortNext numbers the short chat turns of BenchmarkIngestStored across
// runs, so that every run ingests new messages (a repeat would be
// de-duplicated and cost next to nothing).
var shortNext atomic.Int64

// freshShort returns n short chat messages never returned before in this
// process.
func freshShort(n int) []core.Message {
	out := make([]core.Message, 0, n)
	for len(out) < n {
		for _, m := range turn(int(shortNext.Add(1))) {
			if len(out) < n {
				out = append(out, m)
			}
		}
	}
	return out
}

// BenchmarkIngestStored measures ingest into a conversation that already
// holds 10K/100K/1M messages (1M with LOSSLESS_BENCH_1M=1), default
// configuration (o200k_base, recall on): one message per call and batches
// of 1,000 short chat messages. msgs/s is until the last call returns (the
// messages are durable then; the recall index catches up in the
// background, its queue bounded by bleveindex.Options.MaxLag and MaxLagBytes);
// drained-msgs/s is until every one is also indexed. The runs share one
// store per size and add to it: batch runs first (with -benchtime 20000x it
// is measured from N to N+20K stored messages), then one-by-one (from
// N+20K to N+40K).
func BenchmarkIngestStored(b *testing.B) {
	stores := newBenchStores(b)
	for _, sz := range storeSizes {
		for _, mode := range []string{"batch", "one"} {
			b.Run(sz.name+"/"+mode, func(b *testing.B) {
				skip1M(b, sz.n)
				stores.get(b, sz.n) // built before the heap is measured
				before := heapInUse()
				e := stores.open(b, sz.n)
				defer e.Close()
				ctx := context.Background()
				msgs := freshShort(b.N)
				b.ReportAllocs()
				b.ResetTimer()
				start, cpu0 := time.Now(), cpuTime()
				ingestAll(b, e, mode, msgs)
				n := len(msgs)
				msgs = nil // not the engine's
				acked := time.Since(start).Seconds()
				if err := e.WaitRecallIndex(ctx); err != nil {
					b.Fatal(err)
				}
				drained := time.Since(start).Seconds()
				cpu := (cpuTime() - cpu0).Seconds()
				b.StopTimer()
				b.ReportMetric(float64(n)/acked, "msgs/s")
				b.ReportMetric(float64(n)/drained, "drained-msgs/s")
				b.ReportMetric(float64(n)/cpu, "drained-msgs/cpu-s")
				// The heap the engine holds after the run (GC'd), over the
				// heap before it was opened.
				b.ReportMetric((heapInUse()-before)/(1<<20), "engine-heap-MB")
			})
		}
	}
}

// heapInUse returns the live heap after a GC, in bytes.
func heapInUse() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}

// diskUsage returns the bytes allocated on disk under dir (what du
// reports) and the files' apparent size (sparse files, such as Badger's
// 1 MiB DISCARD file, count in full).
func diskUsage(dir string) (allocated, apparent int64) {
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		apparent += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		}
		return nil
	})
	return allocated, apparent
}

// BenchmarkDiskSize measures the store's size on disk (Badger plus the
// recall index, after Close) over the raw JSON it holds, default
// configuration: the import of before-compaction.jsonl (over the file's
// size), and 10K/100K/1M real pi-mono messages (made distinct by a nonce
// field) ingested in batches of 1,000 (over the messages' bytes). Target
// ≤ 1.5. disk/raw counts allocated blocks; apparent/raw counts file sizes.
func BenchmarkDiskSize(b *testing.B) {
	report := func(b *testing.B, dir string, raw int64) {
		alloc, app := diskUsage(dir)
		indexAlloc, _ := diskUsage(filepath.Join(dir, "index"))
		b.ReportMetric(float64(alloc)/float64(raw), "disk/raw")
		b.ReportMetric(float64(app)/float64(raw), "apparent/raw")
		b.ReportMetric(float64(alloc-indexAlloc)/float64(raw), "badger/raw")
		b.ReportMetric(float64(indexAlloc)/float64(raw), "index/raw")
	}
	b.Run("import", func(b *testing.B) {
		path := testutil.PiMono(b)[0]
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			e := benchEngine(b, dir, "")
			if _, err := e.Import(context.Background(), "", path); err != nil {
				b.Fatal(err)
			}
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
			report(b, dir, st.Size())
		}
	})
	for _, sz := range storeSizes {
		b.Run(sz.name, func(b *testing.B) {
			skip1M(b, sz.n)
			msgs := benchMessages(b, "pimono", sz.n)
			var raw int64
			for _, m := range msgs {
				raw += int64(len(m.Raw()))
			}
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				e := benchEngine(b, dir, "")
				ctx := context.Background()
				for j := 0; j < len(msgs); j += 1000 {
					if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "bench", Messages: msgs[j:min(j+1000, len(msgs))]}); err != nil {
						b.Fatal(err)
					}
				}
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
				report(b, dir, raw)
			}
		})
	}
}

// importNext numbers the agents BenchmarkImportStored imports under, so
// that every run imports the whole file again (under one agent a re-import
// reads only what was appended).
var importNext atomic.Int64

// BenchmarkImportStored imports before-compaction.jsonl (2.4 MB, default
// configuration) into a store that already holds 10K/100K/1M messages (1M
// with LOSSLESS_BENCH_1M=1), each run as a new agent; MB/s until the
// import returns (the messages durable; the recall index catches up in
// the background).
func BenchmarkImportStored(b *testing.B) {
	stores := newBenchStores(b)
	path := testutil.PiMono(b)[0]
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, sz := range storeSizes {
		b.Run(sz.name, func(b *testing.B) {
			e := stores.open(b, sz.n)
			defer e.Close()
			ctx := context.Background()
			b.SetBytes(st.Size())
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				res, err := e.Import(ctx, fmt.Sprintf("imp%d", importNext.Add(1)), path)
				if err != nil {
					b.Fatal(err)
				}
				if res.Imported == 0 {
					b.Fatalf("nothing imported: %+v", res)
				}
			}
			cpu := cpuTime() - cpu0
			b.StopTimer()
			b.ReportMetric(float64(st.Size())*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
		})
	}
}

// BenchmarkBulkHeap ingests 200K synthetic agent messages (internal/synth,
// 1.8 KB on average) in batches of 1,000 with recall off, then reports the
// live heap right after the last batch and 15 s later: what Badger's
// compactions hold after a bulk load, and what they give back.
func BenchmarkBulkHeap(b *testing.B) {
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		e := benchEngineRecall(b, b.TempDir(), "", false)
		ctx := context.Background()
		g := synth.New(1)
		for done := 0; done < 200_000; done += 1000 {
			chunk := make([]core.Message, 1000)
			for j := range chunk {
				m, err := core.ParseMessage(g.Next())
				if err != nil {
					b.Fatal(err)
				}
				chunk[j] = m
			}
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "bulk", Messages: chunk}); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		time.Sleep(15 * time.Second)
		settled := heapInUse()
		e.Close()
		b.ReportMetric((after-before)/(1<<20), "heap-MB-after")
		b.ReportMetric((settled-before)/(1<<20), "heap-MB-15s-later")
	}
}
