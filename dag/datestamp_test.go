package dag_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/summarize"
)

// recordSum records the input of each summary it is asked for and answers
// with the extractive summarizer.
type recordSum struct {
	mu     sync.Mutex
	inputs []string
	inner  core.Summarizer
}

func (r *recordSum) Name() string { return "record" }

func (r *recordSum) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	r.mu.Lock()
	r.inputs = append(r.inputs, req.Text)
	r.mu.Unlock()
	return r.inner.Summarize(ctx, req)
}

// TestLeafInputDateStamps: a leaf summary's input marks each day its
// messages change day on ("[7 May 2023]" on a line of its own, once per
// day), so the extractive summarizer carries the dates onto the facts it
// keeps.
func TestLeafInputDateStamps(t *testing.T) {
	m := dag.NewMemory()
	day1 := time.Date(2023, 5, 7, 13, 56, 0, 0, time.UTC).UnixMilli()
	day2 := time.Date(2023, 5, 8, 9, 10, 0, 0, time.UTC).UnixMilli()
	turns := []struct {
		role, text string
		ts         int64
	}{
		{"user", "user: I went to the LGBTQ support group yesterday and it was so powerful.", day1},
		{"assistant", "assistant: That sounds amazing! What happened there?", day1 + 60_000},
		{"user", "user: The transgender stories were inspiring; I am thinking of counseling as a career.", day1 + 120_000},
		{"assistant", "assistant: I painted a sunrise over Lake Tahoe last week, my first oil painting.", day2},
		{"user", "user: Wow! I ran a charity race for mental health on Saturday.", day2 + 60_000},
		{"assistant", "assistant: Good for you. Let's meet again next week.", day2 + 120_000},
		{"user", "user: Sure, talk soon.", day2 + 180_000},
	}
	for _, tr := range turns {
		m.Append(tr.role, tr.text, len(strings.Fields(tr.text)), tr.ts)
	}
	sum := &recordSum{inner: summarize.NewExtractive(words{})}
	c, err := dag.NewCompactor(dag.Config{FreshTailMessages: 1, FreshTailMaxTokens: 10, LeafChunkTokens: 10000, LeafTargetTokens: 60, NewID: seqIDs(), Now: fixedNow}, sum, words{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), m, dag.Target{Budget: 10000, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.inputs) != 1 || len(res.NewSummaryIDs) != 1 {
		t.Fatalf("want one leaf summary from one call, got %d from %d calls", len(res.NewSummaryIDs), len(sum.inputs))
	}
	in := sum.inputs[0]
	want := "[7 May 2023]\nuser: I went to the LGBTQ"
	if !strings.HasPrefix(in, want) {
		t.Fatalf("leaf input does not start with %q:\n%s", want, in)
	}
	if !strings.Contains(in, "\n\n[8 May 2023]\nassistant: I painted") {
		t.Fatalf("leaf input has no stamp where the day changes:\n%s", in)
	}
	if n := strings.Count(in, "[7 May 2023]") + strings.Count(in, "[8 May 2023]"); n != 2 {
		t.Fatalf("%d stamps in the leaf input, want one per day:\n%s", n, in)
	}
	s, err := m.Summary(context.Background(), res.NewSummaryIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if s.Method != "normal" || !strings.Contains(s.Text, "(8 May 2023)") {
		t.Fatalf("summary (%s) does not carry the second day's date:\n%s", s.Method, s.Text)
	}
}
