package explore

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/lossless"
)

// exploreBenchEngine stores n synthetic agent messages (package synth:
// tool results, code, identifiers) in session "long", never compacted:
// one context item per message.
func exploreBenchEngine(b *testing.B, n int) *lossless.Engine {
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

// BenchmarkExploreBounds measures ContextStats, one of the explorer's
// bounded reads, at its bound, the most one request does: reading
// MaxContextScan context items. The explorer's views answer within #18's
// 300 ms only if this does (package lossless's BenchmarkExploreBounds
// measures the other, GrepPage).
//
//	go test -run '^$' -bench BenchmarkExploreBounds -benchtime 10x ./lossless/explore/
func BenchmarkExploreBounds(b *testing.B) {
	e := exploreBenchEngine(b, MaxContextScan+1000)
	x := New(e)
	ctx := context.Background()
	b.Run("ContextStats", func(b *testing.B) {
		conv, err := e.Conversation(ctx, "", "long")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			st, err := x.ContextStats(ctx, conv)
			if err != nil || !st.Partial || st.Items != MaxContextScan {
				b.Fatalf("%+v %v", st, err)
			}
		}
	})
}
