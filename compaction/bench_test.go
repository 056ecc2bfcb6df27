package compaction_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// BenchmarkCompactPiMono compacts a fresh copy of before-compaction.jsonl
// (o200k counter, extractive summarizer, 64K budget) per iteration, and
// reports tokens before/after and the identifier retention.
func BenchmarkCompactPiMono(b *testing.B) {
	src := testutil.SharedFile(b, "data/pi-mono/before-compaction.jsonl")
	orig, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.ReportAllocs()
	var res core.CompactResult
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err = compaction.Compact(context.Background(), path, core.CompactParams{Force: true, TokenBudget: 64000}, compaction.Options{})
		if err != nil || !res.Compacted {
			b.Fatalf("%+v %v", res, err)
		}
		b.StopTimer()
		os.Remove(path)
		b.StartTimer()
	}
	var d compaction.Details
	_ = json.Unmarshal(res.Result.Details, &d)
	b.ReportMetric(float64(res.Result.TokensBefore), "tokensBefore")
	b.ReportMetric(float64(res.Result.TokensAfter), "tokensAfter")
	b.ReportMetric(d.IdentifierRetention.Ratio, "idRetention")
}

// BenchmarkCompact compacts synthetic transcripts of n turns (each a user
// request, a tool call, its result and an answer) with the o200k counter
// and the extractive summarizer.
func BenchmarkCompact(b *testing.B) {
	for _, turns := range []int{50, 200, 800} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			data := synthTranscript(b, turns)
			dir := b.TempDir()
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				path := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
				if err := os.WriteFile(path, data, 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := compaction.Compact(context.Background(), path, core.CompactParams{Force: true}, compaction.Options{KeepRecentTokens: 4000})
				if err != nil || !res.Compacted {
					b.Fatalf("%+v %v", res, err)
				}
				b.StopTimer()
				os.Remove(path)
				b.StartTimer()
			}
		})
	}
}

func synthTranscript(tb testing.TB, turns int) []byte {
	tb.Helper()
	var sb strings.Builder
	sb.WriteString(`{"type":"session","version":4,"id":"bench","timestamp":"2026-01-01T00:00:00.000Z"}` + "\n")
	parent := ""
	n := 0
	add := func(m core.Message) {
		n++
		id := fmt.Sprintf("b%07d", n)
		e := map[string]any{"type": "message", "id": id, "timestamp": "2026-01-01T00:00:00.000Z", "message": json.RawMessage(m.Raw())}
		if parent != "" {
			e["parentId"] = parent
		}
		parent = id
		line, err := json.Marshal(e)
		if err != nil {
			tb.Fatal(err)
		}
		sb.Write(line)
		sb.WriteByte('\n')
	}
	for i := 0; i < turns; i++ {
		add(core.UserText(fmt.Sprintf("Turn %d: please look at src/pkg%d/file%d.go and fix issue #%d.", i, i%17, i, 1000+i), int64(i)))
		add(core.AssistantToolCall(fmt.Sprintf("c%d", i), "read", map[string]string{"path": fmt.Sprintf("src/pkg%d/file%d.go", i%17, i)}, int64(i)))
		add(core.ToolResult(fmt.Sprintf("c%d", i), "read", strings.Repeat(fmt.Sprintf("func F%d() error { return nil } // line\n", i), 30), false, int64(i)))
		add(core.AssistantText(fmt.Sprintf("Fixed issue #%d in file%d.go by returning the error. ", 1000+i, i)+strings.Repeat("Tests pass. ", 20), int64(i)))
	}
	return []byte(sb.String())
}
