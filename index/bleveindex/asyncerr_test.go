package bleveindex

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// scorchStat reads a counter of scorch's stats (Stats) for the live index.
func scorchStat(t *testing.T, ix *Index, name string) uint64 {
	t.Helper()
	ix.bmu.RLock()
	defer ix.bmu.RUnlock()
	adv, err := ix.bi.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		t.Fatalf("the index is %T, not scorch", adv)
	}
	v, ok := s.StatsMap()[name].(uint64)
	if !ok {
		t.Fatalf("scorch stats have no counter %s", name)
	}
	return v
}

// TestPersistFailureBacksOff: when scorch cannot persist (its directory is
// gone, as a full disk refuses a file), its persister's retries are paced
// (asyncerr.go): over a 2 s window after the first failure it fails a
// handful of times, where it used to retry at once, for ever (a busy core
// until shutdown; #27). Once the directory is back, it persists again
// within the pause's cap; Close ends a pause at once and reports the
// failure.
func TestPersistFailureBacksOff(t *testing.T) {
	ix, _ := openTest(t, Options{})
	sp := scorchPath(ix.path())
	away := sp + ".away"
	if err := os.Rename(sp, away); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		ix.Add(msg("a", "s", uint64(i+1), fmt.Sprintf("message %d about the disk that filled", i)))
	}
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := failureOf(sp)
	select {
	case <-f.ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no persist error reported 30 s after the index directory went away")
	}
	const window = 2 * time.Second
	before := scorchStat(t, ix, "TotPersistLoopErr")
	time.Sleep(window)
	failed := scorchStat(t, ix, "TotPersistLoopErr") - before
	// Paced: 50 ms doubling, at most 6 attempts in 2 s (the first of the
	// window may come just after its start). Retried at once it was
	// thousands.
	t.Logf("%d failed persists in %v", failed, window)
	if failed > 8 {
		t.Fatalf("%d failed persists in %v: the persister retries without a pause (a busy loop)", failed, window)
	}

	// The directory is back: a retry persists what is in memory.
	if err := os.Rename(away, sp); err != nil {
		t.Fatal(err)
	}
	want := scorchStat(t, ix, "CurRootEpoch")
	deadline := time.Now().Add(retryMax + 10*time.Second)
	for scorchStat(t, ix, "LastPersistedEpoch") < want {
		if time.Now().After(deadline) {
			t.Fatalf("nothing persisted %v after the directory came back", retryMax+10*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Away again, until the pauses are long: Close does not wait for one.
	if err := os.Rename(sp, away); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(away, sp)
	for i := range 50 {
		ix.Add(msg("a", "s", uint64(1000+i), fmt.Sprintf("later message %d", i)))
	}
	if err := ix.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for f.pausing() < retryMax/2 {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	err := ix.Close()
	took := time.Since(start)
	if err == nil {
		t.Fatal("Close after a failed persist returned no error")
	}
	if took > retryMax/2 {
		t.Fatalf("Close took %v: it waited for a retry pause", took)
	}
}

func TestRetryDelay(t *testing.T) {
	want := []time.Duration{50, 100, 200, 400, 800, 1600, 3200, 4000, 4000}
	for n, w := range want {
		if got := retryDelay(n); got != w*time.Millisecond {
			t.Errorf("retryDelay(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	if got := retryDelay(1000); got != retryMax {
		t.Errorf("retryDelay(1000) = %v, want %v", got, retryMax)
	}
}
