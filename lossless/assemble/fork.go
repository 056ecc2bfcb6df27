package assemble

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/subagent"
	"github.com/lossless-engine/contextengine/store"
)

// forkPrefix prepends a forked child's parent snapshot to res, newest
// first within what res leaves of budget, starting at a whole turn (never
// a tool result whose call is cut off). The child's record is the one
// call's window read, else read here; a prepared child is marked active
// (subagent.Started). The parsed parent messages are kept in the fork's
// cache (subagent.Forks) for its next assemble.
func forkPrefix(ctx context.Context, port Port, call *Call, budget int, res *core.AssembleResult) error {
	sp := port.Subagents()
	sub, rec, ok, err := sp.Started(ctx, call.Sub, call.Agent, call.Params.SessionID, call.Params.SessionKey)
	if err != nil || !ok || rec.Mode != core.ContextModeFork || rec.SnapshotItems == 0 {
		return err
	}
	parent, okp := records.ParseConvID(rec.ParentConv)
	if !okp {
		return nil
	}
	avail := budget - res.EstimatedTokens
	if avail <= 0 {
		return nil
	}
	// The messages of the last assembly of this fork, reused (the
	// snapshot never changes; only the budget's cut moves).
	cache := sp.Forks.Get(sub)
	cache.Mu.Lock()
	defer cache.Mu.Unlock()
	if cache.Token != rec.Token {
		// Another preparation of the child (by another process of a
		// shared store, or before a removal this one missed).
		cache.Msgs, cache.Sums, cache.Token = nil, nil, rec.Token
	}
	nextMsgs := make(map[uint64]core.Message, len(cache.Msgs))
	nextSums := make(map[string]core.Message, len(cache.Sums))
	var win Window
	err = port.Store().View(ctx, func(r store.Reader) (err error) {
		// The store scans a snapshot forward only: its items (small
		// records, references) are read first, then walked newest first.
		var items []store.Item
		for it, err := range r.ForkItems(sub) {
			if err != nil {
				return records.FromStore(err)
			}
			items = append(items, it)
		}
		win, err = Walk(ctx, subagent.Reversed(items), avail, "assemble fork",
			func(_ int, item dag.Item, flags byte) (core.Message, error) {
				var m core.Message
				var err error
				if item.IsSummary() {
					m, err = SummaryMessage(r, parent, item.Ref.ID, cache.Sums)
					nextSums[item.Ref.ID] = m
				} else {
					m, err = ItemMessage(r, parent, item.Ref.Seq, flags, cache.Msgs)
					nextMsgs[item.Ref.Seq] = m
				}
				if err != nil {
					return m, fmt.Errorf("lossless: assemble fork of %s: %w", rec.ChildSessionKey, err)
				}
				return m, nil
			}, nil)
		return err
	})
	if err != nil || len(win.Rev) == 0 {
		return err
	}
	cache.Msgs, cache.Sums = nextMsgs, nextSums
	prefix, used := win.Chronological()
	res.Messages = append(prefix, res.Messages...)
	res.EstimatedTokens += used
	return nil
}
