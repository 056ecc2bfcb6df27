package explore

// Grep a page at a time, with the lcm_grep tool's matcher.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/store"
)

// DefaultGrepScan is GrepPageParams.MaxScan's default: the messages and
// summaries one GrepPage call reads at most.
const DefaultGrepScan = 20_000

// grepChunk is how many messages GrepPage reads at once (newest first, so
// the store's forward scan runs over chunks taken from the end).
const grepChunk = 256

// GrepPageParams are the arguments of GrepPage: lossless.Engine.Grep's,
// with a cursor and a bound on the work of one call. Sort is not used (the
// order is fixed).
type GrepPageParams struct {
	tools.GrepParams
	// Cursor continues a previous call (GrepPageResult.Next; "" starts).
	Cursor string
	// MaxScan bounds the messages and summaries read (0: DefaultGrepScan).
	MaxScan int
	// MaxTime bounds the time spent reading (0: none): past it the call
	// returns what it found with the cursor (having read at least one
	// item, so that a search always moves on).
	MaxTime time.Duration
}

// GrepPageResult is one call of GrepPage.
type GrepPageResult struct {
	Hits []tools.GrepHit `json:"hits"`
	// Scanned is the number of messages and summaries read.
	Scanned int `json:"scanned"`
	// Next continues the search ("" when everything was read).
	Next string `json:"next,omitempty"`
}

// GrepPage is lossless.Engine.Grep a page at a time, for a store too
// large to read in one call: it reads at most p.MaxScan messages and summaries (for at most
// p.MaxTime) and returns the hits among them (at most p.Limit) with a
// cursor to continue. The order
// is fixed, so that pages neither repeat nor skip: conversations newest
// created first (the session's conversation and its ended subagents for
// ScopeConversation), in each its messages newest first, then its
// summaries. Hits carry no relevance order across pages.
func (x *Explorer) GrepPage(ctx context.Context, p GrepPageParams) (GrepPageResult, error) {
	m, err := lossless.NewGrepMatcher(p.GrepParams)
	if err != nil {
		return GrepPageResult{}, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = lossless.DefaultGrepLimit
	}
	limit = min(limit, lossless.MaxGrepLimit)
	maxScan := p.MaxScan
	if maxScan <= 0 {
		maxScan = DefaultGrepScan
	}
	if p.Kind != "" && p.Kind != "message" && p.Kind != "summary" {
		return GrepPageResult{}, fmt.Errorf("%w: kind %q (want message or summary)", lossless.ErrBadToolArgs, p.Kind)
	}
	cur, err := parseGrepCursor(p.Cursor)
	if err != nil {
		return GrepPageResult{}, err
	}
	var convs []store.ConvID
	switch p.Scope {
	case "", tools.ScopeConversation:
		conv, err := x.e.ConversationFor(ctx, p.AgentID, p.SessionID, p.SessionKey)
		if err != nil {
			return GrepPageResult{}, err
		}
		kids, err := conv.LinkedChildren(ctx)
		if err != nil {
			return GrepPageResult{}, err
		}
		convs = append([]store.ConvID{conv.StoreID()}, kids...)
	case tools.ScopeAgent:
	default:
		return GrepPageResult{}, fmt.Errorf("%w: scope %q (want conversation or agent)", lossless.ErrBadToolArgs, p.Scope)
	}
	g := &grepScan{m: m, p: p.GrepParams, limit: limit, maxScan: maxScan, out: GrepPageResult{Hits: []tools.GrepHit{}}}
	if p.MaxTime > 0 {
		g.deadline = time.Now().Add(p.MaxTime)
	}
	err = x.e.View(ctx, func(r store.Reader) error {
		if p.Scope == tools.ScopeAgent {
			var err error
			if convs, err = agentConvsNewestFirst(r, x.e.AgentFor(p.AgentID, p.SessionKey)); err != nil {
				return err
			}
		}
		start := 0
		if cur.set {
			start = -1
			for i, c := range convs {
				if c == cur.conv {
					start = i
				}
			}
			if start < 0 {
				return fmt.Errorf("%w: cursor %q names a conversation this search does not read", lossless.ErrBadToolArgs, p.Cursor)
			}
		}
		// A conversation that finds the call full sets the cursor at its
		// first unread item.
		for i := start; i < len(convs) && g.out.Next == ""; i++ {
			at := grepCursor{}
			if cur.set && i == start {
				at = cur
			}
			if err := g.conversation(ctx, r, convs[i], at); err != nil {
				return err
			}
		}
		return nil
	})
	return g.out, err
}

