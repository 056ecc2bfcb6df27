package records

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// ErrReadOnly is ReadOnlyDAG.Replace's error: a conversation read through
// it is never written.
var ErrReadOnly = errors.New("lossless: a conversation read for inspection or the tools is not written")

// ReadOnlyDAG is stored conversation ID of St as the DAG algorithms read
// it (dag.Store and dag.MessageMetaReader): its context items, messages
// as plain text, summaries and messages' metadata, each read in a
// snapshot of its own. Replace fails: the store check (lossless/inspect)
// and the agent tools (lossless/tools) read conversations through it and
// never write them.
type ReadOnlyDAG struct {
	St store.Store
	ID store.ConvID
}

var (
	_ dag.Store             = ReadOnlyDAG{}
	_ dag.MessageMetaReader = ReadOnlyDAG{}
)

// Items returns the context items in position order.
func (d ReadOnlyDAG) Items(ctx context.Context) (out []dag.Item, err error) {
	err = d.St.View(ctx, func(r store.Reader) error { out, err = ReadItems(ctx, r, d.ID); return err })
	return out, err
}

// MessageText returns raw message seq rendered as plain text.
func (d ReadOnlyDAG) MessageText(ctx context.Context, seq uint64) (s string, err error) {
	err = d.St.View(ctx, func(r store.Reader) error { s, err = ReadPlainText(r, d.ID, seq); return err })
	return s, err
}

// Summary returns summary id; dag.ErrNotFound when absent.
func (d ReadOnlyDAG) Summary(ctx context.Context, id string) (s dag.Summary, err error) {
	err = d.St.View(ctx, func(r store.Reader) error { s, err = GetSummary(r, d.ID, id); return err })
	return s, err
}

// MessageMeta returns the metadata of raw message seq.
func (d ReadOnlyDAG) MessageMeta(ctx context.Context, seq uint64) (m dag.MessageMeta, err error) {
	err = d.St.View(ctx, func(r store.Reader) error { m, err = ReadMessageMeta(r, d.ID, seq); return err })
	return m, err
}

// Replace fails with ErrReadOnly.
func (d ReadOnlyDAG) Replace(context.Context, []dag.Item, dag.Summary, dag.Item) error {
	return fmt.Errorf("conversation %s: %w", d.ID, ErrReadOnly)
}
