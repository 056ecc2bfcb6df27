// Package records holds what package lossless and its parts (such as
// lossless/transcript, lossless/internal/recall and lossless/subagent) need to read
// the engine's store records the same way: the mapping of the store's
// errors to the engine's sentinels, the order positions of messages a
// reconciliation moved, conversation ids in hex, the reads of messages and
// context items with their errors, a message's key (its hash) and plain
// text, the names of the store's cross-process locks, and what several
// parts check the same way: session names (CheckName), the agent a
// session key names (AgentOfKey), the large-content reference prefix and
// the sentinel of refused call parameters (ErrBadParams).
package records

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// PosStep is the gap between consecutive appended positions: positions are
// seq*PosStep for a message never moved, so that items can be moved between
// two neighbours (a summary, a reconciled message) without renumbering.
const PosStep = 1 << 16

// FromStore maps the store's sentinels to the engine's: a missing record
// wraps core.ErrNotFound as well; the store's error stays in the chain. A
// corrupt record (store.ErrCorrupt) and a full disk (store.ErrDiskFull) are
// returned as they are: the engine's ErrCorrupt and ErrDiskFull are those
// very sentinels.
func FromStore(err error) error {
	if err != nil && errors.Is(err, store.ErrNotFound) && !errors.Is(err, core.ErrNotFound) {
		return fmt.Errorf("lossless: %w: %w", core.ErrNotFound, err)
	}
	return err
}

// MovedSeqs returns the order positions of the conversation's moved
// messages (its order records, store.Reader.Orders).
func MovedSeqs(r store.Reader, c store.ConvID) (map[uint64]uint64, error) {
	moved := map[uint64]uint64{}
	for p, err := range r.Orders(c) {
		if err != nil {
			if errors.Is(err, store.ErrCorrupt) {
				return nil, fmt.Errorf("%w: order record: %w", ErrBadRecord, err)
			}
			return nil, FromStore(err)
		}
		moved[p.Key] = p.Value
	}
	return moved, nil
}

// OrderAt returns seq's order position given the moved messages.
func OrderAt(moved map[uint64]uint64, seq uint64) uint64 {
	if p, ok := moved[seq]; ok {
		return p
	}
	return seq * PosStep
}

// OrderedSeqs returns the conversation's messages 1..n sorted by their
// order positions (seq*PosStep unless a reconciliation moved them): the
// conversation in transcript order.
func OrderedSeqs(r store.Reader, c store.ConvID, n int64) ([]uint64, error) {
	moved, err := MovedSeqs(r, c)
	if err != nil {
		return nil, err
	}
	return SortByOrder(moved, n), nil
}

// SortByOrder returns 1..n sorted by their order positions.
func SortByOrder(moved map[uint64]uint64, n int64) []uint64 {
	seqs := make([]uint64, n)
	for i := range seqs {
		seqs[i] = uint64(i + 1)
	}
	if len(moved) > 0 {
		sort.SliceStable(seqs, func(i, j int) bool { return OrderAt(moved, seqs[i]) < OrderAt(moved, seqs[j]) })
	}
	return seqs
}

// OrderPosOf returns seq's order position (see OrderedSeqs).
func OrderPosOf(r store.Reader, c store.ConvID, seq uint64) (uint64, error) {
	p, err := r.Order(c, seq)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return seq * PosStep, nil
	case errors.Is(err, store.ErrCorrupt):
		return 0, fmt.Errorf("%w: order record: %w", ErrBadRecord, err)
	case err != nil:
		return 0, FromStore(err)
	}
	return p, nil
}

// ParseConvID parses a conversation id in hex (store.ConvID.String); ok
// false when s is not one.
func ParseConvID(s string) (store.ConvID, bool) {
	var c store.ConvID
	if len(s) != 16 {
		return c, false
	}
	for i := 0; i < 8; i++ {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return c, false
		}
		c[i] = byte(v)
	}
	return c, true
}