// agentConvsNewestFirst returns agent's conversations, newest created
// first (then by id).
func agentConvsNewestFirst(r store.Reader, agent string) ([]store.ConvID, error) {
	var recs []store.ConvRecord
	for cr, err := range r.Conversations() {
		if err != nil {
			return nil, fmt.Errorf("explore: grep: read conversations: %w", lossless.StoreError(err))
		}
		if cr.Agent == agent {
			recs = append(recs, cr)
		}
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Created != recs[j].Created {
			return recs[i].Created > recs[j].Created
		}
		return recs[i].ID.String() < recs[j].ID.String()
	})
	out := make([]store.ConvID, len(recs))
	for i, cr := range recs {
		out[i] = cr.ID
	}
	return out, nil
}

// grepScan is one GrepPage call in progress.
type grepScan struct {
	m       *lossless.GrepMatcher
	p       tools.GrepParams
	limit   int
	maxScan int
	// deadline is when MaxTime runs out (zero: never).
	deadline time.Time
	out      GrepPageResult
}

// full reports whether the call must stop: the page is full, or the scan
// bound or the time bound reached.
func (g *grepScan) full() bool {
	if len(g.out.Hits) >= g.limit || g.out.Scanned >= g.maxScan {
		return true
	}
	return !g.deadline.IsZero() && g.out.Scanned > 0 && time.Now().After(g.deadline)
}

func (g *grepScan) inTime(ts int64) bool {
	return (g.p.Since == 0 || ts >= g.p.Since) && (g.p.Until == 0 || ts <= g.p.Until)
}

// conversation reads c from position at (its start when unset); when it
// stops early it sets the cursor of what comes next.
func (g *grepScan) conversation(ctx context.Context, r store.Reader, c store.ConvID, at grepCursor) error {
	if !at.set || !at.summaries {
		if g.p.Kind == "" || g.p.Kind == "message" {
			if err := g.messages(ctx, r, c, at); err != nil || g.out.Next != "" {
				return err
			}
		}
		at = grepCursor{}
	}
	if g.p.Kind == "" || g.p.Kind == "summary" {
		return g.summaries(ctx, r, c, at.after)
	}
	return nil
}

// messages reads c's messages newest first, from at.seq down (all when
// at is unset).
func (g *grepScan) messages(ctx context.Context, r store.Reader, c store.ConvID, at grepCursor) error {
	hi := at.seq
	if hi == 0 { // from the newest
		rec, err := r.Conversation(c)
		if err != nil {
			return fmt.Errorf("explore: grep: conversation %s: %w", c, lossless.StoreError(err))
		}
		if rec.NextSeq == 0 {
			return nil
		}
		hi = rec.NextSeq - 1
	}
	batch := make([]store.Message, 0, grepChunk)
	for hi >= 1 {
		if g.full() {
			g.out.Next = grepCursor{set: true, conv: c, seq: hi}.String()
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("explore: grep: %w", err)
		}
		lo := uint64(1)
		if hi > grepChunk {
			lo = hi - grepChunk + 1
		}
		batch = batch[:0]
		for rec, err := range r.Messages(c, lo, true) {
			if err != nil {
				return fmt.Errorf("explore: grep: %w", lossless.StoreError(err))
			}
			if rec.Seq > hi {
				break
			}
			batch = append(batch, rec)
		}
		if err := checkRun(c, batch, lo, hi); err != nil {
			return fmt.Errorf("explore: grep: %w", err)
		}
		for i := len(batch) - 1; i >= 0; i-- {
			if g.full() {
				g.out.Next = grepCursor{set: true, conv: c, seq: batch[i].Seq}.String()
				return nil
			}
			g.out.Scanned++
			if g.inTime(batch[i].Timestamp) {
				if h, ok := g.m.MessageHit(c, batch[i]); ok {
					g.out.Hits = append(g.out.Hits, h)
				}
			}
		}
		hi = lo - 1
	}
	return nil
}

