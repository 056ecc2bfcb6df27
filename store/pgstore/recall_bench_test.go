package pgstore

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// benchRecallDocs returns n realistic docs (synthetic agent sessions of
// 500 messages each, four agents, as index's BenchmarkRecallQuery) and
// user prompts.
func benchRecallDocs(n int) (docs []index.Doc, prompts []string) {
	for len(docs) < n {
		s := len(docs) / 500
		g := synth.New(uint64(1000 + s))
		for i := 0; i < 500 && len(docs) < n; i++ {
			m, err := core.ParseMessage(g.Next())
			if err != nil {
				panic(err)
			}
			text := m.SearchText(false)
			if len(text) > 8000 {
				text = text[:8000]
			}
			docs = append(docs, index.Doc{
				ID: fmt.Sprintf("m%d", len(docs)), Agent: fmt.Sprint("agent", s%4), Conversation: fmt.Sprint("c", s),
				Session: fmt.Sprint("s", s), Role: m.Role(), Kind: index.KindMessage, Seq: uint64(i), Timestamp: m.Timestamp(), Text: text,
			})
			if m.Role() == core.RoleUser && len(prompts) < 500 && len(text) > 10 {
				p := text
				if len(p) > 300 {
					p = p[:300]
				}
				prompts = append(prompts, p)
			}
		}
	}
	return docs, prompts
}

// BenchmarkRecallQueryPG measures one Recall on PostgreSQL (the assemble
// path: K=10, neighbours on, with and without the relevance gate) over
// 10K and 100K docs, with p50/p99 latency; loading reports docs/s.
//
//	go test -run '^$' -bench RecallQueryPG -benchtime 300x ./store/pgstore/
func BenchmarkRecallQueryPG(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			pool, _ := recallPool(b)
			r := openTestRecall(b, pool, RecallOptions{})
			docs, prompts := benchRecallDocs(n)
			ctx := context.Background()
			t0 := time.Now()
			for i := 0; i < len(docs); i += 100 {
				r.AddGeneration(0, docs[i:min(i+100, len(docs))]...)
			}
			if err := r.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			load := time.Since(t0)
			if _, err := pool.Exec(ctx, "ANALYZE"); err != nil {
				b.Fatal(err)
			}
			for _, gate := range []float64{0, 0.65} {
				b.Run(fmt.Sprintf("gate=%v", gate), func(b *testing.B) {
					b.ReportAllocs()
					lat := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						p := prompts[i%len(prompts)]
						t0 := time.Now()
						if _, err := r.Recall(ctx, index.RecallQuery{Agent: fmt.Sprint("agent", i%4), Text: p, K: 10, MinRelevance: gate}); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t0))
					}
					b.StopTimer()
					b.ReportMetric(float64(n)/load.Seconds(), "load-docs/s")
					if len(lat) >= 2 {
						sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
						b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
						b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
					}
				})
			}
		})
	}
}
