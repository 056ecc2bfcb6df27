package lossless

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// benchEngine opens an engine with the DEFAULT tokenizer (o200k_base) unless
// tokenizer is given.
func benchEngine(b *testing.B, dir, tokenizer string) *Engine {
	return benchEngineRecall(b, dir, tokenizer, true)
}

// benchEngineRecall is benchEngine with the recall index on or off.
func benchEngineRecall(b *testing.B, dir, tokenizer string, recall bool) *Engine {
	b.Helper()
	cfg := config.Default()
	cfg.StoreDir = dir
	if tokenizer != "" {
		cfg.Tokenizer = tokenizer
	}
	cfg.Recall.Enabled = &recall
	e, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// benchMessages returns n distinct messages: short chat turns, or the real
// pi-mono messages made distinct by a nonce field.
func benchMessages(b *testing.B, kind string, n int) []core.Message {
	b.Helper()
	out := make([]core.Message, 0, n)
	switch kind {
	case "short":
		for i := 0; len(out) < n; i++ {
			for _, m := range turn(i) {
				if len(out) < n {
					out = append(out, m)
				}
			}
		}
	case "pimono":
		raws := fileMessages(b, testutil.PiMono(b)[0])
		for i := 0; len(out) < n; i++ {
			m, err := core.ParseMessage(raws[i%len(raws)])
			if err != nil {
				b.Fatal(err)
			}
			if m, err = m.WithField("nonce", i); err != nil {
				b.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// BenchmarkIngest measures ingest throughput with the default tokenizer:
// one message per call and batches of 1,000, for short chat messages and
// real pi-mono messages (~380 tokens each), with the recall index on (the
// default) and off.
func BenchmarkIngest(b *testing.B) {
	for _, kind := range []string{"short", "pimono"} {
		for _, mode := range []string{"one", "batch"} {
			for _, recall := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/%s/recall=%v", kind, mode, recall), func(b *testing.B) {
					e := benchEngineRecall(b, b.TempDir(), "", recall)
					defer e.Close()
					msgs := benchMessages(b, kind, b.N)
					var bytes int64
					for _, m := range msgs {
						bytes += int64(len(m.Raw()))
					}
					b.ReportAllocs()
					b.ResetTimer()
					start, cpu0 := time.Now(), cpuTime()
					ingestAll(b, e, mode, msgs)
					el := time.Since(start).Seconds()
					cpu := (cpuTime() - cpu0).Seconds()
					b.ReportMetric(float64(len(msgs))/el, "msgs/s")
					b.ReportMetric(float64(bytes)/el/1e6, "MB/s")
					b.ReportMetric(float64(len(msgs))/cpu, "msgs/cpu-s")
				})
			}
		}
	}
}

// cpuTime returns the process's user+system CPU time: on a shared, loaded
// machine it measures the work done, where wall time measures the queue.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkImport imports before-compaction.jsonl (2.4 MB) into a fresh
// store with the default tokenizer; reports MB/s and the store's size on
// disk over the file's size after Close (allocated blocks; apparent
// sizes as apparent/raw).
func BenchmarkImport(b *testing.B) {
	for _, tok := range []string{"o200k_base", "chars4"} {
		b.Run(tok, func(b *testing.B) {
			path := testutil.PiMono(b)[0]
			st, _ := os.Stat(path)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			var ratio, apparent float64
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := b.TempDir()
				e := benchEngine(b, dir, tok)
				b.StartTimer()
				cpu0 := cpuTime()
				if _, err := e.Import(context.Background(), "", path); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - cpu0
				b.StopTimer()
				e.Close()
				alloc, app := diskUsage(dir)
				ratio, apparent = float64(alloc)/float64(st.Size()), float64(app)/float64(st.Size())
				b.StartTimer()
			}
			b.ReportMetric(ratio, "disk/raw")
			b.ReportMetric(apparent, "apparent/raw")
			b.ReportMetric(float64(st.Size())*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
		})
	}
}

// buildStore writes n messages directly (batched writes, no token
// counting) into one conversation of a store at dir, cycling through the
// pi-mono messages (made distinct), with o200k counts (the default).
func buildStore(b *testing.B, dir string, n int) {
	b.Helper()
	e := benchEngine(b, dir, "")
	defer e.Close()
	ctx := context.Background()
	c, err := e.resolve(ctx, "main", "bench", "", true)
	if err != nil {
		b.Fatal(err)
	}
	raws := fileMessages(b, testutil.PiMono(b)[1])
	var base []pending
	for _, r := range raws {
		m, _ := core.ParseMessage(r)
		ps, _ := e.prepare(context.Background(), []core.Message{m}, false)
		base = append(base, ps...)
	}
	rec := convRecord{Agent: "main", SessionIDs: []string{"bench"}, NextSeq: 1, NextPos: posStep}
	wb, err := e.st.NewBatch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		p := base[i%len(base)]
		m, _ := p.Msg.WithField("n", i)
		p.Msg = m
		p.Hash = hashRaw(m.Raw())
		seq, pos := rec.NextSeq, rec.NextPos
		if err := wb.PutMessage(c, msgRecord{Seq: seq, Flags: p.Flags, Tokens: p.Tokens, Timestamp: m.Timestamp(), Role: m.Role(), Hash: p.Hash, Raw: m.Raw()}); err != nil {
			b.Fatal(err)
		}
		if err := wb.PutHash(c, p.Hash, seq); err != nil {
			b.Fatal(err)
		}
		tok := p.Tokens
		if p.Flags&flagLarge != 0 {
			if err := wb.PutLarge(c, seq, p.Ref); err != nil {
				b.Fatal(err)
			}
			tok = p.RefTokens
		}
		it := dag.Item{Pos: pos, Ref: dag.MessageRef(seq), Tokens: tok, Depth: -1, Timestamp: m.Timestamp(), Role: m.Role()}
		if err := wb.PutItem(c, store.Item{Item: it, Flags: p.Flags}); err != nil {
			b.Fatal(err)
		}
		rec.NextSeq++
		rec.NextPos += posStep
		rec.Messages++
		rec.Bytes += int64(len(m.Raw()))
	}
	if err := wb.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := e.st.Update(ctx, func(tx store.Tx) error { return tx.PutConversation(c, rec) }); err != nil {
		b.Fatal(err)
	}
}

// benchStores holds the store directories built by one top-level
// benchmark, by size; the benchmark removes them when it ends.
type benchStores map[int]string

func newBenchStores(b *testing.B) benchStores {
	s := benchStores{}
	b.Cleanup(func() {
		for _, dir := range s {
			os.RemoveAll(dir)
		}
	})
	return s
}

// get returns a store directory holding n messages, built on first use.
func (s benchStores) get(b *testing.B, n int) string {
	if dir, ok := s[n]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("lossless-bench-%d-", n))
	if err != nil {
		b.Fatal(err)
	}
	buildStore(b, dir, n)
	s[n] = dir
	return dir
}

