package dag

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lossless-engine/contextengine/core"
)

// Page is one page of a summary's expansion.
type Page struct {
	// ID is the expanded summary.
	ID string `json:"id"`
	// Messages are raw message sequence numbers in conversation order; the
	// caller fetches their bytes.
	Messages []uint64 `json:"messages"`
	// Tokens is the total tokens of Messages.
	Tokens int `json:"tokens"`
	// Offset is the index of Messages[0] among all the summary's messages,
	// and Total their number.
	Offset int `json:"offset"`
	Total  int `json:"total"`
	// NextCursor continues the expansion; "" on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// Expand walks summary id down to the raw messages it covers, in order, and
// returns the page starting at cursor ("" for the first) that fits maxTokens
// (a page always holds at least one message; maxTokens <= 0 means no cap).
func Expand(ctx context.Context, st Store, id string, maxTokens int, cursor string) (Page, error) {
	seqs, err := Flatten(ctx, st, id)
	if err != nil {
		return Page{}, err
	}
	off, err := ParseCursor(cursor, id)
	if err != nil {
		return Page{}, err
	}
	if off > len(seqs) || (off == len(seqs) && off > 0) {
		return Page{}, fmt.Errorf("%w: offset %d beyond %d messages", ErrBadCursor, off, len(seqs))
	}
	meta, _ := st.(MessageMetaReader)
	p := Page{ID: id, Offset: off, Total: len(seqs)}
	for i := off; i < len(seqs); i++ {
		n, err := messageTokens(ctx, st, meta, seqs[i])
		if err != nil {
			return Page{}, err
		}
		if maxTokens > 0 && len(p.Messages) > 0 && p.Tokens+n > maxTokens {
			p.NextCursor = FormatCursor(id, i)
			break
		}
		p.Messages = append(p.Messages, seqs[i])
		p.Tokens += n
	}
	return p, nil
}

func messageTokens(ctx context.Context, st Store, meta MessageMetaReader, seq uint64) (int, error) {
	if meta != nil {
		m, err := meta.MessageMeta(ctx, seq)
		if err != nil {
			return 0, fmt.Errorf("dag: expand: %w", err)
		}
		return m.Tokens, nil
	}
	text, err := st.MessageText(ctx, seq)
	if err != nil {
		return 0, fmt.Errorf("dag: expand: %w", err)
	}
	return core.Chars4{}.CountText(text), nil
}

// FormatCursor returns the cursor of offset off in summary id's expansion.
func FormatCursor(id string, off int) string { return id + "@" + strconv.Itoa(off) }

// ParseCursor returns the offset a cursor made by FormatCursor for summary
// id holds; "" is offset 0. Anything else fails with ErrBadCursor.
func ParseCursor(cursor, id string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	i := strings.LastIndexByte(cursor, '@')
	if i < 0 || cursor[:i] != id {
		return 0, fmt.Errorf("%w: %q is not a cursor of %q", ErrBadCursor, cursor, id)
	}
	off, err := strconv.Atoi(cursor[i+1:])
	if err != nil || off < 0 || strconv.Itoa(off) != cursor[i+1:] {
		return 0, fmt.Errorf("%w: %q has no valid offset", ErrBadCursor, cursor)
	}
	return off, nil
}

// Flatten returns the raw messages summary id covers, in order.
func Flatten(ctx context.Context, st Store, id string) ([]uint64, error) {
	var out []uint64
	onPath := map[string]bool{}
	var walk func(id string) error
	walk = func(id string) error {
		if onPath[id] {
			return invariantf("cycle: summary %s is its own ancestor", id)
		}
		onPath[id] = true
		defer delete(onPath, id)
		s, err := st.Summary(ctx, id)
		if err != nil {
			return fmt.Errorf("dag: expand %s: %w", id, err)
		}
		for _, src := range s.Sources {
			switch src.Kind {
			case RefMessage:
				out = append(out, src.Seq)
			case RefSummary:
				if err := walk(src.ID); err != nil {
					return err
				}
			default:
				return invariantf("summary %s: unknown source kind %d", id, src.Kind)
			}
		}
		return nil
	}
	if err := walk(id); err != nil {
		return nil, err
	}
	return out, nil
}

// Description is a summary with its lineage.
type Description struct {
	Summary Summary `json:"summary"`
	// Active is true when the summary is itself a context item, at Pos.
	Active bool   `json:"active"`
	Pos    uint64 `json:"pos,omitempty"`
	// Ancestors are the summaries above it, from the context item down to
	// its direct parent (empty when Active).
	Ancestors []string `json:"ancestors,omitempty"`
	// Children are the source summaries of a condensed summary.
	Children []Summary `json:"children,omitempty"`
	// Messages are a leaf's raw message sequence numbers.
	Messages []uint64 `json:"messages,omitempty"`
}

// Describe returns summary id's content, its sources and where it sits
// under the active context.
func Describe(ctx context.Context, st Store, id string) (Description, error) {
	s, err := st.Summary(ctx, id)
	if err != nil {
		return Description{}, fmt.Errorf("dag: describe: %w", err)
	}
	d := Description{Summary: s}
	for _, src := range s.Sources {
		switch src.Kind {
		case RefMessage:
			d.Messages = append(d.Messages, src.Seq)
		case RefSummary:
			child, err := st.Summary(ctx, src.ID)
			if err != nil {
				return Description{}, fmt.Errorf("dag: describe %s: %w", id, err)
			}
			d.Children = append(d.Children, child)
		}
	}
	items, err := st.Items(ctx)
	if err != nil {
		return Description{}, fmt.Errorf("dag: describe: %w", err)
	}
	errFound := errors.New("found")
	var path []string
	var find func(cur string, depth int) error
	find = func(cur string, depth int) error {
		if depth > 64 {
			return nil
		}
		cs, err := st.Summary(ctx, cur)
		if err != nil {
			return err
		}
		if cs.Depth <= s.Depth {
			return nil
		}
		path = append(path, cur)
		for _, src := range cs.Sources {
			if src.Kind != RefSummary {
				continue
			}
			if src.ID == id {
				return errFound
			}
			if err := find(src.ID, depth+1); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		return nil
	}
	for _, it := range items {
		if !it.IsSummary() {
			continue
		}
		if it.Ref.ID == id {
			d.Active, d.Pos = true, it.Pos
			return d, nil
		}
		if it.Depth <= s.Depth {
			continue
		}
		path = path[:0]
		err := find(it.Ref.ID, 0)
		if errors.Is(err, errFound) {
			d.Ancestors = append([]string(nil), path...)
			return d, nil
		}
		if err != nil {
			return Description{}, fmt.Errorf("dag: describe %s: %w", id, err)
		}
	}
	return d, nil
}
