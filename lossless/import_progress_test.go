package lossless

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportProgress: WithImportProgress reports the bytes of one file as
// they are stored, increasing, ending at the file's size; a file already
// imported reports nothing.
func TestImportProgress(t *testing.T) {
	e := openTest(t)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"sess-progress","timestamp":"2026-11-30T20:00:00.000Z","cwd":"/w"}` + "\n")
	filler := strings.Repeat("lorem ipsum ", 8)
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, `{"type":"message","message":{"role":"user","content":[{"type":"text","text":"message %d %s"}],"timestamp":%d}}`+"\n", i, filler, 1_700_000_000_000+i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	size := int64(b.Len())
	var offsets []int64
	ctx := WithImportProgress(context.Background(), func(off int64) { offsets = append(offsets, off) })
	res, err := e.Import(ctx, "", path)
	if err != nil || res.Imported != 2000 {
		t.Fatalf("import: %+v %v", res, err)
	}
	if len(offsets) < 3 {
		t.Fatalf("%d progress reports for a %d-byte file, want several: %v", len(offsets), size, offsets)
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] <= offsets[i-1] {
			t.Fatalf("progress went back: %v", offsets)
		}
	}
	if last := offsets[len(offsets)-1]; last != size {
		t.Fatalf("last progress %d, want the file's size %d", last, size)
	}
	offsets = nil
	if _, err := e.Import(ctx, "", path); err != nil || len(offsets) != 0 {
		t.Fatalf("re-import of an unchanged file: %v, progress %v", err, offsets)
	}
}
