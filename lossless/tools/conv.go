package tools

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// errReadOnly is Conv.Replace's error: the tools never change a
// conversation.
var errReadOnly = errors.New("lossless: tools: a conversation read by the tools is not written")

// Conv is stored conversation ID of St as the tools read it: its summary
// DAG (a dag.Store for dag.Describe and dag.Expand, read only) and its
// messages. Each method reads in a transaction of its own.
type Conv struct {
	St store.Store
	ID store.ConvID
}

var (
	_ dag.Store             = Conv{}
	_ dag.MessageMetaReader = Conv{}
)

// Items returns the context items in position order (dag.Store).
func (c Conv) Items(ctx context.Context) ([]dag.Item, error) {
	var out []dag.Item
	err := c.St.View(ctx, func(r store.Reader) error {
		var err error
		out, err = records.ReadItems(ctx, r, c.ID)
		return err
	})
	return out, err
}

// MessageText returns raw message seq rendered as plain text
// (records.ReadPlainText; dag.Store).
func (c Conv) MessageText(ctx context.Context, seq uint64) (string, error) {
	var out string
	err := c.St.View(ctx, func(r store.Reader) error {
		var err error
		out, err = records.ReadPlainText(r, c.ID, seq)
		return err
	})
	return out, err
}

// Summary returns summary id (dag.Store); dag.ErrNotFound when absent.
func (c Conv) Summary(ctx context.Context, id string) (dag.Summary, error) {
	var s dag.Summary
	err := c.St.View(ctx, func(r store.Reader) error {
		var err error
		s, err = records.GetSummary(r, c.ID, id)
		return err
	})
	return s, err
}

// Replace refuses: the tools only read (dag.Store).
func (c Conv) Replace(context.Context, []dag.Item, dag.Summary, dag.Item) error {
	return fmt.Errorf("conversation %s: %w", c.ID, errReadOnly)
}

// MessageMeta returns the metadata of raw message seq
// (dag.MessageMetaReader).
func (c Conv) MessageMeta(ctx context.Context, seq uint64) (dag.MessageMeta, error) {
	var out dag.MessageMeta
	err := c.St.View(ctx, func(r store.Reader) error {
		var err error
		out, err = records.ReadMessageMeta(r, c.ID, seq)
		return err
	})
	return out, err
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
	key = strings.TrimPrefix(key, records.LargeRefPrefix)
	b, err := hex.DecodeString(key)
	if err != nil || len(b) != 16 {
		return 0, core.Message{}, fmt.Errorf("lossless: bad message key %q: %w", key, core.ErrNotFound)
	}
	var h store.Hash
	copy(h[:], b)
	var seq uint64
	err = c.St.View(ctx, func(r store.Reader) error {
		var err error
		seq, err = r.SeqByHash(c.ID, h)
		if errors.Is(err, store.ErrNotFound) {
			return records.FromStore(err)
		}
		if err != nil {
			return fmt.Errorf("lossless: read: %w", err)
		}
		return nil
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
