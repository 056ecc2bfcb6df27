package badgerstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/internal/diskusage"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/store"
)

// logBlocks returns the bytes allocated to the store's memtable and value
// logs (.mem, .vlog) and its value log's discard stats (DISCARD) under dir.
func logBlocks(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".mem") || strings.HasSuffix(p, ".vlog") || filepath.Base(p) == "DISCARD") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += diskusage.File(info)
		return nil
	})
	must(t, err)
	return n
}

// randomBody is n characters that zstd does not shrink much (so they go
// to the value log as they are).
func randomBody(t testing.TB, n int) string {
	b := make([]byte, n*3/4+3)
	_, err := rand.Read(b)
	must(t, err)
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// TestLogsAllocatedAsWritten: an open store's memtable and value logs
// hold blocks for what was written, within the patched Badger's 256 KiB
// step (third_party/badger, logFile.reserve; 64 KiB for DISCARD), not
// their whole mapped size (2 x 64 MiB of value log, 2 x 8 MiB of memtable
// and 1 MiB of DISCARD at the defaults, all of it allocated at creation
// before); values written while
// two readers read back what was acknowledged come back byte for byte,
// before and after a reopen (go test -race: the writer allocating as it
// goes must not race with the readers of the mapping).
func TestLogsAllocatedAsWritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, Options{Dir: dir})
	must(t, err)
	if n := logBlocks(t, dir); n > 1<<20 {
		t.Fatalf("a new store's logs hold %d KiB of blocks, want at most 1 MiB (they are allocated as written)", n>>10)
	}

	const txns, perTxn, size = 96, 8, 24 << 10 // 18 MiB of values
	bodies := make(map[uint64]string, txns*perTxn)
	var written atomic.Uint64 // the last acknowledged seq
	var mu sync.Mutex
	body := func(seq uint64) string { mu.Lock(); defer mu.Unlock(); return bodies[seq] }
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(r); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				last := written.Load()
				if last == 0 {
					continue
				}
				seq := 1 + i%last
				err := s.View(ctx, func(rd store.Reader) error {
					m, err := rd.Message(gConv, seq)
					if err != nil {
						return err
					}
					if want := testMessage(seq, body(seq)).Raw; !bytes.Equal(m.Raw, want) {
						t.Errorf("message %d read while writing differs", seq)
					}
					return nil
				})
				if err != nil {
					t.Errorf("read %d: %v", seq, err)
					return
				}
			}
		}()
	}
	var raw int64
	for k := range uint64(txns) {
		first := k*perTxn + 1
		mu.Lock()
		for seq := first; seq < first+perTxn; seq++ {
			bodies[seq] = randomBody(t, size)
			raw += size
		}
		mu.Unlock()
		update(t, s, func(tx store.Tx) error {
			for seq := first; seq < first+perTxn; seq++ {
				if err := tx.PutMessage(gConv, testMessage(seq, body(seq))); err != nil {
					return err
				}
			}
			return nil
		})
		written.Store(first + perTxn - 1)
	}
	close(stop)
	wg.Wait()
	// What was written, plus a step for each of the two files being
	// written, plus memtables awaiting their flush (each a step at most
	// beyond what it holds).
	if n := logBlocks(t, dir); n > raw+raw/10+4<<20 {
		t.Errorf("after %d MiB of values the logs hold %d MiB of blocks, want at most %d", raw>>20, n>>20, (raw+raw/10+4<<20)>>20)
	}
	must(t, s.Close())

	s = openTest(t, Options{Dir: dir})
	view(t, s, func(rd store.Reader) error {
		for seq := uint64(1); seq <= txns*perTxn; seq++ {
			m, err := rd.Message(gConv, seq)
			if err != nil {
				return err
			}
			if !bytes.Equal(m.Raw, testMessage(seq, bodies[seq]).Raw) {
				t.Errorf("message %d differs after a reopen", seq)
			}
		}
		return nil
	})
}

// TestDiskFillingWhileOpen fills the filesystem (a small tmpfs: root only)
// while a store is open and its space guard's look says there is room, as
// when another process takes the space between two looks: a write then
// meets the full disk in Badger's allocation of its logs' next step
// (third_party/badger, logFile.reserve) and fails with store.ErrDiskFull
// (a SIGBUS would kill this test binary); the Update that failed left none
// of its records, every acknowledged one reads back byte for byte, and
// after space is freed the store reopens with all of them and takes
// writes again.
func TestDiskFillingWhileOpen(t *testing.T) {
	// Large bodies go to the value log, small ones (below the store's
	// 1 KiB value threshold once compressed) to the memtable log only;
	// an Update of 64 of them straddles the log's allocation steps.
	t.Run("value log", func(t *testing.T) { diskFillingWhileOpen(t, 8, 16<<10) })
	t.Run("memtable log", func(t *testing.T) { diskFillingWhileOpen(t, 64, 600) })
}

