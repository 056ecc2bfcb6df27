package lossless

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
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

// ContextSummaries returns a page of the summaries in the conversation's
// active context, in context order: the DAG's roots as the model sees
// them. Only the page's summaries are read.
func (c *Conversation) ContextSummaries(ctx context.Context, offset, limit int) (SummaryPage, error) {
	offset, limit, err := pageBounds(offset, limit)
	if err != nil {
		return SummaryPage{}, err
	}
	done, err := c.e.enter()
	if err != nil {
		return SummaryPage{}, err
	}
	defer done()
	page := SummaryPage{Summaries: []dag.Summary{}}
	err = c.e.st.View(ctx, func(r store.Reader) error {
		var ids []string
		n := 0
		for it, err := range r.Items(c.id, 0, math.MaxUint64, false) {
			if err != nil {
				return fmt.Errorf("lossless: conversation %s: read context: %w", c.id, fromStore(err))
			}
			if n == c.e.contextScan() {
				page.Partial = true
				break
			}
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("lossless: %w", err)
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
			s, err := r.Summary(c.id, id)
			if err != nil {
				return fmt.Errorf("lossless: summary %q: %w", id, fromStore(err))
			}
			page.Summaries = append(page.Summaries, s)
		}
		return nil
	})
	return page, err
}

// SummariesAtDepth returns a page of every stored summary of the
// conversation at depth (0: leaves), in id order. It reads all the
// conversation's summaries.
func (c *Conversation) SummariesAtDepth(ctx context.Context, depth, offset, limit int) (SummaryPage, error) {
	offset, limit, err := pageBounds(offset, limit)
	if err != nil {
		return SummaryPage{}, err
	}
	if depth < 0 {
		return SummaryPage{}, fmt.Errorf("%w: depth %d is negative", ErrBadToolArgs, depth)
	}
	done, err := c.e.enter()
	if err != nil {
		return SummaryPage{}, err
	}
	defer done()
	page := SummaryPage{Summaries: []dag.Summary{}}
	err = c.e.st.View(ctx, func(r store.Reader) error {
		for s, err := range r.Summaries(c.id) {
			if err != nil {
				return fmt.Errorf("lossless: conversation %s: read summaries: %w", c.id, fromStore(err))
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

// SummaryChildren returns summary id of the conversation and a page of its
// sources in order: for a condensed summary the summaries it condenses,
// for a leaf the raw messages it covers. A missing summary is an error
// wrapping core.ErrNotFound.
func (c *Conversation) SummaryChildren(ctx context.Context, id string, offset, limit int) (ChildPage, error) {
	offset, limit, err := pageBounds(offset, limit)
	if err != nil {
		return ChildPage{}, err
	}
	done, err := c.e.enter()
	if err != nil {
		return ChildPage{}, err
	}
	defer done()
	var page ChildPage
	err = c.e.st.View(ctx, func(r store.Reader) error {
		s, err := r.Summary(c.id, id)
		if err != nil {
			return fmt.Errorf("lossless: summary %q: %w", id, fromStore(err))
		}
		page = ChildPage{Summary: s, Total: len(s.Sources), Children: []SummaryChild{}}
		for _, ref := range s.Sources[min(offset, len(s.Sources)):min(offset+limit, len(s.Sources))] {
			ch, err := summaryChild(r, c.id, ref)
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
func summaryChild(r store.Reader, c convID, ref dag.Ref) (SummaryChild, error) {
	if ref.Kind == dag.RefSummary {
		s, err := r.Summary(c, ref.ID)
		if err != nil {
			return SummaryChild{}, fmt.Errorf("lossless: summary %q: %w", ref.ID, fromStore(err))
		}
		s.Text = ""
		return SummaryChild{Kind: ChildSummary, Summary: &s}, nil
	}
	rec, raw, err := getMsgText(r, c, ref.Seq)
	if err != nil {
		return SummaryChild{}, err
	}
	ch := SummaryChild{Kind: ChildMessage, Seq: ref.Seq, Role: rec.Role, Tokens: rec.Tokens, Timestamp: rec.Timestamp}
	if m, err := core.ParseMessage(raw); err == nil {
		ch.Preview = clipLine(m.Text(), previewRunes)
		if ch.Preview == "" {
			ch.Preview = clipLine(MessagePlainText(m), previewRunes)
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

// RawMessage returns stored message seq of the conversation, bytes exactly
// as ingested (the line `lossless export` writes for it, without the
// newline); an error wrapping core.ErrNotFound when there is none.
func (c *Conversation) RawMessage(ctx context.Context, seq uint64) ([]byte, error) {
	done, err := c.e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	var raw []byte
	err = c.e.st.View(ctx, func(r store.Reader) error {
		m, err := r.Message(c.id, seq)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("lossless: message %d: %w", seq, core.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("lossless: message %d: %w", seq, fromStore(err))
		}
		raw = m.Raw
		return nil
	})
	return raw, err
}
