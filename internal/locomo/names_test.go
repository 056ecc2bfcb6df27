package locomo

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

// TestRecallAboveNameOnly: recall ranks the turn about the asked thing
// above a turn whose own text shares only the asked person's name with the
// question (issue #28). A real LoCoMo question of conv-26 without the
// speaker prefix, each turn a doc of the index: before the ranking on the
// question's subject (index/names.go), the name-only turn ranked first
// and the evidence second.
func TestRecallAboveNameOnly(t *testing.T) {
	convs, err := Load(testutil.SharedFile(t, "data/locomo/locomo-dev3.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := &convs[0]
	if c.SampleID != "conv-26" {
		t.Fatalf("first conversation %s, want conv-26", c.SampleID)
	}
	ctx := context.Background()
	r, err := NewIndexRetriever(t.TempDir(), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	text := map[string]string{}
	for si := range c.Sessions {
		docs := sessionDocs(c, &c.Sessions[si], true)
		for _, d := range docs {
			text[d.DiaID] = d.Text
		}
		if err := r.IngestSession(ctx, "conv-26", fmt.Sprint(si), docs); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		question, evidence, nameOnly string
	}{
		// "That's a gorgeous photo, Caroline! …": only "Caroline" (the
		// picnic is in the turn before it).
		{"When did Caroline have a picnic?", "D6:11", "D6:12"},
	} {
		ids, err := r.Recall(ctx, "conv-26", tc.question, 8)
		if err != nil {
			t.Fatal(err)
		}
		ev, other := slices.Index(ids, tc.evidence), slices.Index(ids, tc.nameOnly)
		if ev != 0 || (other >= 0 && other < ev) {
			t.Errorf("%q: evidence %s (%q) at rank %d, the name-only turn %s (%q) at %d; want the evidence first",
				tc.question, tc.evidence, text[tc.evidence], ev, tc.nameOnly, text[tc.nameOnly], other)
		}
	}
}
