package dag

import (
	"context"
	"errors"
	"fmt"
)

// Check verifies the DAG invariants of st, given every raw message of the
// conversation in order (allMessageSeqs). Every violation it reports wraps
// ErrInvariant and names the item, summary or message at fault:
//
//   - context items are strictly increasing by Pos, raw items have Depth -1
//     and summary items carry their summary's Depth and Tokens;
//   - every raw message is covered by exactly one path from the active
//     context, and the items cover the conversation in order;
//   - no summary is its own ancestor (no cycles);
//   - a leaf (Depth 0) has raw-message sources that are consecutive in the
//     conversation; a condensed summary (Depth d > 0) has summary sources of
//     depth d-1 whose covered ranges are consecutive;
//   - roll-ups add up: DescendantCount and DescendantTokens are the sums over
//     the sources, Earliest and Latest the first and last covered message's
//     timestamps (for leaves, checked when st implements MessageMetaReader).
//
// Store errors are returned wrapped, without ErrInvariant.
func Check(ctx context.Context, st Store, allMessageSeqs []uint64) error {
	c := checker{
		ctx:   ctx,
		st:    st,
		index: make(map[uint64]int, len(allMessageSeqs)),
		state: map[string]*checked{},
	}
	c.meta, _ = st.(MessageMetaReader)
	for i, seq := range allMessageSeqs {
		if _, dup := c.index[seq]; dup {
			return invariantf("message %d listed twice in allMessageSeqs", seq)
		}
		c.index[seq] = i
	}
	items, err := st.Items(ctx)
	if err != nil {
		return fmt.Errorf("dag: check: %w", err)
	}
	var covered []uint64
	for i, it := range items {
		if i > 0 && it.Pos <= items[i-1].Pos {
			return invariantf("item %d: position %d not greater than the previous %d", i, it.Pos, items[i-1].Pos)
		}
		switch it.Ref.Kind {
		case RefMessage:
			if it.Depth != -1 {
				return invariantf("item at %d (message %d): depth %d, want -1", it.Pos, it.Ref.Seq, it.Depth)
			}
			if _, ok := c.index[it.Ref.Seq]; !ok {
				return invariantf("item at %d: message %d is not a message of the conversation", it.Pos, it.Ref.Seq)
			}
			if c.meta != nil {
				m, err := c.meta.MessageMeta(ctx, it.Ref.Seq)
				if err != nil {
					return fmt.Errorf("dag: check: item at %d: %w", it.Pos, err)
				}
				// A store may show a large message by a shorter reference, so
				// the item may cost less than the message, never more.
				if it.Tokens > m.Tokens {
					return invariantf("item at %d (message %d): tokens %d, message has only %d", it.Pos, it.Ref.Seq, it.Tokens, m.Tokens)
				}
			}
			covered = append(covered, it.Ref.Seq)
		case RefSummary:
			info, err := c.visit(it.Ref.ID)
			if err != nil {
				return err
			}
			if it.Depth != info.s.Depth || it.Tokens != info.s.Tokens {
				return invariantf("item at %d (summary %s): depth %d tokens %d, summary has depth %d tokens %d",
					it.Pos, it.Ref.ID, it.Depth, it.Tokens, info.s.Depth, info.s.Tokens)
			}
			covered = append(covered, info.seqs...)
		default:
			return invariantf("item at %d: unknown ref kind %d", it.Pos, it.Ref.Kind)
		}
	}
	seen := make(map[uint64]bool, len(covered))
	for i, seq := range covered {
		if seen[seq] {
			return invariantf("message %d is covered more than once by the active context", seq)
		}
		seen[seq] = true
		if i >= len(allMessageSeqs) {
			return invariantf("message %d covered beyond the conversation's %d messages", seq, len(allMessageSeqs))
		}
		if allMessageSeqs[i] != seq {
			if !containsSeq(covered, allMessageSeqs[i]) {
				return invariantf("message %d is not covered by the active context", allMessageSeqs[i])
			}
			return invariantf("active context out of order: message %d where %d belongs", seq, allMessageSeqs[i])
		}
	}
	if len(covered) < len(allMessageSeqs) {
		return invariantf("message %d is not covered by the active context", allMessageSeqs[len(covered)])
	}
	return nil
}

func containsSeq(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func invariantf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvariant, fmt.Sprintf(format, args...))
}

type checked struct {
	done bool
	s    Summary
	seqs []uint64
}

type checker struct {
	ctx   context.Context
	st    Store
	meta  MessageMetaReader
	index map[uint64]int
	state map[string]*checked
}

