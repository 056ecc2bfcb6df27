package pgstore

import (
	"context"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/store"
)

// TestDecodeItem: items read as the scans read them decode from their
// wire values (not through pgx's Scan) to what was written, at the
// bounds of every column.
func TestDecodeItem(t *testing.T) {
	s := openTest(t, Options{URL: pgtest.NewDB(t)})
	ctx := context.Background()
	c := store.ConvID{7}
	want := []store.Item{
		{Item: dag.Item{Pos: 1, Ref: dag.MessageRef(1), Tokens: 12, Depth: -1, Timestamp: 1_700_000_000_000, Role: "user"}},
		{Item: dag.Item{Pos: 65536, Ref: dag.SummaryRef("sum-7f"), Tokens: math.MaxInt32 + 1, Depth: 3, Timestamp: -5, Role: "assistant"}, Flags: 0xff},
		{Item: dag.Item{Pos: math.MaxUint64, Ref: dag.MessageRef(math.MaxUint64), Tokens: 0, Depth: math.MaxInt32, Timestamp: math.MaxInt64, Role: "bashExecution"}, Flags: 1},
		{Item: dag.Item{Pos: 1 << 63, Ref: dag.MessageRef(2), Role: ""}},
	}
	if err := s.Update(ctx, func(tx store.Tx) error {
		for _, it := range want {
			if err := tx.PutItem(c, it); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.Query(ctx, "SELECT "+itemColsSQL+" FROM lossless_items WHERE conv = $1", c[:])
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Item, error) {
		it, ok := decodeItem(row)
		if !ok {
			t.Error("an item row is not decoded from its wire values")
		}
		return it, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	byPos := map[uint64]store.Item{}
	for _, it := range got {
		byPos[it.Pos] = it
	}
	for _, w := range want {
		if g := byPos[w.Pos]; g != w {
			t.Errorf("item %d: decoded %+v, want %+v", w.Pos, g, w)
		}
	}
}
