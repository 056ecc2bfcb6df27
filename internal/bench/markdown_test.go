package bench

import (
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/internal/locomo"
)

// TestWriteMarkdownSplit: the recall and window sections give the
// evaluation split's figures beside the whole file's, each from the
// report, and a run without the split (the built-in fixture) has no such
// rows.
func TestWriteMarkdownSplit(t *testing.T) {
	at := func(v float64) map[string]float64 { return map[string]float64{"5": v, "25": v + 10} }
	rep := &Report{
		Meta: Meta{Command: "lossless-bench --suite recall,window", Commit: "abc123", Cores: 2, GOMAXPROCS: 2, LoadStart: []float64{1, 2, 3}, LoadEnd: []float64{4, 5, 6}},
		Recall: &RecallReport{Source: "dev.json", Questions: 495, RecallAt: at(68.6), RecallAtNoSpeaker: at(66.6),
			SetsNoSpeaker: map[string]locomo.SetRecall{
				locomo.SetHeldOut: {Samples: []string{"conv-41"}, Questions: 193, RecallAt: at(64.9), InjectedRecallAt8: 63.7},
				locomo.SetTuneOn:  {Samples: []string{"conv-26", "conv-30"}, Questions: 302, RecallAt: at(67.7)},
			},
			GateNoSpeaker: &locomo.GateReport{MinScore: 0.65, InjectedRecallAt8: 68.4}},
		Window: &WindowReport{Source: "dev.json", WindowReport: locomo.WindowReport{Questions: 495, CoveredShare: 0.8, Rows: []locomo.WindowRow{
			{Budget: 2000, Engine: locomo.LosslessRow, EvidenceVerbatimPct: 67.5, EvidenceCoveredPct: 68.6,
				Sets: map[string]locomo.WindowSet{locomo.SetHeldOut: {Questions: 193, EvidenceVerbatimPct: 65.7, EvidenceCoveredPct: 66.5},
					locomo.SetTuneOn: {Questions: 302, EvidenceVerbatimPct: 68.6, EvidenceCoveredPct: 69.9}}},
		}}},
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| commit | `abc123` |",
		"| load average (1 / 5 / 15 min) | 1.00 / 2.00 / 3.00 at the start, 4.00 / 5.00 / 6.00 at the end |",
		"| **without the speaker prefix** (as real messages) | all | 495 | 66.6 | 76.6 |",
		"| **without the speaker prefix** (as real messages) | **held out** (conv-41) | 193 | 64.9 | 74.9 |",
		"| **without the speaker prefix** (as real messages) | tune-on (conv-26, conv-30) | 302 | 67.7 | 77.7 |",
		"| **without the speaker prefix** | 0.65 | 68.4 (63.7) |",
		"| 2000 | **lossless** | 67.5 | 68.6 | 0.0 | 0.0 | 65.7 / 66.5 | 68.6 / 69.9 |",
		"Held out: conv-41, 193 questions",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	// Without the split: no held-out rows or columns.
	rep.Recall.SetsNoSpeaker, rep.Window.Rows[0].Sets = nil, nil
	b.Reset()
	if err := WriteMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	if md := b.String(); strings.Contains(md, "held out") || strings.Contains(md, "tune-on") {
		t.Errorf("a run without the split has split rows:\n%s", md)
	}
}
