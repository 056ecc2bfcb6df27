package lossless

import (
	"context"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// BenchmarkCommitTurn commits one 4-message turn into a conversation that
// already holds history messages (the cost should not grow with it), and
// retries a committed turn (duplicate).
func BenchmarkCommitTurn(b *testing.B) {
	ctx := context.Background()
	next := 0
	for _, history := range []int{1000, 10000} {
		e := benchEngine(b, b.TempDir(), core.CounterChars4)
		var msgs []core.Message
		for i := 0; i < history; i++ {
			msgs = append(msgs, core.UserText(fmt.Sprintf("history message %d", i), int64(i)))
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("new/history=%d", history), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				next++
				p := commitParams("s", fmt.Sprintf("k%d", next), 1_000_000+next)
				if res, err := e.CommitTurn(ctx, p); err != nil || res.Status != core.CommitCommitted {
					b.Fatal(res, err)
				}
			}
		})
		b.Run(fmt.Sprintf("duplicate/history=%d", history), func(b *testing.B) {
			p := commitParams("s", "dup", 7)
			if _, err := e.CommitTurn(ctx, p); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if res, err := e.CommitTurn(ctx, p); err != nil || res.Status != core.CommitDuplicate {
					b.Fatal(res, err)
				}
			}
		})
		e.Close()
	}
}
