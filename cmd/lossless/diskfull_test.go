package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

// The tests of this file fill a small tmpfs holding the store while a
// command runs (#27: a SIGBUS in Badger's mapped writes, a recall index
// waiting for ever on a persist that cannot happen). They need root to
// mount it: elsewhere they skip, unless LOSSLESS_TEST_TMPFS_REQUIRED=1
// (.ci/run sets it when it runs as root), which makes a failed mount fail.
// LOSSLESS_TEST_DISKFULL_POINTS=N fills the disk at N moments of the
// import instead of the default 4.

// tmpfsMount mounts a tmpfs of sizeMiB on a temporary directory
// (testutil.Tmpfs: root only).
func tmpfsMount(t *testing.T, sizeMiB int) string { return testutil.Tmpfs(t, sizeMiB) }

// tmpfsMountAt mounts a tmpfs of sizeMiB on the directory mnt.
func tmpfsMountAt(t *testing.T, mnt string, sizeMiB int) { testutil.TmpfsAt(t, mnt, sizeMiB) }

// fillDisk writes a file until the filesystem is full (testutil.FillDisk).
func fillDisk(t *testing.T, path string) { testutil.FillDisk(t, path) }

// fillDiskLeaving fills the filesystem under path, then gives back leave
// bytes (tmpfs frees a truncated file's pages), so exactly that much is
// free when the command starts.
func fillDiskLeaving(t *testing.T, path string, leave int64) {
	t.Helper()
	fillDisk(t, path)
	if leave == 0 {
		return
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < leave {
		t.Fatalf("the filler holds %d bytes, fewer than the %d to leave free", st.Size(), leave)
	}
	if err := os.Truncate(path, st.Size()-leave); err != nil {
		t.Fatal(err)
	}
}

// background is a command started without waiting for it.
type background struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	done     chan struct{}
	code     int
}

func startCLI(t *testing.T, args ...string) *background {
	t.Helper()
	b := &background{cmd: exec.Command(binary(t), args...), done: make(chan struct{})}
	b.cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "LOSSLESS_TOKENIZER=chars4"}
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.err
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := b.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			b.code = ee.ExitCode()
		case err != nil:
			b.code = -1
		}
		close(b.done)
	}()
	return b
}

// wait waits up to limit for the command; past it the test fails (a hang).
func (b *background) wait(t *testing.T, limit time.Duration, what string) result {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(limit):
		_ = b.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, for the failure message
		<-b.done
		t.Fatalf("%s still running after %v on a full disk (a hang):\n%s", what, limit, tail(b.err.String(), 4000))
	}
	return result{b.out.String(), b.err.String(), b.code}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// fullDiskEnd checks how a command that met a full disk ended: exit 0 (it
// finished before the disk filled) or 1 with a disk-full message, and no
// runtime dump either way. It reports whether the disk stopped it.
func fullDiskEnd(t *testing.T, r result, what string) bool {
	t.Helper()
	for _, bad := range []string{"goroutine ", "SIGBUS", "panic:", "fatal error", "unexpected fault address"} {
		if strings.Contains(r.stderr, bad) {
			t.Fatalf("%s: runtime dump on a full disk (exit %d):\n%s", what, r.code, tail(r.stderr, 4000))
		}
	}
	switch r.code {
	case 0:
		return false
	case 1:
		if !strings.Contains(r.stderr, "disk full") {
			t.Fatalf("%s: exit 1 without saying the disk is full:\n%s", what, tail(r.stderr, 4000))
		}
		return true
	}
	t.Fatalf("%s: exit %d on a full disk, want 0 or 1:\n%s", what, r.code, tail(r.stderr, 4000))
	return false
}

// checkIntact checks a store after space was freed: doctor --deep finds no
// problem, importing the files again completes them, and every session
// exports byte for byte as its file has it (so nothing acknowledged was
// lost and nothing is there twice).
func checkIntact(t *testing.T, store string, files []string) {
	t.Helper()
	runCLI(t, "", nil, append([]string{"import", "--store", store}, files...)...).want(t, 0)
	runCLI(t, "", nil, "doctor", "--store", store, "--deep").want(t, 0, "0 problem(s)")
	for _, f := range files {
		header, want := messageObjects(t, f)
		r := runCLI(t, "", nil, "export", "--store", store, "--session", header)
		r.want(t, 0)
		got := bytes.Split(bytes.TrimSuffix([]byte(r.stdout), []byte("\n")), []byte("\n"))
		if len(got) != len(want) {
			t.Fatalf("%s after space was freed: %d messages exported, the file has %d", filepath.Base(f), len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s after space was freed: message %d differs\n got %.300s\nwant %.300s", filepath.Base(f), i, got[i], want[i])
			}
		}
	}
}

// diskFullPoints is how many moments of an import TestDiskFullDuringImport
// fills the disk at.
func diskFullPoints(t *testing.T) int {
	if s := os.Getenv("LOSSLESS_TEST_DISKFULL_POINTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LOSSLESS_TEST_DISKFULL_POINTS=%q: want a count", s)
		}
		return n
	}
	return 4
}