// open opens the store of n messages (default configuration) and waits
// for its recall index: the store was written directly, so the index is
// rebuilt on open, and the rebuild would compete with the timed calls for
// the two cores. It skips 1M unless LOSSLESS_BENCH_1M=1.
func (s benchStores) open(b *testing.B, n int) *Engine {
	b.Helper()
	skip1M(b, n)
	e := benchEngine(b, s.get(b, n), "")
	if err := e.WaitRecallIndex(context.Background()); err != nil {
		e.Close()
		b.Fatal(err)
	}
	return e
}

// ingestAll ingests msgs into session "bench": one per Ingest call (mode
// "one") or in IngestBatch calls of 1,000.
func ingestAll(b *testing.B, e *Engine, mode string, msgs []core.Message) {
	b.Helper()
	ctx := context.Background()
	if mode == "one" {
		for _, m := range msgs {
			if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "bench", Message: m}); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	for i := 0; i < len(msgs); i += 1000 {
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "bench", Messages: msgs[i:min(i+1000, len(msgs))]}); err != nil {
			b.Fatal(err)
		}
	}
}

var storeSizes = []struct {
	name string
	n    int
}{{"10K", 10_000}, {"100K", 100_000}, {"1M", 1_000_000}}

// skip1M skips the 1M size unless LOSSLESS_BENCH_1M=1.
func skip1M(b *testing.B, n int) {
	if n >= 1_000_000 && os.Getenv("LOSSLESS_BENCH_1M") != "1" {
		b.Skip("set LOSSLESS_BENCH_1M=1 to build the 1M-message store")
	}
}

// BenchmarkOpen measures Open (default configuration) on a store of
// 10K/100K/1M messages and the Go heap the open engine holds right after
// it (target ≤ 32 MB), with its recall-index rebuild running (the bench
// store is written directly, and Close interrupts the rebuild, so every
// open rebuilds).
func BenchmarkOpen(b *testing.B) {
	stores := newBenchStores(b)
	for _, sz := range storeSizes {
		b.Run(sz.name, func(b *testing.B) {
			skip1M(b, sz.n)
			dir := stores.get(b, sz.n)
			b.ReportAllocs()
			var heap, before uint64
			var ms runtime.MemStats
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before = ms.HeapAlloc
				b.StartTimer()
				e := benchEngine(b, dir, "")
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				heap = ms.HeapAlloc
				e.Close()
				b.StartTimer()
			}
			// heap-MB is what the open engine holds (the heap after Open
			// minus the heap before it: the benchmark's own data and
			// process-wide tables loaded earlier, such as the o200k ranks
			// buildStore used, are not the engine's); process-heap-MB is the
			// whole heap.
			b.ReportMetric((float64(heap)-float64(before))/(1<<20), "heap-MB")
			b.ReportMetric(float64(heap)/(1<<20), "process-heap-MB")
		})
	}
}

