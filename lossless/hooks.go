package lossless

import (
	"context"
	"time"
)

// testHooks are the seams tests open into an engine (given to
// openHooked or openStoreHooked, or set on an open engine's cfg.hooks
// before the call they watch): the zero value is production's behaviour.
type testHooks struct {
	// lockConv runs after lockConv has read the conversation's record.
	lockConv func(e *Engine, c convID)
	// compactRun is called once a compaction holds its locks, before it
	// runs; the function it returns is called when it ends.
	compactRun func(e *Engine, c convID) func()
	// reconcileFault fails a rewrite import at a stage, when it returns
	// an error: "stored" (after its first chunk is stored, before that
	// chunk's checkpoint) or "reconcile" (before the reconciliation
	// starts).
	reconcileFault func(stage string) error
	// retainBeforeDelete runs between a retention decision and the
	// deletion.
	retainBeforeDelete func()
	// freeSpace replaces diskspace.Free, the free-space lookup of
	// checkSpace (read at each look: it may be set on an open engine).
	freeSpace func(dir string) (uint64, error)
	// catchUpEvery replaces defaultCatchUpEvery (0: the default).
	catchUpEvery time.Duration
	// retentionFirst and retentionUnit replace the retention pass's
	// retentionFirstDelay and retentionUnit (0: the defaults).
	retentionFirst, retentionUnit time.Duration
	// indexMaxLag is bleveindex.Options.MaxLag (0: the index's default),
	// lowered to make ingest wait on a full queue; indexBatch is
	// bleveindex.Options.BeforeBatch (holds indexing).
	indexMaxLag int
	indexBatch  func()
	// rebuild is called before the rebuild indexes each doc read from the
	// store (ctx: the rebuild's, ended by Close; n: docs read by this run
	// so far).
	rebuild func(ctx context.Context, n int)
}
