package bench_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/summarize"
)

type benchMsg struct {
	role, text string
	tokens     int
	ts         int64
}

// synthHistory returns synthetic messages totalling at least tokens.
func synthHistory(b *testing.B, tc core.TokenCounter, tokens int) []benchMsg {
	var out []benchMsg
	total := 0
	g := synth.New(1)
	for total < tokens {
		m, err := core.ParseMessage(g.Next())
		if err != nil {
			b.Fatal(err)
		}
		n := core.CountMessage(tc, m)
		out = append(out, benchMsg{role: m.Role(), text: m.Role() + ": " + m.SearchText(false), tokens: n, ts: m.Timestamp()})
		total += n
	}
	return out
}

// BenchmarkCompact compacts a whole history (forced, threshold mode, a 128K
// budget) with the extractive summarizer and the o200k counter.
func BenchmarkCompact(b *testing.B) {
	tc := core.DefaultCounter()
	sum := summarize.NewExtractive(tc)
	for _, size := range []int{100_000, 1_000_000} {
		hist := synthHistory(b, tc, size)
		b.Run(fmt.Sprintf("tokens=%dK", size/1000), func(b *testing.B) {
			b.ReportAllocs()
			var res dag.Result
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m := dag.NewMemory()
				for _, h := range hist {
					m.Append(h.role, h.text, h.tokens, h.ts)
				}
				c, err := dag.NewCompactor(dag.Config{}, sum, tc)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err = c.Run(context.Background(), m, dag.Target{Budget: 128_000, Force: true})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.TokensAfter), "tokens-after")
			b.ReportMetric(float64(len(res.NewSummaryIDs)), "summaries")
		})
	}
}
