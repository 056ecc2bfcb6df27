package locomo

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

func TestDebugMisses(t *testing.T) {
	if os.Getenv("DEBUG_MISSES") == "" {
		t.Skip()
	}
	p := testutil.SharedFile(t, "data/locomo/locomo-dev3.json")
	convs, _ := Load(p)
	r, _ := NewIndexRetriever(t.TempDir(), 0)
	ctx := context.Background()
	text := map[string]string{}
	for ci := range convs {
		c := &convs[ci]
		for _, s := range c.Sessions {
			docs := SessionDocs(c, &s)
			for _, d := range docs {
				text[c.SampleID+"/"+d.DiaID] = d.Text
			}
			r.IngestSession(ctx, c.SampleID, fmt.Sprint(c.SampleID, "/", s.Num), docs)
		}
	}
	r.Ready(ctx)
	n := 0
	for ci := range convs {
		c := &convs[ci]
		for _, q := range c.QA {
			ids, _ := r.Recall(ctx, c.SampleID, q.Question, 25)
			if RecallAtK(ids, q.Evidence, 25) < 1 && n < 25 && q.Category == 4 {
				n++
				fmt.Printf("Q[%d] %s\n", q.Category, q.Question)
				top := map[string]bool{}
				for _, id := range ids {
					top[id] = true
				}
				for _, e := range q.Evidence {
					if !top[e] {
						fmt.Printf("   MISS %s: %s\n", e, text[c.SampleID+"/"+e])
					}
				}
				for _, id := range ids[:3] {
					fmt.Printf("   got %s: %.100s\n", id, text[c.SampleID+"/"+id])
				}
			}
		}
	}
}
