package legacy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/legacy"
)

// A legacy engine compacting a session transcript with the built-in
// summary compaction (the extractive summarizer by default).
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "legacy-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.jsonl")

	// A small session: ten turns about a deployment.
	lines := []any{map[string]any{"type": "session", "version": 4, "id": "s-1", "timestamp": "2026-01-01T00:00:00.000Z"}}
	parent := ""
	for i := 0; i < 10; i++ {
		for j, m := range []core.Message{
			core.UserText(fmt.Sprintf("Step %d: check https://deploy.example.com/jobs/%d and report.", i, i), int64(i)),
			core.AssistantText(strings.Repeat(fmt.Sprintf("Job %d is healthy. ", i), 40), int64(i)),
		} {
			id := fmt.Sprintf("e%d%d", i, j)
			e := map[string]any{"type": "message", "id": id, "timestamp": "2026-01-01T00:00:00.000Z", "message": m}
			if parent != "" {
				e["parentId"] = parent
			}
			lines = append(lines, e)
			parent = id
		}
	}
	if err := core.WriteTranscriptFile(path, lines...); err != nil {
		panic(err)
	}

	eng := legacy.New(legacy.Options{
		Counter:    core.Chars4{},
		Compaction: compaction.Options{KeepRecentTokens: 800},
	})
	res, err := eng.Compact(context.Background(), core.CompactParams{
		SessionID: "s-1", SessionFile: path, Force: true,
		CompactionTarget: core.CompactionTargetThreshold, CustomInstructions: "the deploy jobs",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("compacted:", res.Compacted)
	fmt.Println("first kept entry:", res.Result.FirstKeptEntryID)
	fmt.Println("tokens went down:", res.Result.TokensAfter < res.Result.TokensBefore)
	fmt.Println("keeps the job URL:", strings.Contains(res.Result.Summary, "https://deploy.example.com/jobs/0"))

	// The model now sees the summary, then the kept entries.
	t, _ := core.ReadTranscript(path)
	w := t.Window()
	fmt.Println("window:", len(w.Messages()), "messages, starting with a", w.Messages()[0].Role())
	// Output:
	// compacted: true
	// first kept entry: e51
	// tokens went down: true
	// keeps the job URL: true
	// window: 10 messages, starting with a compactionSummary
}
