package lossless

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

func TestImportRoundTrip(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	for _, path := range testutil.PiMono(t) {
		res, err := e.Import(ctx, "", path)
		if err != nil {
			t.Fatal(err)
		}
		want := fileMessages(t, path)
		if res.Imported+res.Duplicates != len(want) {
			t.Errorf("%s: imported %d + %d duplicates, file has %d messages", path, res.Imported, res.Duplicates, len(want))
		}
		got := storedMessages(t, e, "", res.SessionID)
		// Byte-identical messages in one file are stored once (same key);
		// compare against the file with such repeats removed.
		seen := map[msgHash]bool{}
		var uniq [][]byte
		for _, m := range want {
			h := hashRaw(m)
			if !seen[h] {
				seen[h] = true
				uniq = append(uniq, m)
			}
		}
		if len(got) != len(uniq) {
			t.Fatalf("%s: stored %d messages, want %d", path, len(got), len(uniq))
		}
		for i := range got {
			if !bytes.Equal(got[i], uniq[i]) {
				t.Fatalf("%s: message %d differs:\n got %.200s\nwant %.200s", path, i, got[i], uniq[i])
			}
		}
		t.Logf("%s: %+v", path, res)
	}
}

// writeLines writes a transcript made of lines (each without newline).
func writeLines(t testing.TB, path string, lines [][]byte, appendMode bool) {
	t.Helper()
	flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendMode {
		flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		f.Write(l)
		f.Write([]byte{'\n'})
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimRight(b, "\n"), []byte{'\n'})
}

