package bleveindex

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/lossless-engine/contextengine/index"
)

// plainRetriever hides the Index's SubjectRelevancer: RankRecall then
// measures the subject's relevance in a second pass, as before it.
type plainRetriever struct{ index.Retriever }

// TestSubjectRelevanceOnePass: a prompt that names someone is ranked on
// its subject (index/names.go) from one pass over the index, and the
// ranking, the scores and the relevance the gate compares are exactly
// those of the two passes it replaced.
func TestSubjectRelevanceOnePass(t *testing.T) {
	ix, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	names := []string{"Caroline", "Melanie", "Joanna", "Nate"}
	things := []string{"pottery class", "support group", "camping trip", "adoption agency", "charity race", "painting of a sunset", "guitar lessons", "turtle tank"}
	var docs []index.Doc
	for i := 0; i < 400; i++ {
		n, th := names[i%len(names)], things[(i*7/3)%len(things)]
		var text string
		switch i % 4 {
		case 0:
			text = fmt.Sprintf("Wow, %s, that sounds great! Tell me more.", n)
		case 1:
			text = fmt.Sprintf("I went to the %s last week and loved it.", th)
		case 2:
			text = fmt.Sprintf("Thanks %s, the %s was fun.", n, th)
		default:
			text = fmt.Sprintf("Hey %s, how was your weekend?", n)
		}
		docs = append(docs, index.Doc{ID: fmt.Sprint("m", i), Agent: "a", Conversation: "c", Session: fmt.Sprint("s", i/40),
			Role: []string{"user", "assistant"}[i%2], Kind: index.KindMessage, Seq: uint64(i % 40), Timestamp: int64(i) * 60_000, Text: text})
	}
	ix.Add(docs...)
	ctx := context.Background()
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	subjectPath := 0
	for _, prompt := range []string{
		"What did Caroline do at the support group?",
		"When did Melanie go on the camping trip?",
		"What is Joanna painting?",
		"Did Nate adopt a turtle?",
		"How was the pottery class?", // no name: one pass either way
		"What did Caroline say?",     // the name and nothing else the history holds
	} {
		for _, gate := range []float64{0, 0.65} {
			q := index.RecallQuery{Agent: "a", Text: prompt, K: 10, MinRelevance: gate}
			terms := ix.Terms(prompt)
			if len(index.NameTerms(prompt)) > 0 {
				subjectPath++
			}
			one, err := index.RankRecall(ctx, bleveRetriever{ix}, terms, q)
			if err != nil {
				t.Fatal(err)
			}
			two, err := index.RankRecall(ctx, plainRetriever{bleveRetriever{ix}}, terms, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(one) == 0 && gate == 0 {
				t.Errorf("%q (gate %v): no hit: the test measures nothing", prompt, gate)
			}
			if !reflect.DeepEqual(one, two) {
				t.Errorf("%q (gate %v): one pass ranks\n%+v\ntwo passes\n%+v", prompt, gate, one, two)
			}
		}
	}
	if subjectPath == 0 {
		t.Fatal("no prompt named anyone: the subject's path was not taken")
	}
}
