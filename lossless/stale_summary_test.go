package lossless

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// TestStaleRecordAfterCompaction: issue 37 point 1's rollback. A
// conversation compacted, then its record put back as it was before the
// compaction (no summary counted, the summaries stored): alone, or with
// the context items of before the compaction too (raw messages the
// summaries cover, as a damaged table brings them back). ingest,
// ingestBatch, commitTurn and compact are refused with ErrCorrupt, naming
// the conversation and the summary found, and store nothing: with the
// record and items put right, every message, summary and item is as it
// was. On Badger, memstore, a shared memstore and PostgreSQL (skipped
// without a database: internal/pgtest).
func TestStaleRecordAfterCompaction(t *testing.T) {
	open := map[string]func(t *testing.T) *Engine{
		"badger": func(t *testing.T) *Engine { return openTest(t) },
		"memstore": func(t *testing.T) *Engine {
			e, err := OpenStore(context.Background(), testConfig(""), memstore.New(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e
		},
		"shared": func(t *testing.T) *Engine { return openShared(t, 1)[0] },
		"postgres": func(t *testing.T) *Engine {
			e, err := openPG(context.Background(), pgtest.NewDB(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e
		},
	}
	for _, name := range []string{"badger", "memstore", "shared", "postgres"} {
		for _, items := range []bool{false, true} {
			what := "record"
			if items {
				what = "record and items"
			}
			t.Run(name+"/"+what, func(t *testing.T) { testStaleAfterCompaction(t, open[name](t), items) })
		}
	}
}

// storeItems reads every context item of c with its flags.
func storeItems(t *testing.T, e *Engine, c convID) []store.Item {
	t.Helper()
	var out []store.Item
	err := e.st.View(context.Background(), func(r store.Reader) error {
		for it, err := range r.Items(c, 0, ^uint64(0), false) {
			if err != nil {
				return err
			}
			out = append(out, it)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// storeSummaries reads every summary of c.
func storeSummaries(t *testing.T, e *Engine, c convID) []dag.Summary {
	t.Helper()
	var out []dag.Summary
	err := e.st.View(context.Background(), func(r store.Reader) error {
		for s, err := range r.Summaries(c) {
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// putItems replaces c's context items by items.
func putItems(t *testing.T, e *Engine, c convID, items []store.Item) {
	t.Helper()
	err := e.st.Update(context.Background(), func(tx store.Tx) error {
		var pos []uint64
		for it, err := range tx.Items(c, 0, ^uint64(0), false) {
			if err != nil {
				return err
			}
			pos = append(pos, it.Pos)
		}
		for _, p := range pos {
			if err := tx.DeleteItem(c, p); err != nil {
				return err
			}
		}
		for _, it := range items {
			if err := tx.PutItem(c, it); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testStaleAfterCompaction(t *testing.T, e *Engine, withItems bool) {
	ctx := context.Background()
	e.SetSummarizer(markSummarizer{})
	imp, err := e.Import(ctx, "", testutil.PiMono(t)[1])
	if err != nil {
		t.Fatal(err)
	}
	sid := imp.SessionID
	c, err := e.resolve(ctx, e.cfg.AgentID, sid, "", false)
	if err != nil {
		t.Fatal(err)
	}
	old, oldItems := readRecord(t, e, c), storeItems(t, e, c)
	res, err := e.Compact(ctx, core.CompactParams{SessionID: sid, TokenBudget: 20000, Force: true, CompactionTarget: core.CompactionTargetThreshold})
	if err != nil || !res.Compacted {
		t.Fatalf("compact: %+v, %v", res, err)
	}
	full, fullItems, sums := readRecord(t, e, c), storeItems(t, e, c), storeSummaries(t, e, c)
	want := storedMessages(t, e, "", sid)
	if old.Summaries != 0 || full.Summaries == 0 || int64(len(sums)) != full.Summaries || old.NextSeq != full.NextSeq || old.NextPos != full.NextPos {
		t.Fatalf("setup: record before the compaction %+v, after %+v, %d summaries stored", old, full, len(sums))
	}
	if len(fullItems) >= len(oldItems) {
		t.Fatalf("setup: %d items after the compaction, %d before", len(fullItems), len(oldItems))
	}

	putRecord(t, e, c, old)
	if withItems {
		putItems(t, e, c, oldItems)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s on a record older than its compaction: %v, want ErrCorrupt", what, err)
			return
		}
		for _, s := range []string{c.String(), "0 summaries", "it counts no summary, and summary ", "nothing is stored", "lossless doctor --deep"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", what, err, s)
			}
		}
	}
	_, err = e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: core.UserText("a message after the rollback", 1_800_000_000_000)})
	refused("ingest", err)
	_, err = e.IngestBatch(ctx, core.IngestBatchParams{SessionID: sid, Messages: commitTurnMsgs(90)})
	refused("ingestBatch", err)
	_, err = e.CommitTurn(ctx, commitParams(sid, "k1", 91))
	refused("commitTurn", err)
	if withItems {
		// The raw items the summaries cover are back: a compaction would
		// summarise them again.
		res, err := e.Compact(ctx, core.CompactParams{SessionID: sid, TokenBudget: 20000, Force: true, CompactionTarget: core.CompactionTargetThreshold})
		if err == nil {
			t.Errorf("compact on a record older than its compaction: %+v, no error", res)
		} else {
			refused("compact", err)
		}
	}
	if got := storeSummaries(t, e, c); len(got) != len(sums) {
		t.Fatalf("%d summaries after the refused writes, %d before", len(got), len(sums))
	}

	// Nothing was written: with the record and items put right, every
	// message, summary and item is as it was.
	putRecord(t, e, c, full)
	putItems(t, e, c, fullItems)
	got := storedMessages(t, e, "", sid)
	if len(got) != len(want) {
		t.Fatalf("%d messages after the refused writes, %d before", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d changed by a refused write", i+1)
		}
	}
	if rec := readRecord(t, e, c); rec.NextSeq != full.NextSeq || rec.NextPos != full.NextPos || rec.Summaries != full.Summaries {
		t.Fatalf("record %+v after the refused writes, was %+v", rec, full)
	}
	gs := storeSummaries(t, e, c)
	for i := range sums {
		if gs[i].ID != sums[i].ID || gs[i].Text != sums[i].Text {
			t.Fatalf("summary %d: %s after the refused writes, was %s", i, gs[i].ID, sums[i].ID)
		}
	}
	// On the healthy record the same writes work.
	if r, err := e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: core.UserText("a message after the repair", 1_800_000_000_000)}); err != nil || !r.Ingested {
		t.Fatalf("ingest on the healthy record: %+v, %v", r, err)
	}
	if r, err := e.CommitTurn(ctx, commitParams(sid, "k1", 91)); err != nil || r.Status != core.CommitCommitted {
		t.Fatalf("commitTurn on the healthy record: %+v, %v", r, err)
	}
}
