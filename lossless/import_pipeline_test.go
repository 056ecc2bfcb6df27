package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/transcript"
)

// dumpStore returns every record of e's store (dumpRecords), with the
// conversation records' wall-clock times zeroed.
func dumpStore(t testing.TB, e *Engine) map[string]string {
	t.Helper()
	return dumpRecords(t, e, true)
}

func diffStores(a, b map[string]string) string {
	var diffs []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("only in first: %q", k))
		} else if v != w {
			diffs = append(diffs, fmt.Sprintf("differs: %q: %q vs %q", k, v, w))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("only in second: %q", k))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 10 {
		diffs = diffs[:10]
	}
	return strings.Join(diffs, "\n")
}

// TestImportPipelineEquivalent imports the same transcript (malformed
// lines, compaction entries, a torn last line, then the rest appended)
// with one worker and one batch, and with several workers and tiny batches
// (so that batches are parsed out of order and reordered): the stored
// records, the checkpoint and the results must be identical.
func TestImportPipelineEquivalent(t *testing.T) {
	ctx := context.Background()
	lines, torn := testutil.PipelineTranscript()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeLines(t, path, lines, false)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(torn)
	f.Close()

	configs := []importOpts{
		{Workers: 1, BatchLines: 1 << 20, BatchBytes: 1 << 30},
		{Workers: 4, BatchLines: 1, BatchBytes: 1},
		{Workers: 3, BatchLines: 2, BatchBytes: 1 << 30},
		{Workers: 2, BatchLines: 5, BatchBytes: 300},
	}
	engines := make([]*Engine, len(configs))
	results := make([][]transcript.Result, len(configs))
	for i, o := range configs {
		engines[i] = openTest(t)
		res, err := engines[i].importFileOpts(ctx, "main", "", "", path, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		results[i] = append(results[i], res)
	}
	// What the fixture must give (checked on the one-worker run).
	r := results[0][0]
	var malformed []int
	for _, le := range r.Malformed {
		malformed = append(malformed, le.Line)
	}
	if r.SessionID != "pipe-1" || r.Summaries != 2 || r.Duplicates != 1 || r.Imported != 28 ||
		fmt.Sprint(malformed) != "[15 18 19 41]" {
		t.Fatalf("one worker: %+v (malformed lines %v)", r, malformed)
	}
	st, _ := os.Stat(path)
	if r.Bytes != st.Size()-int64(len(torn)) {
		t.Fatalf("read %d bytes, want %d (all but the torn line)", r.Bytes, st.Size()-int64(len(torn)))
	}
	// Complete the torn line, append more, import again (resumed).
	f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("n\"}}\n"))
	f.Close()
	more := [][]byte{
		[]byte(`{"type":"message","id":"m27","message":{"role":"assistant","content":[{"type":"text","text":"after"}]}}`),
		[]byte(`{"type":"compaction","id":"c3","summary":"third","firstKeptEntryId":"m27"}`),
		[]byte(`{"type":"message","id":"m28","message":{"role":"user","content":"last"}}`),
	}
	writeLines(t, path, more, true)
	for i, o := range configs {
		res, err := engines[i].importFileOpts(ctx, "main", "", "", path, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		results[i] = append(results[i], res)
	}
	if r := results[0][1]; !r.Resumed || r.Imported != 3 || r.Summaries != 1 {
		t.Fatalf("one worker, resumed: %+v", r)
	}
	want := dumpStore(t, engines[0])
	if _, ok := want["checkpoint file main "+path]; !ok {
		t.Fatal("no checkpoint stored")
	}
	for i := 1; i < len(configs); i++ {
		if !reflect.DeepEqual(results[i], results[0]) {
			t.Errorf("%+v: results\n%+v\nwant\n%+v", configs[i], results[i], results[0])
		}
		if d := diffStores(want, dumpStore(t, engines[i])); d != "" {
			t.Errorf("%+v: stores differ:\n%s", configs[i], d)
		}
	}
}

// BenchmarkImportWorkers imports before-compaction.jsonl (2.4 MB, o200k
// counts, recall off) with the pipeline's parsing spread over 1, 2 and 4
// workers.
func BenchmarkImportWorkers(b *testing.B) {
	for _, w := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			path := testutil.PiMono(b)[0]
			st, _ := os.Stat(path)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			o := defaultImportOpts()
			o.Workers = w
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cfg := config.Default()
				cfg.StoreDir = b.TempDir()
				if err := json.Unmarshal([]byte(`{"recall":{"enabled":false}}`), &cfg); err != nil {
					b.Fatal(err)
				}
				e, err := Open(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				cpu0 := cpuTime()
				if _, err := e.importFileOpts(context.Background(), "main", "", "", path, o); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - cpu0
				b.StopTimer()
				e.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(st.Size())*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
		})
	}
}

// TestImportPipelineCanceled: a canceled import stops (its goroutines end:
// the race detector and the engine's Close would see them otherwise),
// reports the context's error, and a later import stores everything once.
func TestImportPipelineCanceled(t *testing.T) {
	lines, _ := testutil.PipelineTranscript()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeLines(t, path, lines, false)
	e := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := importOpts{Workers: 3, BatchLines: 1, BatchBytes: 1}
	if _, err := e.importFileOpts(ctx, "main", "", "", path, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled import: %v, want context.Canceled", err)
	}
	res, err := e.importFileOpts(context.Background(), "main", "", "", path, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 28 || res.Summaries != 2 || res.Resumed {
		t.Fatalf("after cancel: %+v", res)
	}
	ref := openTest(t)
	if _, err := ref.importFileOpts(context.Background(), "main", "", "", path, importOpts{Workers: 1, BatchLines: 1 << 20, BatchBytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if d := diffStores(dumpStore(t, ref), dumpStore(t, e)); d != "" {
		t.Fatalf("stores differ:\n%s", d)
	}
}

// TestImportStopsOnStoreError: when storing a chunk fails while the next
// chunks are read and prepared ahead (importChunks), the import returns
// that error at once (the read-ahead stopped, not waited for to the end of
// the file) and the next import finishes the file.
func TestImportStopsOnStoreError(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-stop", 3)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	// Rewritten (a new first message) and much longer: many chunks.
	lines = append(lines[:1:1], append([][]byte{[]byte(`{"type":"message","id":"new","message":{"role":"user","content":"inserted"}}`)}, lines[1:]...)...)
	for i := 0; i < 3000; i++ {
		lines = append(lines, []byte(fmt.Sprintf(`{"type":"message","id":"x%d","message":{"role":"user","content":"more %d"}}`, i, i)))
	}
	writeLines(t, path, lines, false)
	boom := errors.New("injected fault")
	stored := 0
	e.cfg.hooks.reconcileFault = func(stage string) error {
		if stage == "stored" {
			stored++
			return boom
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.Import(ctx, "", path)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boom) || stored != 1 {
			t.Fatalf("import with a fault: %v after %d chunks, want the fault after the first", err, stored)
		}
	case <-time.After(time.Minute):
		t.Fatal("import did not return after a store error")
	}
	e.cfg.hooks.reconcileFault = nil
	res, err := e.Import(ctx, "", path)
	// The failed import stored its first chunk: the next one finds those
	// stored and stores the rest.
	if err != nil || res.Resumed || res.Imported == 0 || res.Imported >= 3001 {
		t.Fatalf("import after the fault: %+v %v (want the file read again, the rest stored)", res, err)
	}
}
