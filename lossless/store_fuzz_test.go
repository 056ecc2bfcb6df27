package lossless

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzImport: any file content imports without panic or error (malformed
// lines are reported, not fatal), twice without duplicates, and the store
// keeps its invariants.
func FuzzImport(f *testing.F) {
	f.Add([]byte(`{"type":"session","id":"x","timestamp":"2026-01-01T00:00:00Z"}
{"type":"message","id":"a","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"compaction","id":"c","summary":"sum","firstKeptEntryId":"a","tokensBefore":5}
{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"text","text":"yo"}]}}
`))
	f.Add([]byte("{\"type\":\"message\",\"message\":{\"role\":\"user\"}}\n{broken\n\xff\n"))
	f.Add([]byte(`{"type":"compaction","summary":"s","firstKeptEntryIndex":-3}` + "\n"))
	e := openTest(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r1, err := e.Import(ctx, "fuzz", path)
		if err != nil {
			t.Fatalf("import: %v", err)
		}
		r2, err := e.Import(ctx, "fuzz", path)
		if err != nil || r2.Imported != 0 {
			t.Fatalf("re-import: %+v %v (first %+v)", r2, err, r1)
		}
	})
}
