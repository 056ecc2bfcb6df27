package compaction_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
)

// Compacting a transcript that has grown past its window: the summary
// replaces older entries, the recent ones stay verbatim.
func ExampleCompact() {
	dir, _ := os.MkdirTemp("", "compaction-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.jsonl")
	lines := []any{map[string]any{"type": "session", "version": 4, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z"}}
	parent := ""
	for i := 0; i < 20; i++ {
		m := core.UserText(fmt.Sprintf("note %d about /srv/data/file%d.csv: ", i, i)+strings.Repeat("details ", 100), int64(i))
		id := fmt.Sprintf("m%02d", i)
		e := map[string]any{"type": "message", "id": id, "timestamp": "2026-01-01T00:00:00.000Z", "message": m}
		if parent != "" {
			e["parentId"] = parent
		}
		lines = append(lines, e)
		parent = id
	}
	if err := core.WriteTranscriptFile(path, lines...); err != nil {
		panic(err)
	}
	res, err := compaction.Compact(context.Background(), path,
		core.CompactParams{SessionID: "s", TokenBudget: 5000}, // threshold 3750 tokens
		compaction.Options{Counter: core.Chars4{}, KeepRecentTokens: 1000})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.OK, res.Compacted, res.Result.FirstKeptEntryID, res.Result.TokensBefore)
	fmt.Println(res.Result.TokensAfter <= 3750, strings.Contains(res.Result.Summary, "/srv/data/file0.csv"))
	// Output:
	// true true m15 4180
	// true true
}
