package lossless

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// Ingest while the recall index is rebuilt, with a queue so small that
// ingest must wait for the rebuild: ingest, the rebuild and Close all finish
// (the rebuild's progress never waits for the lock a blocked ingest holds).
func TestIngestDuringRebuildDoesNotDeadlock(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	ctx := context.Background()
	e, err := openHooked(ctx, cfg, testHooks{indexMaxLag: 5})
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 20; b++ {
		var msgs []core.Message
		for i := 0; i < 100; i++ {
			msgs = append(msgs, core.UserText(fmt.Sprintf("history %d-%d about the deploy of service alpha", b, i), int64(b*1000+i+1)))
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "old", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		e, err := Open(ctx, cfg) // starts a rebuild of 2,000 docs
		if err != nil {
			done <- err
			return
		}
		for i := 0; i < 60; i++ {
			if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "new",
				Message: core.UserText(fmt.Sprintf("new turn %d", i), int64(100_000+i))}); err != nil {
				done <- err
				return
			}
		}
		done <- e.Close()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ingest during a recall-index rebuild did not finish: deadlock")
	}
}