// visit checks summary id and its subtree, returning the messages it covers.
func (c *checker) visit(id string) (*checked, error) {
	if st, ok := c.state[id]; ok {
		if !st.done {
			return nil, invariantf("cycle: summary %s is its own ancestor", id)
		}
		return st, nil
	}
	info := &checked{}
	c.state[id] = info
	s, err := c.st.Summary(c.ctx, id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, invariantf("summary %s referenced but not stored", id)
		}
		return nil, fmt.Errorf("dag: check: %w", err)
	}
	info.s = s
	if s.ID != id {
		return nil, invariantf("summary %s stored with id %q", id, s.ID)
	}
	if len(s.Sources) == 0 {
		return nil, invariantf("summary %s has no sources", id)
	}
	if s.Tokens < 0 {
		return nil, invariantf("summary %s: negative tokens %d", id, s.Tokens)
	}
	switch s.Kind {
	case KindLeaf:
		err = c.leaf(info)
	case KindCondensed:
		err = c.condensed(info)
	default:
		err = invariantf("summary %s: unknown kind %q", id, s.Kind)
	}
	if err != nil {
		return nil, err
	}
	info.done = true
	return info, nil
}

func (c *checker) leaf(info *checked) error {
	s := info.s
	if s.Depth != 0 {
		return invariantf("leaf %s has depth %d, want 0", s.ID, s.Depth)
	}
	tokens := 0
	for k, src := range s.Sources {
		if src.Kind != RefMessage {
			return invariantf("leaf %s: source %d is not a raw message", s.ID, k)
		}
		i, ok := c.index[src.Seq]
		if !ok {
			return invariantf("leaf %s: source message %d is not in the conversation", s.ID, src.Seq)
		}
		if k > 0 && i != c.index[s.Sources[k-1].Seq]+1 {
			return invariantf("leaf %s: sources not consecutive (message %d follows %d)", s.ID, src.Seq, s.Sources[k-1].Seq)
		}
		info.seqs = append(info.seqs, src.Seq)
		if c.meta != nil {
			m, err := c.meta.MessageMeta(c.ctx, src.Seq)
			if err != nil {
				return fmt.Errorf("dag: check: leaf %s: %w", s.ID, err)
			}
			tokens += m.Tokens
			if k == 0 && m.Timestamp != s.Earliest {
				return invariantf("leaf %s: earliest %d, first message %d has %d", s.ID, s.Earliest, src.Seq, m.Timestamp)
			}
			if k == len(s.Sources)-1 && m.Timestamp != s.Latest {
				return invariantf("leaf %s: latest %d, last message %d has %d", s.ID, s.Latest, src.Seq, m.Timestamp)
			}
		}
	}
	if s.DescendantCount != len(s.Sources) {
		return invariantf("leaf %s: descendant count %d, has %d sources", s.ID, s.DescendantCount, len(s.Sources))
	}
	if c.meta != nil && s.DescendantTokens != tokens {
		return invariantf("leaf %s: descendant tokens %d, sources sum to %d", s.ID, s.DescendantTokens, tokens)
	}
	return nil
}

func (c *checker) condensed(info *checked) error {
	s := info.s
	if s.Depth < 1 {
		return invariantf("condensed %s has depth %d, want >= 1", s.ID, s.Depth)
	}
	count, tokens := 0, 0
	for k, src := range s.Sources {
		if src.Kind != RefSummary {
			return invariantf("condensed %s: source %d is not a summary", s.ID, k)
		}
		child, err := c.visit(src.ID)
		if err != nil {
			return err
		}
		if child.s.Depth != s.Depth-1 {
			return invariantf("condensed %s (depth %d): source %s has depth %d", s.ID, s.Depth, src.ID, child.s.Depth)
		}
		if k > 0 && len(info.seqs) > 0 && len(child.seqs) > 0 &&
			c.index[child.seqs[0]] != c.index[info.seqs[len(info.seqs)-1]]+1 {
			return invariantf("condensed %s: source %s does not follow %s", s.ID, src.ID, s.Sources[k-1].ID)
		}
		info.seqs = append(info.seqs, child.seqs...)
		count += child.s.DescendantCount
		tokens += child.s.DescendantTokens
	}
	first, _ := c.state[s.Sources[0].ID]
	last, _ := c.state[s.Sources[len(s.Sources)-1].ID]
	if count != s.DescendantCount || tokens != s.DescendantTokens {
		return invariantf("condensed %s: descendants %d/%d tokens, sources sum to %d/%d", s.ID, s.DescendantCount, s.DescendantTokens, count, tokens)
	}
	if s.Earliest != first.s.Earliest || s.Latest != last.s.Latest {
		return invariantf("condensed %s: time range %d..%d, sources span %d..%d", s.ID, s.Earliest, s.Latest, first.s.Earliest, last.s.Latest)
	}
	return nil
}
