package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// flushWithin flushes r, failing t if the queue is not written (or given
// up) within d: a writer that retries for ever, or is stuck, never is.
func flushWithin(t *testing.T, r *Recall, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := r.Flush(ctx); err != nil {
		t.Fatalf("the writer is still at it after %v: %v", d, err)
	}
}

// countingSend is a Recall.send that counts its calls and fails with
// fail's error (nil: writes) for each.
func countingSend(pool *pgxpool.Pool, calls *atomic.Int32, fail func(call int32) error) func(ctx context.Context, b *pgx.Batch, marksAt int) ([]string, error) {
	return func(ctx context.Context, b *pgx.Batch, marksAt int) ([]string, error) {
		n := calls.Add(1)
		if err := fail(n); err != nil {
			return nil, err
		}
		return sendBatch(ctx, pool, b, marksAt) // the real send
	}
}

// TestRecallWriteDeterministicError: a write the database refuses for
// what it writes (a trigger raising an error for one doc) is not retried:
// the batch is given up at once, its conversation reported as a gap (its
// mark stays behind, for the catch-up), Err says why, and the writer goes
// on with the next batch; CatchUp then writes what was given up.
// (Before, the writer retried it for ever and nothing after it was
// written.)
func TestRecallWriteDeterministicError(t *testing.T) {
	pool, _ := recallPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.text LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned doc %', NEW.id; END IF; RETURN NEW; END $$;
		CREATE TRIGGER poison BEFORE INSERT ON recall_docs FOR EACH ROW EXECUTE FUNCTION poison()`); err != nil {
		t.Fatal(err)
	}
	r := openTestRecall(t, pool, RecallOptions{MaxRetries: 3})
	var calls atomic.Int32
	r.send = countingSend(pool, &calls, func(int32) error { return nil })
	docs := markDocs("c1", 4)
	docs[1].Text += " poison"
	r.AddMessages("c1", 1, 2, docs[0:2]...)
	flushWithin(t, r, 10*time.Second)
	if n := calls.Load(); n != 1 {
		t.Errorf("the refused batch was sent %d times, want once", n)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "poisoned doc") {
		t.Errorf("Err after the refused batch: %v", err)
	}
	if g := r.Gaps(); !slices.Equal(g, []string{"c1"}) {
		t.Errorf("gaps %v after the refused batch, want [c1]", g)
	}
	if m := mustMarks(t, r, "c1"); m[0] != 0 {
		t.Errorf("mark %d after the refused batch, want 0", m[0])
	}
	// The next batch is written.
	r.AddMessages("c2", 1, 2, markDocs("c2", 2)...)
	flushWithin(t, r, 10*time.Second)
	if m := mustMarks(t, r, "c2"); m[0] != 2 || r.Err() != nil {
		t.Errorf("c2 mark %d, Err %v after a batch that writes, want 2 and nil", m[0], r.Err())
	}
	// Once the cause is gone, the catch-up writes what was given up.
	if _, err := pool.Exec(ctx, `DROP TRIGGER poison ON recall_docs`); err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(ctx, "c1", 2, docs[0:2]); err != nil {
		t.Fatal(err)
	}
	if ids, err := r.ConversationDocIDs(ctx, "c1"); err != nil || len(ids) != 2 {
		t.Errorf("c1 docs after the catch-up: %v, %v; want 2", ids, err)
	}
}

// TestRecallWriteRetries: a write failing with an error that may pass (a
// serialization failure, a lost connection) is retried, and written when
// it passes; one that keeps failing is given up after MaxRetries retries
// (left to the catch-up: a gap) instead of for ever.
func TestRecallWriteRetries(t *testing.T) {
	pool, _ := recallPool(t)
	r := openTestRecall(t, pool, RecallOptions{MaxRetries: 3})
	var calls, failFirst atomic.Int32
	r.send = countingSend(pool, &calls, func(n int32) error {
		if n <= failFirst.Load() {
			return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
		}
		return nil
	})
	// Two serialization failures, then the write.
	failFirst.Store(2)
	r.AddMessages("c1", 1, 2, markDocs("c1", 2)...)
	flushWithin(t, r, 10*time.Second)
	if n := calls.Load(); n != 3 {
		t.Errorf("sent %d times, want 3 (two serialization failures, then written)", n)
	}
	if m := mustMarks(t, r, "c1"); m[0] != 2 || r.Err() != nil {
		t.Errorf("c1 mark %d, Err %v; want 2, nil", m[0], r.Err())
	}
	// Serialization failures for ever: given up after 1+MaxRetries sends.
	calls.Store(0)
	failFirst.Store(1000)
	r.AddMessages("c2", 1, 2, markDocs("c2", 2)...)
	flushWithin(t, r, 10*time.Second)
	if n := calls.Load(); n != 4 {
		t.Errorf("sent %d times, want 4 (1 + MaxRetries 3)", n)
	}
	if !retryable(r.Err()) || !slices.Equal(r.Gaps(), []string{"c2"}) {
		t.Errorf("after giving up: Err %v, want a serialization failure, and c2 a gap", r.Err())
	}
}

// TestRecallRetryable: which errors are retried.
func TestRecallRetryable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "40001"}, true},
		{fmt.Errorf("x: %w", &pgconn.PgError{Code: "40P01"}), true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "P0001"}, false},
		{&pgconn.PgError{Code: "22021"}, false}, // invalid byte sequence
		{&pgconn.PgError{Code: "23505"}, false},
		{context.DeadlineExceeded, true},
		{context.Canceled, false},
		{errors.New("cannot encode"), false},
		{nil, false},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}

// TestRecallFullQueueDoesNotBlock: with the writer stuck (a write that
// hangs), a caller finding the queue full waits at most MaxLagWait, then
// its range is left to the catch-up (a gap), and later callers are not
// held up at all; Close returns within CloseTimeout, saying what it
// dropped. (Before, the caller waited for room for ever: the engine's
// ingest, which calls AddMessages under the conversation's lock, was
// wedged, and so was Close.)
func TestRecallFullQueueDoesNotBlock(t *testing.T) {
	pool, _ := recallPool(t)
	r, err := OpenRecall(context.Background(), pool, RecallOptions{MaxLag: 2, BatchSize: 1, MaxLagWait: 200 * time.Millisecond, CloseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stuck := make(chan struct{}, 1)
	r.send = func(ctx context.Context, _ *pgx.Batch, _ int) ([]string, error) {
		select {
		case stuck <- struct{}{}:
		default:
		}
		<-ctx.Done() // a database that never answers
		return nil, ctx.Err()
	}
	add := func(conv string) time.Duration {
		start := time.Now()
		done := make(chan struct{})
		go func() {
			r.AddMessages(conv, 1, 1, markDocs(conv, 1)...)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("AddMessages(%s) still waiting after 5 s with the writer stuck", conv)
		}
		return time.Since(start)
	}
	add("c1")
	<-stuck   // the writer holds c1's doc
	add("c2") // the queue holds 4 items (a doc and a mark each): full
	if d := add("c3"); d < 150*time.Millisecond {
		t.Errorf("AddMessages on a full queue returned after %v, want about MaxLagWait (200ms)", d)
	}
	if d := add("c4"); d > 100*time.Millisecond {
		t.Errorf("AddMessages on a full, stalled queue took %v, want no wait", d)
	}
	if g := r.Gaps(); !slices.Equal(g, []string{"c3", "c4"}) {
		t.Errorf("gaps %v, want [c3 c4] (left to the catch-up)", g)
	}
	start := time.Now()
	err = r.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v with the writer stuck, CloseTimeout 300ms", d)
	}
	if err == nil || !strings.Contains(err.Error(), "not written") {
		t.Errorf("Close with the writer stuck: %v, want it to say what it dropped", err)
	}
}

// TestRecallCloseBounded: Close returns within CloseTimeout when every
// write fails with an error that may pass (the database is down): the
// backoff sleeps end at Close's deadline. (Before, Close retried with
// uninterruptible sleeps of up to 5 s past it, a hung write for a
// minute.)
func TestRecallCloseBounded(t *testing.T) {
	pool, _ := recallPool(t)
	r, err := OpenRecall(context.Background(), pool, RecallOptions{CloseTimeout: 300 * time.Millisecond, MaxRetries: 100})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	r.send = countingSend(pool, &calls, func(int32) error {
		return &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}
	})
	r.AddMessages("c1", 1, 3, markDocs("c1", 3)...)
	time.Sleep(3300 * time.Millisecond) // early in a backoff of 3.2 s
	start := time.Now()
	err = r.Close()
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("Close took %v, CloseTimeout 300ms", d)
	}
	if err == nil || !strings.Contains(err.Error(), "4 docs or deletions not written") {
		t.Errorf("Close: %v, want 4 docs or deletions not written", err)
	}
}

// TestRecallWriteGivenUpMidRange: when the batch given up holds the first
// docs of a range whose rest (and mark) is in the next batch, the next
// batch writes its docs but does not move the conversation's mark past
// the docs given up: the mark stays behind, a gap, and the catch-up
// indexes the range. (Moving it would have left those docs out of recall
// for good: no catch-up looks behind a mark.)
func TestRecallWriteGivenUpMidRange(t *testing.T) {
	pool, _ := recallPool(t)
	r := openTestRecall(t, pool, RecallOptions{BatchSize: 2})
	var calls atomic.Int32
	r.send = countingSend(pool, &calls, func(n int32) error {
		if n == 1 {
			return &pgconn.PgError{Code: "22P02", Message: "invalid input syntax"}
		}
		return nil
	})
	docs := markDocs("c1", 3)
	r.AddMessages("c1", 1, 3, docs...) // batches: docs 1-2 (given up), then doc 3 and the mark
	flushWithin(t, r, 10*time.Second)
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d batches sent, want 2", n)
	}
	if m := mustMarks(t, r, "c1"); m[0] != 0 {
		t.Errorf("mark %d after the range's first docs were given up, want 0", m[0])
	}
	if g := r.Gaps(); !slices.Equal(g, []string{"c1"}) {
		t.Errorf("gaps %v, want [c1]", g)
	}
	if err := r.CatchUp(context.Background(), "c1", 3, docs); err != nil {
		t.Fatal(err)
	}
	if ids, err := r.ConversationDocIDs(context.Background(), "c1"); err != nil || len(ids) != 3 || mustMarks(t, r, "c1")[0] != 3 {
		t.Errorf("after the catch-up: docs %v (%v), mark %d; want 3 docs, mark 3", ids, err, mustMarks(t, r, "c1")[0])
	}
}
