package explore

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/tools"
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

// BenchmarkExploreBounds measures the explorer's two bounded reads at
// their bounds, the most one request does: GrepPage reading DefaultGrepScan
// messages that do not match (every one parsed and searched), and
// ContextStats reading MaxContextScan context items. The explorer's views
// answer within #18's 300 ms only if these do.
//
//	go test -run '^$' -bench BenchmarkExploreBounds -benchtime 10x ./lossless/explore/
func BenchmarkExploreBounds(b *testing.B) {
	e := exploreBenchEngine(b, max(DefaultGrepScan, MaxContextScan)+1000)
	x := New(e)
	ctx := context.Background()
	b.Run("GrepPage", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			res, err := x.GrepPage(ctx, GrepPageParams{GrepParams: tools.GrepParams{SessionID: "long", Query: "zqxjkvw"}})
			if err != nil || res.Scanned != DefaultGrepScan || res.Next == "" {
				b.Fatalf("%d scanned, next %q: %v", res.Scanned, res.Next, err)
			}
		}
	})
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