func TestImportIncremental(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	src := testutil.PiMono(t)[1]
	lines := readLines(t, src)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	half := len(lines) / 2
	writeLines(t, path, lines[:half], false)
	r1, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Resumed {
		t.Fatal("first import resumed")
	}
	// A torn last line (a writer mid-append) is left for the next run.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(lines[half][:len(lines[half])/2])
	f.Close()
	r2, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Imported != 0 || !r2.Resumed {
		t.Fatalf("torn line: %+v", r2)
	}
	// Complete it and append the rest: only the appended part is read.
	f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(lines[half][len(lines[half])/2:])
	f.Write([]byte{'\n'})
	f.Close()
	writeLines(t, path, lines[half+1:], true)
	st, _ := os.Stat(path)
	r3, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	if !r3.Resumed || r3.Bytes >= st.Size() || r3.Duplicates != 0 {
		t.Fatalf("append: %+v (file %d bytes)", r3, st.Size())
	}
	want := fileMessages(t, src)
	if got := storedMessages(t, e, "", r1.SessionID); len(got) != len(want) {
		t.Fatalf("stored %d, want %d", len(got), len(want))
	}
	// A rewritten file (an early line changed, same size or not) is read
	// again from the start, without duplicates; the changed message is new.
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"type":"message"`)) && i > 0 {
			lines[i] = bytes.Replace(l, []byte(`"role":"user"`), []byte(`"role":"user","edited":true`), 1)
			if !bytes.Equal(lines[i], l) {
				break
			}
		}
	}
	writeLines(t, path, lines, false)
	r4, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	if r4.Resumed || r4.Imported != 1 || r4.Duplicates != len(want)-1 {
		t.Fatalf("rewrite: %+v", r4)
	}
	if got := countMessages(t, e); got != int64(len(want)+1) {
		t.Fatalf("count %d, want %d", got, len(want)+1)
	}
}

func TestImportCompactionsAsSummaries(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := testutil.PiMono(t)[0]
	res, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summaries != 2 {
		t.Fatalf("summaries %d, want 2", res.Summaries)
	}
	conv, err := e.Conversation(ctx, "", res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !items[0].IsSummary() || !items[1].IsSummary() || items[2].IsSummary() {
		t.Fatalf("items start %+v %+v %+v", items[0], items[1], items[2])
	}
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	win := tr.Window()
	// The raw items are exactly the window's messages (after its summary).
	var winMsgs [][]byte
	for _, ent := range win.Entries {
		if ent.Type == core.EntryMessage {
			winMsgs = append(winMsgs, ent.Message.Raw())
		}
	}
	if len(items)-2 != len(winMsgs) {
		t.Fatalf("%d raw items, window has %d messages", len(items)-2, len(winMsgs))
	}
	for i, it := range items[2:] {
		m, err := conv.Message(ctx, it.Ref.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Raw(), winMsgs[i]) {
			t.Fatalf("item %d is not the window's message %d", i+2, i)
		}
	}
	s2, err := conv.Summary(ctx, items[1].Ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Method != "imported" || s2.Kind != "leaf" || s2.Text != win.Compaction.Summary {
		t.Fatalf("summary 2: %+v", s2)
	}
	// Re-import adds nothing.
	r2, err := e.Import(ctx, "", path)
	if err != nil || r2.Summaries != 0 || r2.Imported != 0 {
		t.Fatalf("re-import: %+v %v", r2, err)
	}
}

// BenchmarkImportLongLine imports a file whose one message line is 100 MB
// (over maxMessageBytes): the line is skipped as it is read, so the peak
// heap stays near the engine's own, not the line's size.
func BenchmarkImportLongLine(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "long.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintln(f, `{"type":"session","version":4,"id":"sess-long","timestamp":"2026-01-01T00:00:00Z"}`)
	fmt.Fprint(f, `{"type":"message","id":"big","message":{"role":"user","content":"`)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	for n := 0; n < 100<<20; n += len(chunk) {
		f.Write(chunk)
	}
	fmt.Fprintln(f, `","timestamp":1}}`)
	fmt.Fprintln(f, `{"type":"message","id":"b","message":{"role":"user","content":"after","timestamp":2}}`)
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		e := openTest(b)
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		stop := make(chan struct{})
		done := make(chan uint64)
		go func() {
			var max uint64
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > max {
					max = ms.HeapInuse
				}
				select {
				case <-stop:
					done <- max
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		res, err := e.Import(context.Background(), "", path)
		close(stop)
		m := <-done
		if err != nil || res.Imported != 1 || len(res.Malformed) != 1 {
			b.Fatalf("import: %+v %v", res, err)
		}
		if m > base.HeapInuse && m-base.HeapInuse > peak {
			peak = m - base.HeapInuse
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// TestImportDetectsSameLengthEdit: an edit in the middle of an imported
// file that keeps its length (and its first line and last entry) is
// detected: the file is read again and the edited message stored.
func TestImportDetectsSameLengthEdit(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "edit.jsonl")
	lines := [][]byte{[]byte(`{"type":"session","version":4,"id":"sess-edit","timestamp":"2026-01-01T00:00:00Z"}`)}
	for i := 0; i < 40; i++ {
		lines = append(lines, []byte(fmt.Sprintf(`{"type":"message","id":"m%02d","message":{"role":"user","content":"note %02d: the answer is 42","timestamp":%d}}`, i, i, i+1)))
	}
	writeLines(t, path, lines, false)
	if res, err := e.Import(ctx, "", path); err != nil || res.Imported != 40 {
		t.Fatalf("first import: %+v %v", res, err)
	}
	if res, err := e.Import(ctx, "", path); err != nil || res.Imported != 0 || !res.Resumed {
		t.Fatalf("unchanged file: %+v %v", res, err)
	}
	// Line 21 (message 19): "42" becomes "43", same length.
	lines[20] = bytes.Replace(lines[20], []byte("is 42"), []byte("is 43"), 1)
	writeLines(t, path, lines, false)
	res, err := e.Import(ctx, "", path)
	if err != nil || res.Resumed || res.Imported != 1 {
		t.Fatalf("after a same-length edit of line 21: %+v %v (want the file read again, 1 message stored)", res, err)
	}
	found := false
	for _, raw := range storedMessages(t, e, "", "sess-edit") {
		found = found || bytes.Contains(raw, []byte("note 19: the answer is 43"))
	}
	if !found {
		t.Fatal("the edited message is not stored")
	}
}
