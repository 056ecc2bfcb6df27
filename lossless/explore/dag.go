package explore

// The summary DAG a page at a time: the summaries of a context, of a
// depth, the sources of one summary, down to a message's raw bytes.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/store"
)

// SummaryPage is a page of a conversation's summaries.
type SummaryPage struct {
	// Total is the number of summaries listed (on every page).
	Total     int           `json:"total"`
	Summaries []dag.Summary `json:"summaries"`
	// Partial is set when the context has more than MaxContextScan items
	// (ContextSummaries): Total counts the summaries among the first
	// MaxContextScan.
	Partial bool `json:"partial,omitempty"`
}

// ContextSummaries returns a page of the summaries in conv's active
// context, in context order: the DAG's roots as the model sees them. Only
// the page's summaries are read.
func (x *Explorer) ContextSummaries(ctx context.Context, conv *lossless.Conversation, offset, limit int) (SummaryPage, error) {
	offset, limit, err := pageBounds(offset, limit)
	if err != nil {
		return SummaryPage{}, err
	}
	c := conv.StoreID()
	page := SummaryPage{Summaries: []dag.Summary{}}
	err = x.e.View(ctx, func(r store.Reader) error {
		var ids []string
		n := 0
		for it, err := range r.Items(c, 0, math.MaxUint64, false) {
			if err != nil {
				return fmt.Errorf("explore: conversation %s: read context: %w", c, lossless.StoreError(err))
			}
			if n == x.maxScan {
				page.Partial = true
				break
			}
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("explore: %w", err)
				}
			}
			if it.IsSummary() {
				if page.Total >= offset && len(ids) < limit {
					ids = append(ids, it.Ref.ID)
				}
				page.Total++
			}
		}
		for _, id := range ids {
			s, err := r.Summary(c, id)
			if err != nil {
				return fmt.Errorf("explore: summary %q: %w", id, lossless.StoreError(err))
			}
			page.Summaries = append(page.Summaries, s)
		}
		return nil
	})
	return page, err
}

// SummariesAtDepth returns a page of every stored summary of conv at
// depth (0: leaves), in id order. It reads all the conversation's
// summaries.
func (x *Explorer) SummariesAtDepth(ctx context.Context, conv *lossless.Conversation, depth, offset, limit int) (SummaryPage, error) {
	offset, limit, err := pageBounds(offset, limit)
	if err != nil {
		return SummaryPage{}, err
	}
	if depth < 0 {
		return SummaryPage{}, fmt.Errorf("%w: depth %d is negative", lossless.ErrBadToolArgs, depth)
	}
	c := conv.StoreID()
	page := SummaryPage{Summaries: []dag.Summary{}}
	err = x.e.View(ctx, func(r store.Reader) error {
		for s, err := range r.Summaries(c) {
			if err != nil {
				return fmt.Errorf("explore: conversation %s: read summaries: %w", c, lossless.StoreError(err))
			}
			if s.Depth != depth {
				continue
			}
			if page.Total >= offset && len(page.Summaries) < limit {
				page.Summaries = append(page.Summaries, s)
			}
			page.Total++
		}
		return nil
	})
	return page, err
}

// Kinds of a SummaryChild.
const (
	ChildSummary = "summary"
	ChildMessage = "message"
)

// SummaryChild is one source of a summary: a summary of the depth below
// (Summary set, its text left out) or a raw message (Seq, Role, Tokens,
// Timestamp and a one-line Preview of its text).
type SummaryChild struct {
	Kind      string       `json:"kind"`
	Summary   *dag.Summary `json:"summary,omitempty"`
	Seq       uint64       `json:"seq,omitempty"`
	Role      string       `json:"role,omitempty"`
	Tokens    int          `json:"tokens,omitempty"`
	Timestamp int64        `json:"timestamp,omitempty"`
	Preview   string       `json:"preview,omitempty"`
}

// ChildPage is a summary with a page of its sources (SummaryChildren).
type ChildPage struct {
	Summary dag.Summary `json:"summary"`
	// Total is the number of sources.
	Total    int            `json:"total"`
	Children []SummaryChild `json:"children"`
}

// previewRunes is the length of SummaryChild.Preview.
const previewRunes = 160

// SummaryChildren returns summary id of conv and a page of its sources in
// order: for a condensed summary the summaries it condenses, for a leaf
// the raw messages it covers. A missing summary is an error wrapping
// core.ErrNotFound.
func (x *Explorer) SummaryChildren(ctx context.Context, conv *lossless.Conversation, id string, offset, limit int) (ChildPage, error) {
	offset, limit, err := pageBounds(offset, limit)
	if err != nil {
		return ChildPage{}, err
	}
	c := conv.StoreID()
	var page ChildPage
	err = x.e.View(ctx, func(r store.Reader) error {
		s, err := r.Summary(c, id)
		if err != nil {
			return fmt.Errorf("explore: summary %q: %w", id, lossless.StoreError(err))
		}
		page = ChildPage{Summary: s, Total: len(s.Sources), Children: []SummaryChild{}}
		for _, ref := range s.Sources[min(offset, len(s.Sources)):min(offset+limit, len(s.Sources))] {
			ch, err := summaryChild(r, c, ref)
			if err != nil {
				return err
			}
			page.Children = append(page.Children, ch)
		}
		return nil
	})
	return page, err
}

// summaryChild reads one source of a summary.
func summaryChild(r store.Reader, c store.ConvID, ref dag.Ref) (SummaryChild, error) {
	if ref.Kind == dag.RefSummary {
		s, err := r.Summary(c, ref.ID)
		if err != nil {
			return SummaryChild{}, fmt.Errorf("explore: summary %q: %w", ref.ID, lossless.StoreError(err))
		}
		s.Text = ""
		return SummaryChild{Kind: ChildSummary, Summary: &s}, nil
	}
	rec, raw, err := lossless.ReadMessageText(r, c, ref.Seq)
	if err != nil {
		return SummaryChild{}, err
	}
	ch := SummaryChild{Kind: ChildMessage, Seq: ref.Seq, Role: rec.Role, Tokens: rec.Tokens, Timestamp: rec.Timestamp}
	if m, err := core.ParseMessage(raw); err == nil {
		ch.Preview = clipLine(m.Text(), previewRunes)
		if ch.Preview == "" {
			ch.Preview = clipLine(lossless.MessagePlainText(m), previewRunes)
		}
	}
	return ch, nil
}

// clipLine returns s on one line (runs of white space made one space), cut
// to at most n runes with an ellipsis.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// RawMessage returns stored message seq of conv, bytes exactly as
// ingested (the line `lossless export` writes for it, without the
// newline); an error wrapping core.ErrNotFound when there is none.
func (x *Explorer) RawMessage(ctx context.Context, conv *lossless.Conversation, seq uint64) ([]byte, error) {
	var raw []byte
	err := x.e.View(ctx, func(r store.Reader) error {
		m, err := r.Message(conv.StoreID(), seq)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("explore: message %d: %w", seq, core.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("explore: message %d: %w", seq, lossless.StoreError(err))
		}
		raw = m.Raw
		return nil
	})
	return raw, err
}
