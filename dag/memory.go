package dag

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Memory is an in-memory Store for one conversation, for tests and
// benchmarks. It also implements MessageMetaReader. The zero value is not
// usable; call NewMemory.
type Memory struct {
	mu        sync.RWMutex
	items     []Item
	summaries map[string]Summary
	msgs      map[uint64]memMessage
	seqs      []uint64
	nextSeq   uint64
	nextPos   uint64
	replaces  int
}

type memMessage struct {
	meta MessageMeta
	text string
}

// PosStep is the gap Memory leaves between the positions of appended items.
const PosStep = 1 << 10

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		summaries: map[string]Summary{},
		msgs:      map[uint64]memMessage{},
		nextSeq:   1,
		nextPos:   PosStep,
	}
}

// Append stores a raw message (role, its text as the summarizer sees it,
// its token count and Unix-ms timestamp) and appends a context item for it.
// It returns the message's sequence number (1, 2, ...).
func (m *Memory) Append(role, text string, tokens int, timestamp int64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	seq := m.nextSeq
	m.nextSeq++
	m.msgs[seq] = memMessage{meta: MessageMeta{Seq: seq, Tokens: tokens, Timestamp: timestamp, Role: role}, text: text}
	m.seqs = append(m.seqs, seq)
	m.items = append(m.items, Item{Pos: m.nextPos, Ref: MessageRef(seq), Tokens: tokens, Depth: -1, Timestamp: timestamp, Role: role})
	m.nextPos += PosStep
	return seq
}

// MessageSeqs returns every stored message's sequence number in order (the
// allMessageSeqs argument of Check).
func (m *Memory) MessageSeqs() []uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]uint64(nil), m.seqs...)
}

// Summaries returns every stored summary, sorted by id.
func (m *Memory) Summaries() []Summary {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Summary, 0, len(m.summaries))
	for _, s := range m.summaries {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Replaces returns how many Replace calls succeeded.
func (m *Memory) Replaces() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.replaces
}

// Items returns the context items in position order.
func (m *Memory) Items(ctx context.Context) ([]Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dag: items: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]Item(nil), m.items...), nil
}

// MessageText returns the stored text of message seq.
func (m *Memory) MessageText(ctx context.Context, seq uint64) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("dag: message text: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	msg, ok := m.msgs[seq]
	if !ok {
		return "", fmt.Errorf("dag: message %d: %w", seq, ErrNotFound)
	}
	return msg.text, nil
}

// MessageMeta returns the metadata of message seq.
func (m *Memory) MessageMeta(ctx context.Context, seq uint64) (MessageMeta, error) {
	if err := ctx.Err(); err != nil {
		return MessageMeta{}, fmt.Errorf("dag: message meta: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	msg, ok := m.msgs[seq]
	if !ok {
		return MessageMeta{}, fmt.Errorf("dag: message %d: %w", seq, ErrNotFound)
	}
	return msg.meta, nil
}

// Summary returns summary id.
func (m *Memory) Summary(ctx context.Context, id string) (Summary, error) {
	if err := ctx.Err(); err != nil {
		return Summary{}, fmt.Errorf("dag: summary: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.summaries[id]
	if !ok {
		return Summary{}, fmt.Errorf("dag: summary %q: %w", id, ErrNotFound)
	}
	return cloneSummary(s), nil
}

// Replace atomically swaps the contiguous items old for s's item. It fails
// with ErrConflict when old are no longer exactly the items at those
// positions.
func (m *Memory) Replace(ctx context.Context, old []Item, s Summary, item Item) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dag: replace: %w", err)
	}
	if len(old) == 0 {
		return fmt.Errorf("dag: replace: no items to replace")
	}
	if item.Pos != old[0].Pos || item.Ref != SummaryRef(s.ID) {
		return fmt.Errorf("dag: replace: item %+v must be at position %d and point at %q", item, old[0].Pos, s.ID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.summaries[s.ID]; dup {
		return fmt.Errorf("dag: replace: summary %q already stored", s.ID)
	}
	i := sort.Search(len(m.items), func(i int) bool { return m.items[i].Pos >= old[0].Pos })
	if i+len(old) > len(m.items) {
		return fmt.Errorf("dag: replace at %d: %w", old[0].Pos, ErrConflict)
	}
	for k, o := range old {
		cur := m.items[i+k]
		if cur.Pos != o.Pos || cur.Ref != o.Ref {
			return fmt.Errorf("dag: replace at %d: %w", old[0].Pos, ErrConflict)
		}
	}
	m.summaries[s.ID] = cloneSummary(s)
	m.items[i] = item
	m.items = append(m.items[:i+1], m.items[i+len(old):]...)
	m.replaces++
	return nil
}

func cloneSummary(s Summary) Summary {
	s.Sources = append([]Ref(nil), s.Sources...)
	return s
}
