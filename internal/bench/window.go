package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lossless-engine/contextengine/internal/locomo"
)

// WindowFunc runs the window suite on a LoCoMo-format file at budgets
// (ascending) and fills rep.WindowReport (locomo.RunWindow does the work;
// the command wires the engines).
type WindowFunc func(ctx context.Context, locomoPath string, budgets []int, rep *WindowReport) error

// WindowReport is the window suite: for each question of a LoCoMo file,
// what the window assembled with the question as prompt holds of its
// evidence turns, per budget and engine (locomo.WindowReport), beside the
// recency baseline.
type WindowReport struct {
	// Source is the LoCoMo file.
	Source string `json:"source"`
	locomo.WindowReport
	WallS float64 `json:"wall_s"`
	Error string  `json:"error,omitempty"`
}

// window runs the window suite.
func (r *runner) window(ctx context.Context, rep *WindowReport) error {
	cfg := r.cfg
	if cfg.Window == nil {
		return fmt.Errorf("window: %w", ErrUnsupported)
	}
	if cfg.LoCoMo == "" {
		return errors.New("window: needs a LoCoMo file (Config.LoCoMo, --locomo FILE)")
	}
	rep.Source = cfg.LoCoMo
	cfg.Progress.Step("window: LoCoMo "+filepath.Base(cfg.LoCoMo), 1)
	start := time.Now()
	err := cfg.Window(ctx, cfg.LoCoMo, cfg.WindowBudgets, rep)
	rep.WallS = time.Since(start).Seconds()
	cfg.Progress.Add(1)
	if err != nil {
		return fmt.Errorf("window: %w", err)
	}
	for _, row := range rep.Rows {
		for _, v := range []float64{row.EvidenceVerbatimPct, row.EvidenceCoveredPct, row.QuestionsAllEvidencePct, row.SummaryCoveredPct} {
			if v < 0 || v > 100 {
				return fmt.Errorf("window: %s at %d: %v is not a percentage", row.Engine, row.Budget, v)
			}
		}
	}
	return nil
}

// writeWindow writes the window suite's table: one line per budget and
// engine.
func writeWindow(b *strings.Builder, r *WindowReport) {
	if r == nil {
		return
	}
	prefix := "no speaker prefix"
	if r.Speaker {
		prefix = "with the speaker prefix"
	}
	fmt.Fprintf(b, "\nWINDOW  LoCoMo %s: %d conversations, %d turns, %d questions, %d evidence turns (%s); each question assembled as the prompt at the budget\n",
		filepath.Base(r.Source), r.Conversations, r.Turns, r.Questions, r.EvidenceTurns, prefix)
	fmt.Fprintf(b, "        %% of evidence turns verbatim / covered (≥ %.0f%% of content words) / covered by summaries alone; %% of questions with all evidence covered;\n", 100*r.CoveredShare)
	fmt.Fprintf(b, "        mean window tokens (%s): tail, summaries, recall, system\n", r.Counter)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "budget\tengine\tverbatim\tcovered\tall-evidence\tsummary-covered\ttail\tsummaries\trecall\tsystem\ttotal\tmax\tfailed turns\t\n")
	last := 0
	for _, row := range r.Rows {
		if last != 0 && row.Budget != last {
			fmt.Fprintf(tw, "\t\t\t\t\t\t\t\t\t\t\t\t\t\n")
		}
		last = row.Budget
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%d\t\n", row.Budget, row.Engine,
			row.EvidenceVerbatimPct, row.EvidenceCoveredPct, row.QuestionsAllEvidencePct, row.SummaryCoveredPct,
			row.Tokens.Tail, row.Tokens.Summaries, row.Tokens.Recall, row.Tokens.System, row.Tokens.Total, row.MaxTokens, row.FailedTurns)
	}
	tw.Flush()
	for _, row := range r.Rows {
		if s, ok := row.Sets[locomo.SetHeldOut]; ok {
			fmt.Fprintf(b, "held out (%s, %d questions): %s at %d verbatim %.1f covered %.1f all-evidence %.1f\n", locomo.HeldOutSample, s.Questions,
				row.Engine, row.Budget, s.EvidenceVerbatimPct, s.EvidenceCoveredPct, s.QuestionsAllEvidencePct)
		}
	}
	if r.EvidenceUnknown > 0 {
		fmt.Fprintf(b, "%d evidence ids name no turn of their conversation (left out)\n", r.EvidenceUnknown)
	}
	fmt.Fprintf(b, "(%.1fs)\n", r.WallS)
}

// goBenchWindow returns the window suite's benchstat lines: one per
// budget and engine.
func goBenchWindow(r *WindowReport, line func(name string, n int, pairs ...any)) {
	if r == nil {
		return
	}
	for _, row := range r.Rows {
		line(fmt.Sprintf("Window/budget=%d/engine=%s", row.Budget, row.Engine), max(r.Questions, 1),
			fmt.Sprintf("%.2f", row.EvidenceVerbatimPct), "verbatim-%", fmt.Sprintf("%.2f", row.EvidenceCoveredPct), "covered-%",
			fmt.Sprintf("%.2f", row.QuestionsAllEvidencePct), "all-evidence-%", fmt.Sprintf("%.2f", row.SummaryCoveredPct), "summary-covered-%",
			fmt.Sprintf("%.0f", row.Tokens.Total), "window-tokens")
	}
}
