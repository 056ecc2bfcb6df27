package explore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless"
)

func TestExploreDAG(t *testing.T) {
	e := toolFixture(t)
	x := New(e)
	ctx := context.Background()
	conv := mustConv(t, e, "s1")
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, it := range items {
		if it.IsSummary() {
			roots = append(roots, it.Ref.ID)
		}
	}
	page, err := x.ContextSummaries(ctx, conv, 0, 0)
	if err != nil || page.Total != len(roots) || len(page.Summaries) != len(roots) || page.Partial {
		t.Fatalf("ContextSummaries: %+v %v (roots %v)", page, err, roots)
	}
	for i, s := range page.Summaries {
		if s.ID != roots[i] || s.Text == "" {
			t.Fatalf("summary %d: %s, want %s", i, s.ID, roots[i])
		}
	}
	if len(roots) > 1 {
		p2, err := x.ContextSummaries(ctx, conv, 1, 1)
		if err != nil || p2.Total != len(roots) || len(p2.Summaries) != 1 || p2.Summaries[0].ID != roots[1] {
			t.Fatalf("second page: %+v %v", p2, err)
		}
	}
	// Walk the DAG down from every root: children are the sources, in
	// order; leaves reach raw messages whose bytes are the stored ones.
	var leaves int
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		cp, err := x.SummaryChildren(ctx, conv, id, 0, MaxPageLimit)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Summary.ID != id || cp.Summary.Depth != depth || cp.Total != len(cp.Summary.Sources) || len(cp.Children) != cp.Total {
			t.Fatalf("summary %s: %+v", id, cp)
		}
		if depth == 0 {
			leaves++
		}
		for i, ch := range cp.Children {
			src := cp.Summary.Sources[i]
			switch ch.Kind {
			case ChildSummary:
				if src.Kind != dag.RefSummary || ch.Summary.ID != src.ID || ch.Summary.Text != "" {
					t.Fatalf("child %d of %s: %+v, source %+v", i, id, ch, src)
				}
				walk(ch.Summary.ID, depth-1)
			case ChildMessage:
				m, err := conv.Message(ctx, ch.Seq)
				if err != nil || src.Seq != ch.Seq || ch.Role != m.Role() || ch.Preview == "" {
					t.Fatalf("child %d of %s: %+v (%v)", i, id, ch, err)
				}
			default:
				t.Fatalf("child kind %q", ch.Kind)
			}
		}
	}
	for _, s := range page.Summaries {
		walk(s.ID, s.Depth)
	}
	d0, err := x.SummariesAtDepth(ctx, conv, 0, 0, 0)
	if err != nil || d0.Total < leaves || d0.Total == 0 {
		t.Fatalf("depth 0: %d summaries, %d leaves reached: %v", d0.Total, leaves, err)
	}
	for _, s := range d0.Summaries {
		if s.Depth != 0 {
			t.Fatalf("depth 0 lists %s of depth %d", s.ID, s.Depth)
		}
	}
	if p, err := x.SummariesAtDepth(ctx, conv, 0, d0.Total, 5); err != nil || len(p.Summaries) != 0 || p.Total != d0.Total {
		t.Fatalf("past the end: %+v %v", p, err)
	}
	if _, err := x.SummariesAtDepth(ctx, conv, -1, 0, 0); !errors.Is(err, lossless.ErrBadToolArgs) {
		t.Fatalf("negative depth: %v", err)
	}
	if _, err := x.SummaryChildren(ctx, conv, "sum_nope", 0, 0); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("missing summary: %v", err)
	}
	// A leaf's children paged.
	if d0.Total > 0 {
		leaf := d0.Summaries[0]
		cp, err := x.SummaryChildren(ctx, conv, leaf.ID, 1, 2)
		if err != nil || cp.Total != len(leaf.Sources) || len(cp.Children) != min(2, len(leaf.Sources)-1) || cp.Children[0].Seq != leaf.Sources[1].Seq {
			t.Fatalf("leaf page: %+v %v", cp, err)
		}
	}
}

// TestRawMessage: every message's bytes are the export's, the odd ones
// (spacing, HTML characters, unknown fields) included.
func TestRawMessage(t *testing.T) {
	e := toolFixture(t)
	x := New(e)
	ctx := context.Background()
	conv := mustConv(t, e, "s1")
	n := 0
	err := e.Messages(ctx, "", "s1", func(seq uint64, m core.Message) error {
		raw, err := x.RawMessage(ctx, conv, seq)
		if err != nil {
			return err
		}
		if !bytes.Equal(raw, m.Raw()) {
			return fmt.Errorf("message %d: %q, export %q", seq, raw, m.Raw())
		}
		n++
		return nil
	})
	if err != nil || n != 81 {
		t.Fatalf("%d messages: %v", n, err)
	}
	raw, _ := x.RawMessage(ctx, conv, 6)
	if !bytes.Contains(raw, []byte(`"odd <b>bytes</b> & spacing", "timestamp"`)) {
		t.Fatalf("message 6 is not the odd one byte for byte: %s", raw)
	}
	if _, err := x.RawMessage(ctx, conv, 999); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("missing message: %v", err)
	}
}
