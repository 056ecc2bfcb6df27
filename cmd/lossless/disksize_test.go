package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// allocatedBytes is what du counts for the regular files of dir (with
// sub, every level down; without, the top level only): st_blocks × 512,
// read here independently of package diskusage.
func allocatedBytes(t *testing.T, dir string, sub bool) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && p != dir && !sub {
			return filepath.SkipDir
		}
		if info.Mode().IsRegular() {
			n += info.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// near reports whether got is within 1% (and 64 KiB) of want.
func near(got, want int64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= 64<<10+want/100
}

// TestDiskSizesAgree: `stats`, `doctor` and the explorer's health page
// give the store's size on disk and the recall index's by one definition,
// the blocks allocated to their files as du counts them (#27: the explorer
// said 130 MiB, doctor 1.2 MiB and du 3.5 MB of one store). On the closed
// store stats and doctor equal the allocation of the store directory's
// files (the index directory aside) and of the index's; the explorer,
// which holds the store open for writing (its logs allocated ahead), is
// within 1% of the allocation measured while it runs.
func TestDiskSizesAgree(t *testing.T) {
	if _, ok := any(&syscall.Stat_t{}).(*syscall.Stat_t); !ok {
		t.Skip("no st_blocks here")
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-size", 400)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "800 imported")
	index := filepath.Join(store, "index")
	storeDu, indexDu := allocatedBytes(t, store, false), allocatedBytes(t, index, true)
	if storeDu == 0 || indexDu == 0 {
		t.Fatalf("du: store %d, index %d bytes: nothing allocated", storeDu, indexDu)
	}

	r := runCLI(t, "", nil, "stats", "--store", store, "--json")
	r.want(t, 0)
	var stats struct{ DiskBytes, IndexBytes int64 }
	if err := json.Unmarshal([]byte(r.stdout), &stats); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, r.stdout)
	}
	r = runCLI(t, "", nil, "doctor", "--store", store, "--json")
	r.want(t, 0)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if rep.Store.Recall == nil {
		t.Fatalf("doctor reports no recall index:\n%s", r.stdout)
	}
	t.Logf("closed: du store %d index %d; stats %d %d; doctor %d %d", storeDu, indexDu, stats.DiskBytes, stats.IndexBytes, rep.Store.DiskBytes, rep.Store.Recall.DiskBytes)
	if stats.DiskBytes != rep.Store.DiskBytes || stats.IndexBytes != rep.Store.Recall.DiskBytes {
		t.Fatalf("stats says %d + %d bytes, doctor %d + %d", stats.DiskBytes, stats.IndexBytes, rep.Store.DiskBytes, rep.Store.Recall.DiskBytes)
	}
	if !near(rep.Store.DiskBytes, storeDu) || !near(rep.Store.Recall.DiskBytes, indexDu) {
		t.Fatalf("doctor says store %d, index %d bytes; du counts %d and %d", rep.Store.DiskBytes, rep.Store.Recall.DiskBytes, storeDu, indexDu)
	}

	_, page := startUI(t, "--store", store)
	// The open engine may still write (the recall index persists and
	// merges its segments in the background): the explorer's figures are
	// compared with du's taken just before and just after them, once the
	// two agree (the files did not change in between), a few tries at
	// most.
	var h struct{ DiskBytes, IndexBytes int64 }
	var openDu, openIndexDu int64
	for try := 0; ; try++ {
		beforeDu, beforeIndexDu := allocatedBytes(t, store, false), allocatedBytes(t, index, true)
		code, body := apiGet(t, page, "/api/health")
		if code != http.StatusOK {
			t.Fatalf("/api/health: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatal(err)
		}
		openDu, openIndexDu = allocatedBytes(t, store, false), allocatedBytes(t, index, true)
		if (beforeDu == openDu && beforeIndexDu == openIndexDu) || try == 20 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("open: du store %d index %d; explorer %d %d", openDu, openIndexDu, h.DiskBytes, h.IndexBytes)
	if !near(h.DiskBytes, openDu) || !near(h.IndexBytes, openIndexDu) {
		t.Fatalf("the explorer says store %d, index %d bytes; du counts %d and %d", h.DiskBytes, h.IndexBytes, openDu, openIndexDu)
	}
}
