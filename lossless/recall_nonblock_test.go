package lossless

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// storeWithoutIndex fills a store with convs conversations of n messages
// each and removes its recall index, so that the next Open rebuilds it.
func storeWithoutIndex(t *testing.T, convs, n int) config.Config {
	t.Helper()
	ctx := context.Background()
	cfg := testConfig(t.TempDir())
	withRecall(&cfg)
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < convs; c++ {
		msgs := make([]core.Message, n)
		for i := range msgs {
			msgs[i] = core.UserText(fmt.Sprintf("history %d-%d about the deploy of service alpha", c, i), int64(c*n+i+1))
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: fmt.Sprint("old", c), SessionKey: fmt.Sprint("agent:main:old", c), Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(cfg.StoreDir, "index")); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// within runs f and fails the test if it has not returned after a minute
// (a call blocked on a held rebuild or a held index queue never returns).
func within(t *testing.T, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s blocked", what)
	}
}

// TestAssembleDuringRebuild: while the recall index is rebuilt (held
// mid-way by a hook, so it provably still runs), Assemble with a 50 ms
// deadline returns, recall searches what the old index holds (here a turn
// ingested during the rebuild) and the details say the recall was partial.
// Before the rebuild was built aside, the search waited for the index
// lock the rebuild held: the call never returned while it was held.
func TestAssembleDuringRebuild(t *testing.T) {
	const holdAt = 500
	cfg := storeWithoutIndex(t, 2, 1000)
	held, release := make(chan struct{}), make(chan struct{})
	h := testHooks{rebuild: func(ctx context.Context, n int) {
		if n == holdAt {
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}}
	ctx := context.Background()
	e, err := openHooked(ctx, cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer close(release)
	<-held
	ingestTurns(t, e, "b", "agent:main:b", "the wifi password is hunter2-orange", "noted")
	within(t, "flush the index during the rebuild", func() error {
		return e.recaller().Recall().Flush(ctx)
	})
	p := core.AssembleParams{SessionID: "q", SessionKey: "agent:main:q", TokenBudget: 10000, Prompt: "what is the wifi password?"}
	var res core.AssembleResult
	var det recalled.Details
	// A loaded machine may stall a goroutine past 50 ms: a deadline error
	// is retried; a blocked call fails the test.
	for try := 0; ; try++ {
		var err error
		within(t, "assemble during the rebuild", func() error {
			actx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			res, det, err = e.AssembleWithDetails(actx, p)
			return nil
		})
		if err == nil && det.Recall.Status != recalled.Failed {
			break
		}
		if try == 2 || (err != nil && !errors.Is(err, context.DeadlineExceeded)) {
			t.Fatalf("assemble during the rebuild: %v %+v", err, det)
		}
	}
	if st := e.RecallStatus(); !st.Rebuilding || st.Rebuilt >= 2000 {
		t.Fatalf("status %+v: the rebuild should still be held", st)
	}
	if !det.Recall.Partial || !strings.Contains(det.Recall.Reason, "being rebuilt") {
		t.Fatalf("details %+v: want a partial recall", det)
	}
	if det.Recall.Status != recalled.Injected || !strings.Contains(recallMessage(res), "hunter2-orange") {
		t.Fatalf("recall from what the old index holds: %+v\n%s", det, recallMessage(res))
	}
	// Once the rebuild ends, the details say nothing of it.
	release <- struct{}{}
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if _, det, err = e.AssembleWithDetails(ctx, p); err != nil || det.Recall.Partial || det.Recall.Status != recalled.Injected {
		t.Fatalf("after the rebuild: %+v %v", det, err)
	}
}

// TestIngestHoldsNoEngineWideLock: an ingest into one conversation
// completes while another conversation's lock is held; and an ingest
// waiting for room in a full index queue holds no engine-wide lock: the
// recall status and an assemble of another conversation complete
// meanwhile. (The recall mutex ingest held while it waited made both
// wait for the queue.)
func TestIngestHoldsNoEngineWideLock(t *testing.T) {
	hold := make(chan struct{}, 1)     // a value: the next batch is held
	entered := make(chan struct{}, 16) // the worker reached a held batch
	release := make(chan struct{})
	e := openTestHooked(t, testHooks{indexMaxLag: 2, indexBatch: func() {
		select {
		case <-hold:
			entered <- struct{}{}
			<-release
		default:
		}
	}}, withRecall)
	var once sync.Once
	unhold := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unhold) // before Close, which waits for the held batch
	ctx := context.Background()
	ingestTurns(t, e, "a", "agent:main:a", "first turn of a", "reply")
	ingestTurns(t, e, "b", "agent:main:b", "the wifi password is hunter2-orange", "noted")
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}

	// Another conversation's lock.
	ca, err := e.lookup(ctx, "main", "a", "agent:main:a")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.lockConv(ctx, ca)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "ingest into b while a is locked", func() error {
		_, err := e.Ingest(ctx, core.IngestParams{SessionID: "b", SessionKey: "agent:main:b", Message: core.UserText("b goes on", 10)})
		return err
	})
	s.unlock()

	// A full index queue: the worker holds one batch, the queue holds more
	// than indexMaxLag docs, so the next ingest into a waits for room.
	within(t, "flush the index", func() error { return e.recaller().Recall().Flush(ctx) }) // nothing queued: the next batch is c's
	hold <- struct{}{}
	ingestTurns(t, e, "c", "agent:main:c", "held batch", "held too")
	<-entered
	within(t, "ingest into c with the worker held and room in the queue", func() error {
		_, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "c", SessionKey: "agent:main:c", Messages: []core.Message{
			core.UserText("queued one", 5), core.AssistantText("queued two", 6), core.UserText("queued three", 7)}})
		return err
	})
	if lag := e.recaller().Recall().Lag(); lag <= 2 {
		t.Fatalf("lag %d: the queue should be over its bound", lag)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := e.Ingest(ctx, core.IngestParams{SessionID: "a", SessionKey: "agent:main:a", Message: core.UserText("a waits for the queue", 20)})
		waiting <- err
	}()
	within(t, "the ingest into a reaching the full queue", func() error {
		for bleveOf(e.recaller()).Waiting() == 0 {
			select {
			case err := <-waiting:
				return fmt.Errorf("the ingest into a did not wait for the full queue: %v", err)
			case <-time.After(time.Millisecond):
			}
		}
		return nil
	})
	within(t, "recall status while an ingest waits for the queue", func() error {
		if st := e.RecallStatus(); !st.Enabled {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	within(t, "assemble another conversation while an ingest waits for the queue", func() error {
		res, det, err := e.AssembleWithDetails(ctx, core.AssembleParams{SessionID: "q", SessionKey: "agent:main:q", TokenBudget: 10000, Prompt: "what is the wifi password?"})
		if err == nil && !strings.Contains(recallMessage(res), "hunter2-orange") {
			err = fmt.Errorf("no recall: %+v", det)
		}
		return err
	})
	select {
	case err := <-waiting:
		t.Fatalf("the ingest into a did not wait for the full queue: %v", err)
	default:
	}
	unhold()
	within(t, "the ingest into a once the queue drains", func() error { return <-waiting })
}
