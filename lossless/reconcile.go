package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Reconciling a rewritten transcript is lossless/transcript's
// (reconcile.go there): a read from the start of a file whose checkpoint no
// longer matches puts the conversation's context in the file's order. What
// stays here is what the rest of the engine shares with it.

// fromStore is records.FromStore: the store error mapping lives in
// lossless/internal/records, shared with the engine's parts.
func fromStore(err error) error { return records.FromStore(err) }

// updateMapped is storeUpdate (store.go: e.st.Update behind the
// free-space guard), its error mapped by fromStore.
func (e *Engine) updateMapped(ctx context.Context, fn func(tx store.Tx) error) error {
	return fromStore(e.storeUpdate(ctx, fn))
}

// batchMapped is e.st.NewBatch behind the free-space guard (as writeBatch).
func (e *Engine) batchMapped(ctx context.Context) (store.Batch, error) {
	if err := e.checkSpace(); err != nil {
		return nil, err
	}
	b, err := e.st.NewBatch(ctx)
	if err != nil {
		return nil, fromStore(err)
	}
	return b, nil
}