func diskFillingWhileOpen(t *testing.T, perTxn, size int) {
	ctx := context.Background()
	mnt := testutil.Tmpfs(t, 48)
	dir := filepath.Join(mnt, "store")
	roomy := func(string) (uint64, error) { return 1 << 40, nil } // the guard sees room
	s, err := Open(ctx, Options{Dir: dir, FreeSpace: roomy})
	must(t, err)
	filler := filepath.Join(mnt, "filler")
	testutil.FillDisk(t, filler)

	bodies := map[uint64]string{}
	var acked, seq uint64
	var failed error
	for k := 0; k < 10000 && failed == nil; k++ {
		first := seq + 1
		for range perTxn {
			seq++
			bodies[seq] = randomBody(t, size)
		}
		failed = s.Update(ctx, func(tx store.Tx) error {
			for q := first; q <= seq; q++ {
				if err := tx.PutMessage(gConv, testMessage(q, bodies[q])); err != nil {
					return err
				}
			}
			return nil
		})
		if failed == nil {
			acked = seq
		}
	}
	if failed == nil {
		t.Fatalf("%d MiB written on a full 48 MiB tmpfs without an error", seq*uint64(size)>>20)
	}
	if !errors.Is(failed, store.ErrDiskFull) {
		t.Fatalf("the write that met the full disk: %v, want store.ErrDiskFull", failed)
	}
	check := func(s *Store, when string) {
		t.Helper()
		view(t, s, func(rd store.Reader) error {
			for q := uint64(1); q <= seq; q++ {
				m, err := rd.Message(gConv, q)
				switch {
				case q > acked && errors.Is(err, store.ErrNotFound):
				case q > acked:
					t.Errorf("%s: message %d of the refused Update: %v, want not found (an Update is whole or absent)", when, q, err)
				case err != nil:
					t.Errorf("%s: acknowledged message %d: %v", when, q, err)
				case !bytes.Equal(m.Raw, testMessage(q, bodies[q]).Raw):
					t.Errorf("%s: acknowledged message %d differs", when, q)
				}
			}
			return nil
		})
	}
	check(s, "on the full disk")
	must(t, os.Remove(filler))
	must(t, s.Close())
	s = openTest(t, Options{Dir: dir, FreeSpace: roomy})
	check(s, "reopened with space freed")
	update(t, s, func(tx store.Tx) error { return tx.PutMessage(gConv, testMessage(seq+1, "after")) })
	t.Logf("%d Updates acknowledged (%d KiB) before the disk was full", acked/uint64(perTxn), acked*uint64(size)>>10)
}

// TestCloseOnFullDisk: a Close on a full disk (a write met it; a small
// tmpfs: root only) cannot finish, since Badger cannot write its memtable
// to a table: after CloseGrace it says so (store.ErrDiskFull,
// ErrCloseUnfinished, naming the lock), and the directory is locked (an
// Open fails) for as long as the disk stays full; once space is freed
// Badger finishes closing, a later Close returns nil, and the store opens
// again with every acknowledged write.
func TestCloseOnFullDisk(t *testing.T) {
	ctx := context.Background()
	mnt := testutil.Tmpfs(t, 48)
	dir := filepath.Join(mnt, "store")
	roomy := func(string) (uint64, error) { return 1 << 40, nil } // the guard sees room
	const grace = 300 * time.Millisecond
	s, err := Open(ctx, Options{Dir: dir, FreeSpace: roomy, CloseGrace: grace})
	must(t, err)
	filler := filepath.Join(mnt, "filler")
	testutil.FillDisk(t, filler)
	var acked, seq uint64
	var failed error
	for k := 0; k < 10000 && failed == nil; k++ {
		first := seq + 1
		seq += 64
		failed = s.Update(ctx, func(tx store.Tx) error {
			for q := first; q <= seq; q++ {
				if err := tx.PutMessage(gConv, testMessage(q, strings.Repeat("z", 600))); err != nil {
					return err
				}
			}
			return nil
		})
		if failed == nil {
			acked = seq
		}
	}
	if !errors.Is(failed, store.ErrDiskFull) || acked == 0 {
		t.Fatalf("filling the disk: %v after %d messages, want store.ErrDiskFull after some", failed, acked)
	}

	start := time.Now()
	err = s.Close()
	if !errors.Is(err, store.ErrDiskFull) || !errors.Is(err, ErrCloseUnfinished) || !strings.Contains(err.Error(), "holds the lock") {
		t.Fatalf("Close on a full disk: %v, want store.ErrDiskFull and ErrCloseUnfinished, saying the lock stays held", err)
	}
	if d := time.Since(start); d < grace {
		t.Errorf("Close returned after %v, before its grace of %v", d, grace)
	}
	if s2, err := Open(ctx, Options{Dir: dir, FreeSpace: roomy}); err == nil {
		s2.Close()
		t.Fatal("the store opened while its Close had not finished: the lock was released with the memtable unwritten")
	}
	if err := s.Close(); !errors.Is(err, ErrCloseUnfinished) {
		t.Fatalf("Close again while the disk is full: %v, want ErrCloseUnfinished", err)
	}

	must(t, os.Remove(filler))
	deadline := time.Now().Add(30 * time.Second)
	for err = s.Close(); err != nil; err = s.Close() {
		if !errors.Is(err, ErrCloseUnfinished) || time.Now().After(deadline) {
			t.Fatalf("Close after space was freed: %v, want nil once Badger finished", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s = openTest(t, Options{Dir: dir, FreeSpace: roomy})
	view(t, s, func(rd store.Reader) error {
		for q := uint64(1); q <= acked; q++ {
			if _, err := rd.Message(gConv, q); err != nil {
				t.Fatalf("acknowledged message %d after the unfinished close: %v", q, err)
			}
		}
		return nil
	})
}
