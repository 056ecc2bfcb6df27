package bleveindex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"

	"github.com/lossless-engine/contextengine/index"
)

// benchDocs returns n realistic docs (synthetic agent sessions of 500
// messages each, text as core.Message.SearchText) and some user prompts.
func benchDocs(n int) (docs []index.Doc, prompts []string) {
	benchMu.Lock()
	defer benchMu.Unlock()
	for len(benchAll) < n {
		s := len(benchAll) / 500
		g := synth.New(uint64(1000 + s))
		for i := 0; i < 500; i++ {
			m, err := core.ParseMessage(g.Next())
			if err != nil {
				panic(err)
			}
			text := m.SearchText(false)
			if len(text) > 8000 {
				text = text[:8000]
			}
			d := index.Doc{
				ID: fmt.Sprintf("m%d", len(benchAll)), Agent: fmt.Sprint("agent", s%4), Conversation: fmt.Sprint("c", s),
				Session: fmt.Sprint("s", s), Role: m.Role(), Kind: index.KindMessage, Seq: uint64(i), Timestamp: m.Timestamp(), Text: text,
			}
			benchAll = append(benchAll, d)
			if m.Role() == core.RoleUser && len(benchPrompts) < 2000 && len(text) > 10 {
				p := text
				if len(p) > 300 {
					p = p[:300]
				}
				benchPrompts = append(benchPrompts, p)
			}
		}
	}
	return benchAll[:n], benchPrompts
}

var (
	benchMu      sync.Mutex
	benchAll     []index.Doc
	benchPrompts []string
)

// BenchmarkIndex measures indexing throughput (docs/s, until searchable)
// of this package (docs added 100 at a time, as ingest does, and indexed in
// the background) against raw Bleve batch indexing of the same texts with
// the stock "en" analyzer in batches of 1,000; each iteration runs both, back
// to back, and "ratio" is ours over raw (robust to the machine's load).
func BenchmarkIndex(b *testing.B) {
	for _, n := range benchIndexSizes() {
		docs, _ := benchDocs(n)
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var ours, raw time.Duration
			for i := 0; i < b.N; i++ {
				ours += indexOurs(b, docs)
				raw += indexRaw(b, docs)
			}
			b.ReportMetric(float64(n*b.N)/ours.Seconds(), "docs/s")
			b.ReportMetric(float64(n*b.N)/raw.Seconds(), "raw-docs/s")
			b.ReportMetric(raw.Seconds()/ours.Seconds(), "ratio")
		})
	}
}

func indexOurs(b *testing.B, docs []index.Doc) time.Duration {
	dir := b.TempDir()
	start := time.Now()
	ix, err := Open(filepath.Join(dir, "ix"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	for j := 0; j < len(docs); j += 100 {
		ix.Add(docs[j:min(j+100, len(docs))]...)
	}
	if err := ix.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	ix.Close()
	return el
}

func indexRaw(b *testing.B, docs []index.Doc) time.Duration {
	dir := b.TempDir()
	start := time.Now()
	im := bleve.NewIndexMapping()
	im.DefaultAnalyzer = "en"
	bi, err := bleve.New(filepath.Join(dir, "raw"), im)
	if err != nil {
		b.Fatal(err)
	}
	batch := bi.NewBatch()
	for j := range docs {
		d := &docs[j]
		if err := batch.Index(d.ID, map[string]any{"text": d.Text, "agent": d.Agent, "session": d.Session}); err != nil {
			b.Fatal(err)
		}
		if batch.Size() >= 1000 {
			if err := bi.Batch(batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := bi.Batch(batch); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	bi.Close()
	return el
}

// BenchmarkRecallQuery measures one Recall (the assemble path: K=10,
// neighbours on) against indexes of 10K and 100K messages. The 100K index
// is built once into $LOSSLESS_BENCH_DIR when set (kept between runs), else
// into a temporary directory.
func BenchmarkRecallQuery(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		// gate=0.65: with the relevance gate at the engine's default.
		for _, gate := range []float64{0, 0.65} {
			b.Run(fmt.Sprintf("docs=%d/gate=%v", n, gate), func(b *testing.B) {
				ix := benchIndex(b, n)
				_, prompts := benchDocs(500)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				lat := make([]time.Duration, 0, b.N)
				for i := 0; i < b.N; i++ {
					p := prompts[i%len(prompts)]
					t0 := time.Now()
					if _, err := ix.Recall(ctx, index.RecallQuery{Agent: fmt.Sprint("agent", i%4), Text: p, K: 10, MinRelevance: gate}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				b.StopTimer()
				// Process CPU per query: a figure that the machine's load does
				// not inflate the way wall-clock percentiles are.
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				reportPercentiles(b, lat)
			})
		}
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) < 2 {
		return
	}
	s := append([]time.Duration(nil), lat...)
	for i := 1; i < len(s); i++ { // insertion sort is fine for benchmark sizes
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	b.ReportMetric(float64(s[len(s)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(s[len(s)*99/100].Microseconds())/1000, "p99-ms")
}

func benchIndex(b *testing.B, n int) *Index {
	b.Helper()
	dir := os.Getenv("LOSSLESS_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("recall-%d", n))
	gen := uint64(n)
	ix, err := Open(path, Options{Generation: gen})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	if ix.NeedsRebuild() {
		docs, _ := benchDocs(n)
		ix.SetGeneration(gen)
		if err := ix.Rebuild(context.Background(), func(_ context.Context, _ []byte, yield func(index.Doc, []byte) bool) error {
			for _, d := range docs {
				if !yield(d, nil) {
					break
				}
			}
			return nil
		}, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := ix.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ix
}

// benchIndexSizes is 10,000 docs, or $LOSSLESS_BENCH_DOCS.
func benchIndexSizes() []int {
	if v := os.Getenv("LOSSLESS_BENCH_DOCS"); v != "" {
		var n int
		fmt.Sscan(v, &n)
		return []int{n}
	}
	return []int{10_000}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
