package lossless

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// TestKeyLocksForget: a key's lock serialises its holders, a waiter whose
// context ends gives up, and a lock no one holds or waits for is
// forgotten (the table stays as small as what is in use).
func TestKeyLocksForget(t *testing.T) {
	var l keyLocks[string]
	ctx := context.Background()
	unlock, err := l.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.lock(short, "a"); err == nil {
		t.Fatal("a second holder took a held lock")
	}
	var wg sync.WaitGroup
	in := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := l.lock(ctx, "a")
			if err != nil {
				t.Error(err)
				return
			}
			in++ // serialised by the lock (the race detector checks)
			u()
		}()
	}
	unlock()
	wg.Wait()
	if in != 8 || l.size() != 0 {
		t.Fatalf("%d holders, %d keys left", in, l.size())
	}
}

// TestEngineLockTablesStayBounded: imports of many files and compactions
// of many conversations leave no lock behind, and the background results
// kept are bounded.
func TestEngineLockTablesStayBounded(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	for i := 0; i < 50; i++ {
		s := fmt.Sprintf("s%d", i)
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: s, Messages: turnMessages(20, 30, 1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Compact(ctx, core.CompactParams{SessionID: s, TokenBudget: 500, Force: true}); err != nil {
			t.Fatal(err)
		}
		u, err := e.lockImport(ctx, "main", fmt.Sprintf("/tmp/file-%d.jsonl", i))
		if err != nil {
			t.Fatal(err)
		}
		u()
	}
	if n, m := e.compaction.convMus.size(), e.importMus.size(); n != 0 || m != 0 {
		t.Fatalf("%d compaction locks and %d import locks left after the calls ended", n, m)
	}
	if e.compaction.last.Len() > maxBackgroundResults {
		t.Fatalf("%d background results kept", e.compaction.last.Len())
	}
}

// TestForkCachesBounded: the fork caches of many subagents are bounded
// (the oldest forgotten), and an ended child's goes at once.
func TestForkCachesBounded(t *testing.T) {
	e := openTest(t)
	for i := 0; i < 3*maxForkCaches; i++ {
		e.forkCache(subIDOf("main", fmt.Sprintf("agent:main:subagent:%d", i)))
	}
	if n := e.subagents.forks.Len(); n > maxForkCaches {
		t.Fatalf("%d fork caches kept, bound %d", n, maxForkCaches)
	}
	last := subIDOf("main", fmt.Sprintf("agent:main:subagent:%d", 3*maxForkCaches-1))
	if !e.subagents.forks.Contains(last) {
		t.Fatal("the newest fork cache was forgotten")
	}
	if err := e.OnSubagentEnded(context.Background(), core.SubagentEndedParams{ChildSessionKey: fmt.Sprintf("agent:main:subagent:%d", 3*maxForkCaches-1), Reason: core.SubagentCompleted}); err != nil {
		t.Fatal(err)
	}
	if e.subagents.forks.Contains(last) {
		t.Fatal("an ended child's fork cache is kept")
	}
}
