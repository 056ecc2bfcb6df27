package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// recall runs the recall suite with Config.Recall on Config.LoCoMo or the
// built-in synthetic fixture.
func (r *runner) recall(ctx context.Context, rep *RecallReport) error {
	cfg := r.cfg
	rep.RecallAt = map[string]float64{}
	if cfg.Recall == nil {
		return fmt.Errorf("recall: %w", ErrUnsupported)
	}
	path := cfg.LoCoMo
	rep.Source = path
	if path == "" {
		d, err := r.dir("locomo")
		if err != nil {
			return err
		}
		path = filepath.Join(d, "locomo-synth.json")
		if err := os.WriteFile(path, synth.LoCoMo(cfg.Seed, synth.LoCoMoOptions{}), 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		rep.Source = "built-in synthetic fixture (internal/synth.LoCoMo)"
	}
	cfg.Progress.Step("recall: LoCoMo "+filepath.Base(path), 1)
	start := time.Now()
	err := cfg.Recall(ctx, path, cfg.K, rep)
	rep.WallS = time.Since(start).Seconds()
	cfg.Progress.Add(1)
	if err != nil {
		return fmt.Errorf("recall: %w", err)
	}
	for k, v := range rep.RecallAt {
		if v < 0 || v > 100 {
			return fmt.Errorf("recall: recall@%s = %v is not a percentage", k, v)
		}
	}
	return nil
}

// lossless runs the lossless suite: import a session file; compact it
// repeatedly to shrinking budgets (the budget, half, a quarter: deeper
// summaries each time); rotate the transcript (forced through
// Target.Rotate when compaction did not rotate on its own); continue the
// conversation in the successor session with more messages and compact
// again; then expand every summary down to raw messages and compare with
// the input byte for byte.
func (r *runner) lossless(ctx context.Context, rep *LosslessReport) error {
	cfg := r.cfg
	p := cfg.Progress
	if cfg.Engine.Expand == nil {
		return fmt.Errorf("expand: %w", ErrUnsupported)
	}
	start := time.Now()
	defer func() { rep.WallS = time.Since(start).Seconds() }()
	d, err := r.dir("lossless")
	if err != nil {
		return err
	}
	file := filepath.Join(d, "sessions", "session.jsonl")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	info, err := synth.WriteSessionFile(file, cfg.Seed, cfg.Messages)
	if err != nil {
		return err
	}
	more := max(1, min(200, cfg.Messages/4)) // messages added after the rotation
	rep.Messages = info.Messages + more
	store := filepath.Join(d, "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	e, err := cfg.Engine.Open(ctx, store, cfg.Budget)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeEngine(e)
	key := sessionKey(info.ID)
	p.Step("lossless: import", 1)
	if _, err := bootstrap(ctx, e, info.ID, file); err != nil {
		return err
	}
	if err := r.flush(ctx, cfg.Engine, e); err != nil {
		return err
	}
	p.Add(1)
	sessions := []string{info.ID}
	var errs []error
	compactAt := func(budget int) {
		o, err := compactToBudget(ctx, e, sessions[len(sessions)-1], key, file, budget, maxCompactRounds, p)
		rep.CompactRounds += o.rounds
		sessions = append(sessions, o.sessions[1:]...)
		file = o.file
		if err != nil {
			errs = append(errs, err)
		}
	}
	p.Step("lossless: compact to shrinking budgets", 3)
	for _, b := range []int{cfg.Budget, cfg.Budget / 2, cfg.Budget / 4} {
		compactAt(b)
	}
	if len(sessions) == 1 && cfg.Engine.Rotate != nil {
		p.Step("lossless: rotate", 1)
		sid, f, err := cfg.Engine.Rotate(ctx, e, sessions[0], key, file, cfg.Budget)
		if err != nil {
			errs = append(errs, fmt.Errorf("rotate: %w", err))
		} else {
			sessions, file = append(sessions, sid), f
		}
		p.Add(1)
	}
	rep.Rotations = len(sessions) - 1
	// The conversation goes on in the successor session.
	want := synth.Messages(cfg.Seed, cfg.Messages+more)
	extra := make([]core.Message, more)
	for i := range extra {
		if extra[i], err = core.ParseMessage(want[cfg.Messages+i]); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	p.Step("lossless: continue after the rotation", more)
	if err := ingestBatched(ctx, e, sessions[len(sessions)-1], key, extra, p); err != nil {
		errs = append(errs, fmt.Errorf("after rotation: %w", err))
	}
	p.Step("lossless: compact the successor", 1)
	compactAt(cfg.Budget / 4)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Expand and compare even when something failed: what is stored must
	// still be intact.
	if err := r.flush(ctx, cfg.Engine, e); err != nil {
		return errors.Join(append(errs, err)...)
	}
	p.Step("lossless: expand everything and compare", 1)
	got, err := cfg.Engine.Expand(ctx, e, sessions)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("expand: %w", err))...)
	}
	p.Add(1)
	rep.Expanded = len(got)
	rep.LostOrAltered, rep.Extra, rep.FirstDifferentAt = compareRaw(want, got)
	if rep.LostOrAltered != 0 || rep.Extra != 0 {
		errs = append(errs, fmt.Errorf("%d of %d messages lost or altered, %d extra (first difference at message %d)",
			rep.LostOrAltered, len(want), rep.Extra, rep.FirstDifferentAt))
	}
	return errors.Join(errs...)
}

// compareRaw compares the expanded messages with the input: lost counts
// input messages with no byte-identical counterpart, extra the expanded
// messages that match no input message, and first is the first position
// (1-based; 0 if none) where the two sequences differ.
func compareRaw(want, got [][]byte) (lost, extra, first int) {
	counts := make(map[string]int, len(want))
	for _, w := range want {
		counts[string(w)]++
	}
	for _, g := range got {
		if counts[string(g)] > 0 {
			counts[string(g)]--
		} else {
			extra++
		}
	}
	for _, c := range counts {
		lost += c
	}
	for i := 0; i < max(len(want), len(got)); i++ {
		if i >= len(want) || i >= len(got) || string(want[i]) != string(got[i]) {
			first = i + 1
			break
		}
	}
	return lost, extra, first
}
