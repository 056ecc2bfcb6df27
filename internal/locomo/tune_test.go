package locomo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// TestSplit: the evaluation split names the dev file's three
// conversations, each in one set, and Subset picks them out.
func TestSplit(t *testing.T) {
	convs := []Conversation{{SampleID: "conv-26"}, {SampleID: "conv-30"}, {SampleID: "conv-41"}, {SampleID: "synth-1"}}
	if got := Subset(convs, SetHeldOut); len(got) != 1 || got[0].SampleID != HeldOutSample {
		t.Errorf("held out %v, want %s", got, HeldOutSample)
	}
	if got := Subset(convs, SetTuneOn); len(got) != 2 || got[0].SampleID != "conv-26" || got[1].SampleID != "conv-30" {
		t.Errorf("tune-on %v, want conv-26 and conv-30", got)
	}
	if SetOf("synth-1") != "" || SetOf(HeldOutSample) != SetHeldOut {
		t.Error("a conversation outside the split was put in a set, or the held-out one was not")
	}
	for _, s := range TuneOnSamples() {
		if s == HeldOutSample {
			t.Fatalf("%s is both tuned on and held out", s)
		}
	}
}

// TestTuneQuestionShare is the sweep that chooses recall.questionShare on
// the tune-on conversations only (the window suite's lossless rows at
// 2K, 4K and 8K, without the speaker prefix), then reports the held-out
// conversation at the value chosen and at the default. It takes minutes,
// so it runs only when asked:
//
//	LOSSLESS_TUNE=1 go test -run TestTuneQuestionShare -v -timeout 60m ./internal/locomo/
//
// The criterion is the mean of the evidence covered at the three budgets
// (ties: the verbatim mean). It asserts nothing about the figures; it
// logs a table docs/TUNING.md quotes.
func TestTuneQuestionShare(t *testing.T) {
	if os.Getenv("LOSSLESS_TUNE") == "" {
		t.Skip("a tuning sweep: set LOSSLESS_TUNE=1 to run it")
	}
	convs, err := Load(testutil.SharedFile(t, "data/locomo/locomo-dev3.json"))
	if err != nil {
		t.Fatal(err)
	}
	tune, held := Subset(convs, SetTuneOn), Subset(convs, SetHeldOut)
	if len(tune) != 2 || len(held) != 1 {
		t.Fatalf("split: %d tune-on, %d held out conversations", len(tune), len(held))
	}
	run := func(data []Conversation, share float64) (covered, verbatim []float64) {
		t.Helper()
		eng := LosslessWindowEngineWith("", func(c *config.Config) { c.Recall.QuestionShare = share })
		eng.Variants = nil
		rep, err := RunWindow(context.Background(), WindowConfig{Data: data, Budgets: DefaultWindowBudgets,
			Counter: core.DefaultCounter(), Engines: []WindowEngine{eng}, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Rows {
			if r.Engine == LosslessRow {
				covered, verbatim = append(covered, r.EvidenceCoveredPct), append(verbatim, r.EvidenceVerbatimPct)
			}
		}
		return covered, verbatim
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	shares := []float64{0.5, 0.6, 0.7, 0.8}
	var table strings.Builder
	fmt.Fprintf(&table, "tune-on (%s), lossless, covered / verbatim %% at %v:\n", strings.Join(TuneOnSamples(), ", "), DefaultWindowBudgets)
	best, bestCov, bestVerb := 0.0, -1.0, -1.0
	for _, sh := range shares {
		cov, verb := run(tune, sh)
		fmt.Fprintf(&table, "  questionShare %.1f: covered %v verbatim %v (means %.2f / %.2f)\n", sh, cov, verb, mean(cov), mean(verb))
		if m, v := mean(cov), mean(verb); m > bestCov || (m == bestCov && v > bestVerb) {
			best, bestCov, bestVerb = sh, m, v
		}
	}
	fmt.Fprintf(&table, "chosen on tune-on: %.1f (the default: %.1f)\n", best, config.DefaultRecallQuestionShare)
	for _, sh := range []float64{best, config.DefaultRecallQuestionShare} {
		cov, verb := run(held, sh)
		fmt.Fprintf(&table, "held out (%s), questionShare %.1f: covered %v verbatim %v (means %.2f / %.2f)\n", HeldOutSample, sh, cov, verb, mean(cov), mean(verb))
		if sh == config.DefaultRecallQuestionShare {
			break
		}
	}
	t.Log("\n" + table.String())
}
