package recall

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// corruptStore is a store whose batched reads find message seq of conv
// corrupt (store.ErrCorrupt), as a damaged record reads.
type corruptStore struct {
	store.Store
	conv store.ConvID
	seq  uint64
}

type corruptReader struct {
	store.Reader
	s *corruptStore
}

func (s *corruptStore) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(corruptReader{r, s}) })
}

func (r corruptReader) Get(refs []store.Ref) ([]store.Got, error) {
	got, err := r.Reader.Get(refs)
	for i, ref := range refs {
		if err == nil && ref.Kind == store.RefMessage && ref.Conv == r.s.conv && ref.Seq == r.s.seq {
			got[i] = store.Got{Err: fmt.Errorf("message record: %w", store.ErrCorrupt)}
		}
	}
	return got, err
}

// TestRenderRecallStoreError: a recalled item whose stored record cannot
// be read fails the render with an error naming it, and Assemble's recall
// goes on without the block and reports the failure; one the store no
// longer holds is left out. Moved from package lossless (which corrupted a
// Badger record through the engine).
func TestRenderRecallStoreError(t *testing.T) {
	d := indexed(t, core.UserText("the wifi password is hunter2-orange", 1000), core.AssistantText("noted", 1001))
	ctx := context.Background()
	call := &Call{Params: core.AssembleParams{Prompt: "what is the wifi password?"}, Budget: 10000, Agent: "main", Conv: here, Known: true}
	items, err := Rank(ctx, d, call, recalled.Options{}, nil, Shown{})
	if err != nil || len(items) == 0 {
		t.Fatal(items, err)
	}
	var hit recalled.Item
	for _, it := range items {
		if !it.Neighbour {
			hit = it
			break
		}
	}
	if hit.ID == "" || hit.Conversation != other.String() {
		t.Fatalf("no hit of its own: %+v", items)
	}
	plain := d.Store
	d.Store = &corruptStore{Store: plain, conv: other, seq: hit.Seq}
	if _, _, err := Render(ctx, d, items, "", "", 4000, 1, "", nil); err == nil || !strings.Contains(err.Error(), hit.ID) {
		t.Fatalf("render over a corrupt record: %v, want an error naming %s", err, hit.ID)
	}
	det := &recalled.Details{}
	a, _, ok := Begin(recalled.WithDetails(ctx, det), d, call)
	if !ok {
		t.Fatal("recall off")
	}
	for more := true; more; {
		_, more = a.Window(recalled.WithDetails(ctx, det), Window{Result: window(100)})
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	if det.Recall.Status != recalled.Failed || !strings.Contains(det.Recall.Reason, hit.ID) || len(res.Messages) != 1 {
		t.Fatalf("assemble over a corrupt record: %+v, %d messages", det.Recall, len(res.Messages))
	}

	// Gone from the store (the index lags a deletion): left out, no error.
	d.Store = plain
	if err := plain.Update(ctx, func(tx store.Tx) error { return tx.DeleteMessage(other, hit.Seq) }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Render(ctx, d, items, "", "", 4000, 1, "", nil); err != nil {
		t.Fatalf("render with a deleted record: %v", err)
	}
}
