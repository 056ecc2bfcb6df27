package compaction_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// copyFile copies src into dir and returns the copy's path.
func copyFile(tb testing.TB, src, dir string) string {
	tb.Helper()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(dir, filepath.Base(src))
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
	return dst
}

// TestCompactPiMono compacts the real transcripts and checks the window
// invariants: it fits the target, kept entries are byte-identical, earlier
// lines are untouched, and re-reading the file gives the window. It logs
// tokens before/after, identifier retention and wall time (-v).
func TestCompactPiMono(t *testing.T) {
	files := testutil.PiMono(t)
	if raceEnabled && os.Getenv("COMPACTION_LONG") == "" {
		files = files[:1] // before-compaction.jsonl; set COMPACTION_LONG=1 for both
	}
	for _, src := range files {
		t.Run(filepath.Base(src), func(t *testing.T) {
			ctx := context.Background()
			path := copyFile(t, src, t.TempDir())
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			before, err := core.ReadTranscript(path)
			if err != nil {
				t.Fatal(err)
			}
			rawByKey := map[string][]byte{}
			for _, e := range before.Entries {
				rawByKey[e.Key()] = e.Raw
			}
			const budget = 64000
			// The o200k counter and the extractive summarizer (the defaults);
			// under -race the chars/4 counter, as tiktoken is ~10x slower there.
			var tc core.TokenCounter = core.DefaultCounter()
			if raceEnabled && os.Getenv("COMPACTION_LONG") == "" {
				tc = core.Chars4{}
			}
			opts := compaction.Options{Counter: tc}
			startT := time.Now()
			res, err := compaction.Compact(ctx, path, core.CompactParams{SessionID: "s", Force: true,
				TokenBudget: budget, CompactionTarget: core.CompactionTargetBudget}, opts)
			wall := time.Since(startT)
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK || !res.Compacted {
				t.Fatalf("not compacted: %+v", res)
			}
			var d compaction.Details
			if err := json.Unmarshal(res.Result.Details, &d); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s [%s]: tokensBefore=%d tokensAfter=%d (summary %d, kept %d in %d entries) threshold=%d retention=%d/%d=%.3f chunks=%d calls=%d splitTurn=%v wall=%v summaryChars=%d",
				filepath.Base(src), tc.Name(), res.Result.TokensBefore, res.Result.TokensAfter, d.SummaryTokens, d.KeptTokens, d.KeptEntries,
				d.Threshold, d.IdentifierRetention.Kept, d.IdentifierRetention.Total, d.IdentifierRetention.Ratio,
				d.Chunks, d.SummarizerCalls, d.SplitTurn, wall, len(res.Result.Summary))
			if os.Getenv("COMPACTION_PRINT") != "" {
				t.Log("\n" + res.Result.Summary)
			}
			threshold := budget - compaction.EffectiveReserve(budget, 0)
			if res.Result.TokensAfter > threshold || !d.FitsTarget {
				t.Errorf("tokensAfter %d > target %d", res.Result.TokensAfter, threshold)
			}
			if res.Result.TokensAfter >= res.Result.TokensBefore {
				t.Errorf("tokens did not go down: %d -> %d", res.Result.TokensBefore, res.Result.TokensAfter)
			}
			if len(res.Result.Summary) > compaction.DefaultMaxSummaryChars {
				t.Errorf("summary has %d chars", len(res.Result.Summary))
			}
			// Earlier lines byte-identical: the file starts with the original.
			now, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(now, orig) {
				t.Fatal("earlier lines of the transcript changed")
			}
			if n := bytes.Count(now[len(orig):], []byte("\n")); n != 1 {
				t.Fatalf("appended %d lines, want 1", n)
			}
			// Re-reading gives the window: summary + kept entries, byte-identical.
			after, err := core.ReadTranscript(path)
			if err != nil {
				t.Fatal(err)
			}
			w := after.Window()
			if w.Compaction == nil || w.Compaction.Summary != res.Result.Summary {
				t.Fatal("window does not start with the new summary")
			}
			if len(w.Entries) != d.KeptEntries || len(w.Entries) == 0 {
				t.Fatalf("window has %d entries, details say %d", len(w.Entries), d.KeptEntries)
			}
			if w.Entries[0].Key() != res.Result.FirstKeptEntryID {
				t.Errorf("first kept %s, result says %s", w.Entries[0].Key(), res.Result.FirstKeptEntryID)
			}
			for _, e := range w.Entries {
				if !bytes.Equal(e.Raw, rawByKey[e.Key()]) {
					t.Fatalf("kept entry %s differs from the original", e.Key())
				}
				if m, ok := e.ModelMessage(); ok && m.Role() == core.RoleToolResult && e.Key() == w.Entries[0].Key() {
					t.Fatal("window starts with a toolResult")
				}
			}
			if got := core.CountMessages(tc, w.Messages()); got != res.Result.TokensAfter {
				t.Errorf("re-read window has %d tokens, result says %d", got, res.Result.TokensAfter)
			}
			// Overflow recovery retries: a second forced compaction either frees
			// more tokens or reports compacted:false and writes nothing.
			size := len(now)
			res2, err := compaction.Compact(ctx, path, core.CompactParams{SessionID: "s", Force: true,
				TokenBudget: budget, CompactionTarget: core.CompactionTargetBudget}, opts)
			if err != nil {
				t.Fatal(err)
			}
			now2, _ := os.ReadFile(path)
			if res2.Compacted {
				if res2.Result.TokensAfter >= res.Result.TokensAfter || res2.Result.TokensBefore != res.Result.TokensAfter {
					t.Errorf("second compaction: %d -> %d after %d", res2.Result.TokensBefore, res2.Result.TokensAfter, res.Result.TokensAfter)
				}
			} else if len(now2) != size {
				t.Error("a compaction that did not compact wrote the file")
			}
			t.Logf("second compaction: compacted=%v reason=%q", res2.Compacted, res2.Reason)
		})
	}
}
