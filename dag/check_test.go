package dag_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
)

// rawStore is a Store whose state a test sets freely, to build DAGs that
// break invariants.
type rawStore struct {
	items     []dag.Item
	summaries map[string]dag.Summary
	metas     map[uint64]dag.MessageMeta
}

func (s *rawStore) Items(context.Context) ([]dag.Item, error) {
	return append([]dag.Item(nil), s.items...), nil
}
func (s *rawStore) MessageText(_ context.Context, seq uint64) (string, error) {
	if _, ok := s.metas[seq]; !ok {
		return "", dag.ErrNotFound
	}
	return fmt.Sprintf("message %d", seq), nil
}
func (s *rawStore) MessageMeta(_ context.Context, seq uint64) (dag.MessageMeta, error) {
	m, ok := s.metas[seq]
	if !ok {
		return m, dag.ErrNotFound
	}
	return m, nil
}
func (s *rawStore) Summary(_ context.Context, id string) (dag.Summary, error) {
	x, ok := s.summaries[id]
	if !ok {
		return x, fmt.Errorf("summary %s: %w", id, dag.ErrNotFound)
	}
	return x, nil
}
func (s *rawStore) Replace(context.Context, []dag.Item, dag.Summary, dag.Item) error {
	return errors.New("rawStore: read only")
}

// validStore: messages 1..6 (10 tokens, ts seq*1000); leaves L1 (1,2) and
// L2 (3,4); C (L1, L2); items C, 5, 6.
func validStore() *rawStore {
	s := &rawStore{summaries: map[string]dag.Summary{}, metas: map[uint64]dag.MessageMeta{}}
	for seq := uint64(1); seq <= 6; seq++ {
		s.metas[seq] = dag.MessageMeta{Seq: seq, Tokens: 10, Timestamp: int64(seq) * 1000, Role: "user"}
	}
	s.summaries["L1"] = dag.Summary{ID: "L1", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1), dag.MessageRef(2)}, Tokens: 5, Earliest: 1000, Latest: 2000, DescendantCount: 2, DescendantTokens: 20}
	s.summaries["L2"] = dag.Summary{ID: "L2", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(3), dag.MessageRef(4)}, Tokens: 5, Earliest: 3000, Latest: 4000, DescendantCount: 2, DescendantTokens: 20}
	s.summaries["C"] = dag.Summary{ID: "C", Kind: dag.KindCondensed, Depth: 1, Sources: []dag.Ref{dag.SummaryRef("L1"), dag.SummaryRef("L2")}, Tokens: 4, Earliest: 1000, Latest: 4000, DescendantCount: 4, DescendantTokens: 40}
	s.items = []dag.Item{
		{Pos: 10, Ref: dag.SummaryRef("C"), Tokens: 4, Depth: 1, Timestamp: 4000},
		{Pos: 50, Ref: dag.MessageRef(5), Tokens: 10, Depth: -1, Timestamp: 5000, Role: "user"},
		{Pos: 60, Ref: dag.MessageRef(6), Tokens: 10, Depth: -1, Timestamp: 6000, Role: "user"},
	}
	return s
}

func setSummary(s *rawStore, id string, f func(*dag.Summary)) {
	x := s.summaries[id]
	x.Sources = append([]dag.Ref(nil), x.Sources...)
	f(&x)
	s.summaries[id] = x
}

