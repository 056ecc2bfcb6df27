package lossless

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

// TestRecallWriteRefusedDoesNotWedge: on PostgreSQL, a recall write the
// database refuses (a trigger rejecting one message's doc) holds up
// neither ingest — many more messages than the recall queue holds are
// ingested at once — nor Close; the messages it gave up are left to the
// catch-up, which indexes them once the database takes them. (Before,
// the writer retried the refused write for ever, the full queue blocked
// ingest under the conversation's lock, and Close waited for it.)
func TestRecallWriteRefusedDoesNotWedge(t *testing.T) {
	url := pgtest.NewDB(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	pool := st.Pool()
	if _, err := pool.Exec(ctx, `CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.text LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned doc %', NEW.id; END IF; RETURN NEW; END $$;
		CREATE TRIGGER poison BEFORE INSERT ON recall_docs FOR EACH ROW EXECUTE FUNCTION poison()`); err != nil {
		t.Fatal(err)
	}
	rec, err := pgstore.OpenRecall(ctx, pool, pgstore.RecallOptions{MaxLag: 4, BatchSize: 2, MaxLagWait: 200 * time.Millisecond, CloseTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig("")
	cfg.StoreURL = url
	e, err := openStoreHooked(ctx, cfg, testHooks{catchUpEvery: 100 * time.Millisecond}, st, rec)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		for i := range n {
			text := fmt.Sprintf("we settled order %d for the warehouse", 80_000+i)
			if i == 3 {
				text += " (poison)"
			}
			if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: core.UserText(text, int64(1_700_000_000_000+i))}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ingest wedged behind a refused recall write")
	}
	t.Logf("%d ingests in %v with the recall write of one refused", n, time.Since(start))

	// Once the database takes the doc, the catch-up writes every message.
	if _, err := pool.Exec(ctx, `DROP TRIGGER poison ON recall_docs`); err != nil {
		t.Fatal(err)
	}
	// A write that finds the gap (the catch-ups that ran meanwhile failed).
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: core.UserText("one more", 1_700_000_100_000)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for got := 0; got < n+1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages in the recall index 20 s after the refusal ended", got, n+1)
		}
		time.Sleep(100 * time.Millisecond)
		got = recallDocCount(t, pool)
	}
	start = time.Now()
	if err := e.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v", d)
	}
}

func recallDocCount(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM recall_docs WHERE kind = 'message'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