// benchRecallPrompt is the prompt of BenchmarkAssemble's recall runs: a
// question about the stored pi-mono session's subject, as OpenClaw passes
// the turn's prompt to every assemble.
const benchRecallPrompt = "why does the queued messages component not update its theme colors when the terminal width changes?"

// benchQuestions returns the prompts of BenchmarkAssemble's /question
// runs: questions about the stored session's user messages ("What did we
// say about <its first words>?"), kept when recall brings a block for
// them (their turns lie outside the window: the question split runs, with
// its rankings, sizing render and, when the context must shrink, a second
// assemble), and the median items of their blocks. It fails the benchmark
// when none brings a block: the run would time the plain recall path.
func benchQuestions(b *testing.B, e *Engine, p core.AssembleParams) ([]string, int) {
	b.Helper()
	var out []string
	var items []int
	seen := map[string]bool{}
	for _, raw := range fileMessages(b, testutil.PiMono(b)[1]) {
		m, err := core.ParseMessage(raw)
		if err != nil || m.Role() != core.RoleUser {
			continue
		}
		words := strings.Fields(m.Text())
		if len(words) < 12 {
			continue
		}
		q := "What did we say about " + strings.Join(words[:12], " ") + "?"
		if seen[q] {
			continue
		}
		seen[q] = true
		p.Prompt = q
		_, d, err := e.AssembleWithDetails(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		if d.Recall.Status == recalled.Injected && d.Recall.Items > 0 {
			out = append(out, q)
			items = append(items, d.Recall.Items)
		}
		if len(out) == 32 {
			break
		}
	}
	if len(out) == 0 {
		b.Fatal("no question about the stored session's user messages brought a recall block")
	}
	sort.Ints(items)
	return out, items[len(items)/2]
}

// BenchmarkAssemble assembles a 128K-token context from a conversation of
// 10K/100K/1M stored messages; reports the p50 and p99 latencies. Cold:
// the parsed message cache is cleared before each call; warm: it is kept
// (the steady state of a conversation between turns). Without /recall the
// call has no prompt, so recall does not run; with /recall it has
// benchRecallPrompt and recall runs (the path every OpenClaw assemble
// takes: the query over the conversation's history outside the window,
// the relevance gate, the block when something passes it). recall-items
// is the items the recall block carried (0: nothing passed the gate; the
// query ran all the same, checked once before timing). /question cycles
// through questions whose turns lie outside the window (benchQuestions):
// the question split's path, recall-items the median of their blocks.
func BenchmarkAssemble(b *testing.B) {
	stores := newBenchStores(b)
	for _, sz := range storeSizes {
		for _, mode := range []string{"cold", "warm", "cold/recall", "warm/recall", "warm/question"} {
			b.Run(sz.name+"/"+mode, func(b *testing.B) {
				e := stores.open(b, sz.n)
				defer e.Close()
				ctx := context.Background()
				p := core.AssembleParams{SessionID: "bench", TokenBudget: 128_000}
				cold := strings.HasPrefix(mode, "cold")
				items := 0
				var questions []string
				if strings.HasSuffix(mode, "/question") {
					questions, items = benchQuestions(b, e, p)
					p.Prompt = questions[0]
				}
				if strings.HasSuffix(mode, "/recall") {
					p.Prompt = benchRecallPrompt
					_, d, err := e.AssembleWithDetails(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					if st := d.Recall.Status; (st != recalled.Injected && st != recalled.None) || d.Recall.Partial {
						b.Fatalf("recall did not run: %+v", d.Recall)
					}
					items = d.Recall.Items
				}
				if !cold {
					if _, err := e.Assemble(ctx, p); err != nil {
						b.Fatal(err)
					}
				}
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if cold {
						for _, s := range e.convs {
							s.asmMsgs, s.asmSums = nil, nil
						}
					}
					if questions != nil {
						p.Prompt = questions[i%len(questions)]
					}
					st := time.Now()
					out, err := e.Assemble(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(st))
					if out.EstimatedTokens > 128_000 || len(out.Messages) == 0 {
						b.Fatalf("assembled %d tokens, %d messages", out.EstimatedTokens, len(out.Messages))
					}
				}
				cpu := cpuTime() - cpu0
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/op")
				if p.Prompt != "" {
					b.ReportMetric(float64(items), "recall-items")
				}
				if questions != nil {
					b.ReportMetric(float64(len(questions)), "questions")
				}
			})
		}
	}
}
