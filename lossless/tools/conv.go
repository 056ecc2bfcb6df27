package tools

import (
	"context"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Conv is stored conversation ID of St as the tools read it: its summary
// DAG (records.ReadOnlyDAG: a dag.Store for dag.Describe and dag.Expand,
// read only) and its messages. Each method reads in a transaction of its
// own.
type Conv struct {
	records.ReadOnlyDAG
}

// NewConv is the tools' view of conversation c of st.
func NewConv(st store.Store, c store.ConvID) Conv {
	return Conv{records.ReadOnlyDAG{St: st, ID: c}}
}

// Message returns stored message seq, bytes exactly as ingested.
func (c Conv) Message(ctx context.Context, seq uint64) (core.Message, error) {
	var m core.Message
	err := c.St.View(ctx, func(r store.Reader) error {
		var err error
		m, err = records.ReadMessage(r, c.ID, seq)
		return err
	})
	return m, err
}

// MessageByKey returns the stored message whose key (the hex id after
// records.LargeRefPrefix in a large-content reference) is key.
func (c Conv) MessageByKey(ctx context.Context, key string) (uint64, core.Message, error) {
	var seq uint64
	err := c.St.View(ctx, func(r store.Reader) (err error) {
		seq, err = records.SeqByKey(r, c.ID, key)
		return err
	})
	if err != nil {
		return 0, core.Message{}, err
	}
	m, err := c.Message(ctx, seq)
	return seq, m, err
}

// IsLargeRef reports whether id is a large-content reference
// ("lcm-large:<key>").
func IsLargeRef(id string) bool { return strings.HasPrefix(id, records.LargeRefPrefix) }
