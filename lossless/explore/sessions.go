package explore

// Sessions a page at a time, each with the figures of its active context,
// without loading every conversation of a large store.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/store"
)

// MaxContextScan bounds the context items an explorer call reads of one
// conversation (ContextStats, ContextSummaries): a compacted conversation's
// context holds about a token budget of items (hundreds to a few
// thousand), but a long history imported and never compacted holds one
// item per message, and reading a million items takes seconds. Beyond the
// bound the figures cover the first MaxContextScan items and say so
// (Partial).
const MaxContextScan = 20_000

// DefaultPageLimit is the page size of the explorer's lists when a query
// gives none; MaxPageLimit the largest it accepts.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)

// ContextStats are the figures of a conversation's active context: what
// assemble reads from, before the budget cuts it.
type ContextStats struct {
	// Items is the number of context items read.
	Items int `json:"items"`
	// Tokens is the stored token count of the items assemble may show
	// (heartbeat, hidden and superseded items left out): summaries by
	// their rendered count, large messages by their reference's.
	Tokens int64 `json:"tokens"`
	// SummariesByDepth counts the context's summaries by depth (index 0:
	// leaves); empty when the context holds none. These are the DAG's
	// roots, as the model sees them.
	SummariesByDepth []int `json:"summariesByDepth"`
	// Partial is set when the context has more than MaxContextScan items:
	// the figures above count the first MaxContextScan (Tokens is then a
	// lower bound).
	Partial bool `json:"partial,omitempty"`
}

// contextStats reads c's context items (at most x.maxScan) into
// ContextStats.
func (x *Explorer) contextStats(ctx context.Context, r store.Reader, c store.ConvID) (ContextStats, error) {
	st := ContextStats{SummariesByDepth: []int{}}
	for it, err := range r.Items(c, 0, math.MaxUint64, false) {
		if err != nil {
			return st, fmt.Errorf("explore: conversation %s: read context: %w", c, lossless.StoreError(err))
		}
		if st.Items == x.maxScan {
			st.Partial = true
			break
		}
		if st.Items++; st.Items%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return st, fmt.Errorf("explore: %w", err)
			}
		}
		if it.Flags&(store.FlagHeartbeat|store.FlagHidden|store.FlagSuperseded) == 0 {
			st.Tokens += int64(it.Tokens)
		}
		if it.IsSummary() && it.Depth >= 0 {
			for len(st.SummariesByDepth) <= it.Depth {
				st.SummariesByDepth = append(st.SummariesByDepth, 0)
			}
			st.SummariesByDepth[it.Depth]++
		}
	}
	return st, nil
}

// ContextStats returns the figures of conv's active context.
func (x *Explorer) ContextStats(ctx context.Context, conv *lossless.Conversation) (ContextStats, error) {
	var st ContextStats
	err := x.e.View(ctx, func(r store.Reader) error {
		var err error
		st, err = x.contextStats(ctx, r, conv.StoreID())
		return err
	})
	return st, err
}

// SessionQuery selects a page of Explorer.SessionsPage.
type SessionQuery struct {
	// Agent keeps one agent's conversations ("": every agent).
	Agent string
	// Match keeps the conversations one of whose session ids, sessionKey
	// or id contains it ("": all).
	Match string
	// Offset skips that many; Limit is the page size (0:
	// DefaultPageLimit, at most MaxPageLimit).
	Offset, Limit int
}

// SessionDetail is one conversation of a SessionPage: its SessionInfo and
// its active context's figures.
type SessionDetail struct {
	inspect.SessionInfo
	Context ContextStats `json:"context"`
}

// SessionPage is a page of conversations.
type SessionPage struct {
	// Total is the number of conversations the query matched.
	Total    int             `json:"total"`
	Sessions []SessionDetail `json:"sessions"`
}

// pageBounds returns the offset and limit a query asked for, defaults
// filled and checked.
func pageBounds(offset, limit int) (int, int, error) {
	if offset < 0 {
		return 0, 0, fmt.Errorf("%w: offset %d is negative", lossless.ErrBadToolArgs, offset)
	}
	switch {
	case limit < 0:
		return 0, 0, fmt.Errorf("%w: limit %d is negative", lossless.ErrBadToolArgs, limit)
	case limit == 0:
		limit = DefaultPageLimit
	case limit > MaxPageLimit:
		limit = MaxPageLimit
	}
	return offset, limit, nil
}

// SessionsPage returns a page of the stored conversations of q.Agent
// (every agent when empty), ordered by agent, then the newest created
// first (an order that a later write does not change, so that paging
// through it neither repeats nor skips). Only the conversation records are
// read for the whole store; the message times and the context figures are
// read for the page's conversations alone.
func (x *Explorer) SessionsPage(ctx context.Context, q SessionQuery) (SessionPage, error) {
	offset, limit, err := pageBounds(q.Offset, q.Limit)
	if err != nil {
		return SessionPage{}, err
	}
	var page SessionPage
	err = x.e.View(ctx, func(r store.Reader) error {
		var recs []store.ConvRecord
		for cr, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("explore: read conversations: %w", lossless.StoreError(err))
			}
			if len(recs)%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("explore: %w", err)
				}
			}
			if (q.Agent == "" || cr.Agent == q.Agent) && matchesSession(cr, q.Match) {
				recs = append(recs, cr)
			}
		}
		sort.Slice(recs, func(i, j int) bool {
			a, b := recs[i], recs[j]
			if a.Agent != b.Agent {
				return a.Agent < b.Agent
			}
			if a.Created != b.Created {
				return a.Created > b.Created
			}
			return a.ID.String() < b.ID.String()
		})
		page.Total = len(recs)
		page.Sessions = []SessionDetail{}
		for _, cr := range recs[min(offset, len(recs)):min(offset+limit, len(recs))] {
			in, err := lossless.DescribeConversation(r, cr)
			if err != nil {
				return err
			}
			d := SessionDetail{SessionInfo: in}
			if d.Context, err = x.contextStats(ctx, r, cr.ID); err != nil {
				return err
			}
			page.Sessions = append(page.Sessions, d)
		}
		return nil
	})
	return page, err
}

// matchesSession reports whether one of the conversation's names contains
// match.
func matchesSession(cr store.ConvRecord, match string) bool {
	if match == "" || strings.Contains(cr.Key, match) || strings.Contains(cr.ID.String(), match) {
		return true
	}
	for _, id := range cr.SessionIDs {
		if strings.Contains(id, match) {
			return true
		}
	}
	return false
}

// SessionByID describes the conversation whose id (hex, as Sessions, Grep
// and Recall give it) is id; an error wrapping core.ErrUnknownSession when
// there is none.
func (x *Explorer) SessionByID(ctx context.Context, id string) (inspect.SessionInfo, error) {
	c, ok := store.ParseConvID(id)
	if !ok {
		return inspect.SessionInfo{}, fmt.Errorf("explore: conversation id %q: %w", id, core.ErrUnknownSession)
	}
	var in inspect.SessionInfo
	err := x.e.View(ctx, func(r store.Reader) error {
		rec, err := r.Conversation(c)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("explore: conversation %s: %w", id, core.ErrUnknownSession)
		}
		if err != nil {
			return fmt.Errorf("explore: conversation %s: %w", id, lossless.StoreError(err))
		}
		in, err = lossless.DescribeConversation(r, store.ConvRecord{ID: c, Conversation: rec})
		return err
	})
	return in, err
}
