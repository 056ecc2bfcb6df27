package lossless

import (
	"context"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// BenchmarkSubagent measures preparing a fork of a parent with n context
// items (a snapshot of references) with its rollback (a new child each
// time), and assembling a forked child with a 32K budget (reads only the
// budgeted suffix of the snapshot).
func BenchmarkSubagent(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 10000} {
		e := benchEngine(b, b.TempDir(), core.CounterChars4)
		defer e.Close()
		var msgs []core.Message
		for i := 0; i < n; i++ {
			msgs = append(msgs, core.UserText(fmt.Sprintf("parent message %d with some words in it", i), int64(i)))
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "parent", SessionKey: parentKey, Messages: msgs}); err != nil {
			b.Fatal(err)
		}
		params := core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
			ChildSessionKey: childKey, ChildSessionID: "child", ContextMode: core.ContextModeFork}
		b.Run(fmt.Sprintf("prepare+rollback/items=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				params.ChildSessionKey = fmt.Sprintf("agent:main:subagent:b%d", i)
				params.ChildSessionID = ""
				prep, err := e.PrepareSubagentSpawn(ctx, params)
				if err != nil {
					b.Fatal(err)
				}
				if err := prep.Rollback(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("assemble-fork/items=%d", n), func(b *testing.B) {
			params.ChildSessionKey, params.ChildSessionID = childKey, "child"
			if _, err := e.PrepareSubagentSpawn(ctx, params); err != nil {
				b.Fatal(err)
			}
			task := []core.Message{core.UserText("task", 1)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "child", SessionKey: childKey, TokenBudget: 32000, Messages: task})
				if err != nil || len(res.Messages) < 2 {
					b.Fatal(len(res.Messages), err)
				}
			}
		})
	}
}
