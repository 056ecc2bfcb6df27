package summarize

import (
	"context"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// benchInput returns about tokens tokens of real transcript text (repeated
// when the transcripts are shorter), or skips without the shared data.
func benchInput(b *testing.B, tc core.TokenCounter, tokens int) string {
	b.Helper()
	texts := piMonoTexts(b)
	all := texts[0] + texts[1]
	// o200k: about 4 bytes a token on this text
	want := tokens * 4
	for len(all) < want {
		all += all
	}
	s := all[:want]
	for !isRuneStartByte(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// BenchmarkExtractive measures one extractive summary (target 2,400 tokens)
// of 10K and 100K tokens of real transcript, with the real tokenizer
// (o200k) and with the chars/4 estimate (which shows the summarizer's own
// cost, token counting excluded). tokens/s is input tokens per second.
func BenchmarkExtractive(b *testing.B) {
	for _, counterName := range []string{core.EncodingO200k, core.CounterChars4} {
		tc, err := core.NewCounter(counterName)
		if err != nil {
			b.Fatal(err)
		}
		for _, size := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("counter=%s/tokens=%dK", counterName, size/1000), func(b *testing.B) {
				text := benchInput(b, tc, size)
				e := NewExtractive(tc)
				req := core.SummarizeRequest{Text: text, TargetTokens: 2400, Kind: core.SummaryLeaf}
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := e.Summarize(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

// BenchmarkExtractiveCounted is BenchmarkExtractive with o200k when the
// caller passes the input's token count (SummarizeCounted, as the lossless
// engine can): only the output is counted.
func BenchmarkExtractiveCounted(b *testing.B) {
	tc := counter(b)
	for _, size := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("tokens=%dK", size/1000), func(b *testing.B) {
			text := benchInput(b, tc, size)
			n := tc.CountText(text)
			e := NewExtractive(tc)
			req := core.SummarizeRequest{Text: text, TargetTokens: 2400, Kind: core.SummaryLeaf}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := e.SummarizeCounted(context.Background(), req, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
