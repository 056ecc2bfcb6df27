package lossless

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// exploreBenchEngine stores n synthetic agent messages (package synth:
// tool results, code, identifiers) in session "long", never compacted:
// one context item per message.
func exploreBenchEngine(b *testing.B, n int) *Engine {
	b.Helper()
	e := openTest(b, withoutRecall)
	ctx := context.Background()
	raws := synth.Messages(7, n)
	for i := 0; i < len(raws); i += 1000 {
		var msgs []core.Message
		for _, r := range raws[i:min(i+1000, len(raws))] {
			m, err := core.ParseMessage(r)
			if err != nil {
				b.Fatal(err)
			}
			msgs = append(msgs, m)
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "long", Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// BenchmarkExploreBounds measures GrepPage, one of the explorer's bounded
// reads, at its bound, the most one request does: reading DefaultGrepScan
// messages that do not match (every one parsed and searched). The
// explorer's views answer within #18's 300 ms only if this does (package
// lossless/explore's BenchmarkExploreBounds measures the other,
// ContextStats).
//
//	go test -run '^$' -bench BenchmarkExploreBounds -benchtime 10x ./lossless/
func BenchmarkExploreBounds(b *testing.B) {
	e := exploreBenchEngine(b, DefaultGrepScan+1000)
	ctx := context.Background()
	b.Run("GrepPage", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			res, err := e.GrepPage(ctx, GrepPageParams{GrepParams: GrepParams{SessionID: "long", Query: "zqxjkvw"}})
			if err != nil || res.Scanned != DefaultGrepScan || res.Next == "" {
				b.Fatalf("%d scanned, next %q: %v", res.Scanned, res.Next, err)
			}
		}
	})
}
