package inspect

import (
	"context"
	"errors"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// storeDAG is conversation c of st as dag.Check reads it: its items,
// messages and summaries (and each message's metadata,
// dag.MessageMetaReader), each read from a snapshot of st. It never
// writes: Replace fails.
type storeDAG struct {
	st store.Store
	c  store.ConvID
}

var (
	_ dag.Store             = storeDAG{}
	_ dag.MessageMetaReader = storeDAG{}
)

// Items returns the context items in position order.
func (d storeDAG) Items(ctx context.Context) (out []dag.Item, err error) {
	err = d.st.View(ctx, func(r store.Reader) error { out, err = records.ReadItems(ctx, r, d.c); return err })
	return out, err
}

// MessageText returns message seq rendered as plain text.
func (d storeDAG) MessageText(ctx context.Context, seq uint64) (s string, err error) {
	err = d.st.View(ctx, func(r store.Reader) error { s, err = records.ReadPlainText(r, d.c, seq); return err })
	return s, err
}

// Summary returns summary id.
func (d storeDAG) Summary(ctx context.Context, id string) (s dag.Summary, err error) {
	err = d.st.View(ctx, func(r store.Reader) error { s, err = records.GetSummary(r, d.c, id); return err })
	return s, err
}

// MessageMeta returns the metadata of message seq.
func (d storeDAG) MessageMeta(ctx context.Context, seq uint64) (m dag.MessageMeta, err error) {
	err = d.st.View(ctx, func(r store.Reader) error { m, err = records.ReadMessageMeta(r, d.c, seq); return err })
	return m, err
}

// errReadOnly is Replace's error: inspection never writes.
var errReadOnly = errors.New("lossless: inspect: read-only")

// Replace fails: inspection never writes.
func (storeDAG) Replace(context.Context, []dag.Item, dag.Summary, dag.Item) error { return errReadOnly }