// summaries reads c's summaries in id order, after id after.
func (g *grepScan) summaries(ctx context.Context, r store.Reader, c store.ConvID, after string) error {
	for s, err := range r.Summaries(c) {
		if err != nil {
			return fmt.Errorf("explore: grep: %w", lossless.StoreError(err))
		}
		if after != "" && s.ID <= after {
			continue
		}
		if g.full() {
			g.out.Next = grepCursor{set: true, conv: c, summaries: true, after: after}.String()
			return nil
		}
		g.out.Scanned++
		after = s.ID
		if g.inTime(s.Latest) {
			if h, ok := g.m.SummaryHit(c, s); ok {
				g.out.Hits = append(g.out.Hits, h)
			}
		}
	}
	return nil
}

// grepCursor is a position of GrepPage: conversation conv, its messages
// from seq down, or its summaries after id after.
type grepCursor struct {
	set       bool
	conv      store.ConvID
	summaries bool
	seq       uint64
	after     string
}

// String encodes the cursor: "<conv>:m<seq>" or "<conv>:s<after>" (an
// unset one is "").
func (c grepCursor) String() string {
	switch {
	case !c.set:
		return ""
	case c.summaries:
		return c.conv.String() + ":s" + c.after
	case c.seq == 0:
		return c.conv.String() + ":" // the conversation's start
	}
	return c.conv.String() + ":m" + strconv.FormatUint(c.seq, 10)
}

func parseGrepCursor(s string) (grepCursor, error) {
	if s == "" {
		return grepCursor{}, nil
	}
	bad := fmt.Errorf("%w: cursor %q does not parse (pass the next cursor a previous page returned)", lossless.ErrBadToolArgs, s)
	conv, rest, ok := strings.Cut(s, ":")
	c, okc := store.ParseConvID(conv)
	if !ok || !okc {
		return grepCursor{}, bad
	}
	cur := grepCursor{set: true, conv: c}
	switch {
	case rest == "":
	case rest[0] == 's':
		cur.summaries, cur.after = true, rest[1:]
	case rest[0] == 'm':
		seq, err := strconv.ParseUint(rest[1:], 10, 64)
		if err != nil || seq == 0 {
			return grepCursor{}, bad
		}
		cur.seq = seq
	default:
		return grepCursor{}, bad
	}
	return cur, nil
}

// checkRun checks that msgs are messages lo to hi of conversation c, each
// once in order: a message missing from the store (a lost key) is
// lossless.ErrCorrupt with the missing range, so that a search never
// answers from fewer messages as if they were all.
func checkRun(c store.ConvID, msgs []store.Message, lo, hi uint64) error {
	want := lo
	for _, m := range msgs {
		if m.Seq != want {
			return missingErr(c, want, m.Seq-1)
		}
		want++
	}
	if want != hi+1 {
		return missingErr(c, want, hi)
	}
	return nil
}

// missingErr is the error of messages from to to of conversation c missing
// from the store, worded as the engine's own reads word it.
func missingErr(c store.ConvID, from, to uint64) error {
	return fmt.Errorf("conversation %s: messages %d-%d are missing: %w", c, from, to, lossless.ErrCorrupt)
}