func TestCheckDetects(t *testing.T) {
	all := []uint64{1, 2, 3, 4, 5, 6}
	if err := dag.Check(context.Background(), validStore(), all); err != nil {
		t.Fatalf("valid store: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(s *rawStore)
		want   string
	}{
		{"positions not increasing", func(s *rawStore) { s.items[2].Pos = 50 }, "not greater"},
		{"message not covered", func(s *rawStore) { s.items = s.items[:2] }, "message 6 is not covered"},
		{"message covered twice", func(s *rawStore) {
			s.items = append([]dag.Item{{Pos: 1, Ref: dag.MessageRef(1), Tokens: 10, Depth: -1}}, s.items...)
		}, "more than once"},
		{"out of order", func(s *rawStore) { s.items[1].Ref.Seq, s.items[2].Ref.Seq = 6, 5 }, "out of order"},
		{"raw item depth", func(s *rawStore) { s.items[1].Depth = 0 }, "want -1"},
		{"raw item tokens", func(s *rawStore) { s.items[1].Tokens = 11 }, "message has only 10"},
		{"summary item tokens", func(s *rawStore) { s.items[0].Tokens = 99 }, "summary has depth"},
		{"unknown message", func(s *rawStore) { s.items[2].Ref.Seq = 77 }, "not a message of the conversation"},
		{"missing summary", func(s *rawStore) { delete(s.summaries, "L2") }, "referenced but not stored"},
		{"cycle", func(s *rawStore) {
			setSummary(s, "L1", func(x *dag.Summary) {
				x.Kind, x.Depth, x.Sources = dag.KindCondensed, 2, []dag.Ref{dag.SummaryRef("C")}
			})
		}, "cycle"},
		{"leaf sources not consecutive", func(s *rawStore) {
			setSummary(s, "L1", func(x *dag.Summary) { x.Sources[1] = dag.MessageRef(3) })
		}, "not consecutive"},
		{"leaf with a summary source", func(s *rawStore) {
			setSummary(s, "L1", func(x *dag.Summary) { x.Sources[1] = dag.SummaryRef("L2") })
		}, "not a raw message"},
		{"leaf depth", func(s *rawStore) { setSummary(s, "L1", func(x *dag.Summary) { x.Depth = 1 }) }, "want 0"},
		{"unknown kind", func(s *rawStore) { setSummary(s, "L1", func(x *dag.Summary) { x.Kind = "blob" }) }, "unknown kind"},
		{"no sources", func(s *rawStore) { setSummary(s, "L2", func(x *dag.Summary) { x.Sources = nil }) }, "no sources"},
		{"leaf count", func(s *rawStore) { setSummary(s, "L1", func(x *dag.Summary) { x.DescendantCount = 3 }) }, "descendant count"},
		{"leaf tokens", func(s *rawStore) { setSummary(s, "L1", func(x *dag.Summary) { x.DescendantTokens = 21 }) }, "descendant tokens"},
		{"leaf earliest", func(s *rawStore) { setSummary(s, "L1", func(x *dag.Summary) { x.Earliest = 1 }) }, "earliest"},
		{"leaf latest", func(s *rawStore) { setSummary(s, "L2", func(x *dag.Summary) { x.Latest = 1 }) }, "latest"},
		{"condensed roll-up", func(s *rawStore) { setSummary(s, "C", func(x *dag.Summary) { x.DescendantTokens = 41 }) }, "sources sum to"},
		{"condensed time range", func(s *rawStore) { setSummary(s, "C", func(x *dag.Summary) { x.Latest = 5000 }) }, "time range"},
		{"condensed mixes depths", func(s *rawStore) {
			s.summaries["D"] = dag.Summary{ID: "D", Kind: dag.KindCondensed, Depth: 1, Sources: []dag.Ref{dag.SummaryRef("L2")}, Tokens: 3, Earliest: 3000, Latest: 4000, DescendantCount: 2, DescendantTokens: 20}
			setSummary(s, "C", func(x *dag.Summary) { x.Depth = 2; x.Sources[1] = dag.SummaryRef("D") })
			s.items[0].Depth = 2
		}, "has depth 0"},
		{"condensed sources not consecutive", func(s *rawStore) {
			setSummary(s, "C", func(x *dag.Summary) { x.Sources[0], x.Sources[1] = x.Sources[1], x.Sources[0] })
		}, "does not follow"},
		{"condensed with raw source", func(s *rawStore) {
			setSummary(s, "C", func(x *dag.Summary) { x.Sources[1] = dag.MessageRef(3) })
		}, "not a summary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validStore()
			tc.mutate(s)
			err := dag.Check(context.Background(), s, all)
			if !errors.Is(err, dag.ErrInvariant) {
				t.Fatalf("want ErrInvariant, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	if err := dag.Check(context.Background(), validStore(), []uint64{1, 2, 3, 3}); !errors.Is(err, dag.ErrInvariant) {
		t.Fatalf("duplicate seqs in allMessageSeqs: %v", err)
	}
}

func TestExpandAndDescribe(t *testing.T) {
	ctx := context.Background()
	s := validStore()
	p, err := dag.Expand(ctx, s, "C", 25, "")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.Messages) != "[1 2]" || p.Tokens != 20 || p.Total != 4 || p.NextCursor == "" {
		t.Fatalf("page 1: %+v", p)
	}
	p2, err := dag.Expand(ctx, s, "C", 25, p.NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p2.Messages) != "[3 4]" || p2.NextCursor != "" || p2.Offset != 2 {
		t.Fatalf("page 2: %+v", p2)
	}
	// A cap smaller than one message still makes progress.
	p3, _ := dag.Expand(ctx, s, "C", 1, "")
	if len(p3.Messages) != 1 {
		t.Fatalf("tiny cap: %+v", p3)
	}
	for _, bad := range []string{"L1@1", "C@x", "C@-1", "C@4", "C@01", "junk"} {
		if _, err := dag.Expand(ctx, s, "C", 25, bad); !errors.Is(err, dag.ErrBadCursor) {
			t.Errorf("cursor %q: want ErrBadCursor, got %v", bad, err)
		}
	}
	if _, err := dag.Expand(ctx, s, "nope", 0, ""); !errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	d, err := dag.Describe(ctx, s, "L2")
	if err != nil {
		t.Fatal(err)
	}
	if d.Active || fmt.Sprint(d.Ancestors) != "[C]" || fmt.Sprint(d.Messages) != "[3 4]" {
		t.Fatalf("describe L2: %+v", d)
	}
	d, _ = dag.Describe(ctx, s, "C")
	if !d.Active || d.Pos != 10 || len(d.Children) != 2 || d.Children[1].ID != "L2" {
		t.Fatalf("describe C: %+v", d)
	}
	if _, err := dag.Describe(ctx, s, "nope"); !errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("describe unknown: %v", err)
	}
}

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "sum_1@0", "sum_1@12", "@", "sum_1@", "a@b@3", "sum_1@-0", "sum_1@99999999999999999999"} {
		f.Add(s, "sum_1")
	}
	f.Fuzz(func(t *testing.T, cursor, id string) {
		off, err := dag.ParseCursor(cursor, id)
		if err != nil {
			if !errors.Is(err, dag.ErrBadCursor) {
				t.Fatalf("error not ErrBadCursor: %v", err)
			}
			return
		}
		if off < 0 {
			t.Fatalf("negative offset %d", off)
		}
		if cursor != "" && dag.FormatCursor(id, off) != cursor {
			t.Fatalf("round trip: %q -> %d -> %q", cursor, off, dag.FormatCursor(id, off))
		}
	})
}

func FuzzStripThinking(f *testing.F) {
	for _, s := range []string{"<think>x</think>y", "<thinking>", "a<reasoning>b</reasoning>c", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := dag.StripThinking(s)
		if len(out) > len(s) {
			t.Fatalf("grew: %q -> %q", s, out)
		}
		if strings.Contains(strings.ToLower(out), "<think>") {
			t.Fatalf("thinking left: %q", out)
		}
	})
}