// TestDiskFullDuringImport imports two pi-mono transcripts into a store on
// a 512 MiB tmpfs (writes need 160 MiB free, the room the store keeps for
// its next logs). It fills the tmpfs before the import starts, leaving 0,
// 100, 150 and 200 MiB free (the store cannot open; it opens and its first
// write is refused; it writes until the guard refuses), and at several
// moments of a running import (a write then meets ENOSPC allocating the
// next step of Badger's logs, or the close creating a table): the
// import ends by itself, within a bound, with exit 1 and "disk full" (or
// exit 0 when what it wrote was already durable), never with a runtime
// dump, and an import onto a full disk always stops; after the filler is
// removed the store opens, doctor --deep is clean, and importing again
// completes every session byte for byte with nothing twice. Without the
// fixes of #27 it died of a SIGBUS in Badger's mapped writes or waited
// for ever in the recall index's Close. (The moments were once the only
// fills, with "at least one stopped" asserted: on a fast machine the
// store opened before every fill and the assertion failed in CI.)
func TestDiskFullDuringImport(t *testing.T) {
	files := testutil.PiMono(t)
	mnt := tmpfsMount(t, 512)
	points := diskFullPoints(t)
	// Spread the moments over the import's length, measured first.
	binary(t)
	start := time.Now()
	runCLI(t, "", nil, append([]string{"import", "--store", filepath.Join(mnt, "timing")}, files...)...).want(t, 0)
	took := time.Since(start)
	if err := os.RemoveAll(filepath.Join(mnt, "timing")); err != nil {
		t.Fatal(err)
	}
	// Fills at a known state first: the disk full, or with a little room
	// left, before the import starts (the first must stop it, whatever
	// the machine's speed: its store cannot open), then fills at moments
	// of a running import.
	type fill struct {
		name  string
		delay time.Duration // after the start; -1: before it
		leave int64         // bytes left free by a fill before the start
	}
	var fills []fill
	for _, mib := range []int64{0, 100, 150, 200} {
		fills = append(fills, fill{fmt.Sprintf("before_start_%dMiB_free", mib), -1, mib << 20})
	}
	for i := 0; i < points; i++ {
		delay := took * time.Duration(i) / time.Duration(points)
		fills = append(fills, fill{name: fmt.Sprintf("fill_after_%dms", delay.Milliseconds()), delay: delay})
	}
	for i, f := range fills {
		t.Run(f.name, func(t *testing.T) {
			store := filepath.Join(mnt, fmt.Sprintf("store%d", i))
			filler := filepath.Join(mnt, "filler")
			if f.delay < 0 {
				fillDiskLeaving(t, filler, f.leave)
			}
			b := startCLI(t, append([]string{"import", "--store", store}, files...)...)
			if f.delay >= 0 {
				time.Sleep(f.delay)
				fillDisk(t, filler)
			}
			r := b.wait(t, 30*time.Second, "import")
			stopped := fullDiskEnd(t, r, "import")
			if f.delay < 0 && f.leave == 0 && !stopped {
				t.Fatalf("an import onto a full disk exited %d, want 1 and \"disk full\":\n%s", r.code, tail(r.stderr, 2000))
			}
			t.Logf("exit %d: %s", r.code, strings.TrimSpace(tail(r.stderr, 300)))
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			checkIntact(t, store, files)
			if err := os.RemoveAll(store); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDiskFullSIGTERM: SIGTERM to an import stalled on a full disk ends it
// within a bound (the command's grace, 5 s, and a margin), without a
// runtime dump, and the store is intact once space is freed.
func TestDiskFullSIGTERM(t *testing.T) {
	files := testutil.PiMono(t)
	mnt := tmpfsMount(t, 512)
	store := filepath.Join(mnt, "store")
	filler := filepath.Join(mnt, "filler")
	b := startCLI(t, append([]string{"import", "--store", store}, files...)...)
	time.Sleep(100 * time.Millisecond)
	fillDisk(t, filler)
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	r := b.wait(t, interruptGrace+5*time.Second, "import after SIGTERM")
	t.Logf("ended %v after SIGTERM, exit %d: %s", time.Since(sent).Round(time.Millisecond), r.code, strings.TrimSpace(tail(r.stderr, 300)))
	for _, bad := range []string{"goroutine ", "SIGBUS", "panic:", "fatal error"} {
		if strings.Contains(r.stderr, bad) {
			t.Fatalf("runtime dump after SIGTERM on a full disk:\n%s", tail(r.stderr, 4000))
		}
	}
	if r.code == 0 && !strings.Contains(r.stdout, "total:") {
		t.Fatalf("exit 0 after SIGTERM without finishing:\n%s\n%s", r.stdout, r.stderr)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	checkIntact(t, store, files)
}

// TestDiskFullDuringCompact: compact (of the larger pi-mono transcript,
// forced to a small budget) with the disk filling as it starts and
// midway ends with exit 0 or 1 and "disk full", within a bound, without a
// runtime dump; the store stays intact.
func TestDiskFullDuringCompact(t *testing.T) {
	files := testutil.PiMono(t)
	mnt := tmpfsMount(t, 512)
	header, _ := messageObjects(t, files[0])
	for i, delay := range []time.Duration{0, 200 * time.Millisecond} {
		t.Run(fmt.Sprintf("fill_after_%dms", delay.Milliseconds()), func(t *testing.T) {
			store := filepath.Join(mnt, fmt.Sprintf("store%d", i))
			filler := filepath.Join(mnt, "filler")
			runCLI(t, "", nil, append([]string{"import", "--store", store}, files...)...).want(t, 0)
			b := startCLI(t, "compact", "--store", store, "--session", header, "--budget", "2000", "--force")
			time.Sleep(delay)
			fillDisk(t, filler)
			r := b.wait(t, 30*time.Second, "compact")
			fullDiskEnd(t, r, "compact")
			t.Logf("exit %d: %s", r.code, strings.TrimSpace(tail(r.stderr, 300)))
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			checkIntact(t, store, files)
			runCLI(t, "", nil, "compact", "--store", store, "--session", header, "--budget", "2000", "--force").want(t, 0)
		})
	}
}
