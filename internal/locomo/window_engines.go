package locomo

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/legacy"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/explain"
)

// Row names of the engines WindowEngines wires.
const (
	LosslessRow         = "lossless"
	LosslessNoRecallRow = "lossless-no-recall"
	LegacyRow           = "legacy"
)

// LosslessWindowEngine is the lossless engine on its default config (a
// Badger store in the row's directory, the extractive summarizer, recall
// on), counting with tokenizer ("" for the default), with a variant row on
// the same store with recall off. Its summary ids come from a seeded
// generator (Config.NewSummaryID), so that a replay gives the same figures
// every time. Settle and Ready wait for its background
// compactions and its recall index (merged); Assemble labels the window's parts as
// the engine's AssembleReport does (the same code as `lossless assemble
// --json` and the explorer).
func LosslessWindowEngine(tokenizer string) WindowEngine {
	return LosslessWindowEngineWith(tokenizer, nil)
}

// LosslessWindowEngineWith is LosslessWindowEngine with edit applied to
// the engine's config before each open (nil: none): a knob under tuning,
// such as Recall.QuestionShare.
func LosslessWindowEngineWith(tokenizer string, edit func(*config.Config)) WindowEngine {
	open := func(recall bool) func(ctx context.Context, dir string, budget int) (core.Engine, error) {
		return func(ctx context.Context, dir string, budget int) (core.Engine, error) {
			cfg := config.Default()
			cfg.StoreDir = dir
			cfg.DefaultTokenBudget = budget
			if tokenizer != "" {
				cfg.Tokenizer = tokenizer
			}
			if edit != nil {
				edit(&cfg)
			}
			cfg.Recall.Enabled = &recall
			cfg.NewSummaryID = seededSummaryIDs(uint64(budget))
			return lossless.Open(ctx, cfg)
		}
	}
	return WindowEngine{
		Name:     LosslessRow,
		Open:     open(true),
		Settle:   settleLossless,
		Ready:    settleLossless,
		Assemble: assembleLossless,
		Variants: []WindowVariant{{Name: LosslessNoRecallRow, Open: open(false), Ready: settleLossless, Assemble: assembleLossless}},
	}
}

// LegacyWindowEngine is the legacy engine (OpenClaw's default: assemble
// passes the host's session through, compaction is the built-in summary
// compaction of the session file, run by the host's overflow recovery),
// counting with counter (OpenClaw's legacy engine estimates with chars4).
func LegacyWindowEngine(counter string) WindowEngine {
	return WindowEngine{
		Name:       LegacyRow,
		Transcript: true,
		Open: func(ctx context.Context, dir string, budget int) (core.Engine, error) {
			tc, err := core.NewCounter(counter)
			if err != nil {
				return nil, fmt.Errorf("locomo: legacy: %w", err)
			}
			return legacy.New(legacy.Options{Counter: tc}), nil
		},
	}
}

// seededSummaryIDs returns summary ids like dag.NewSummaryID's ("sum_"
// and 32 hex digits), drawn from a generator seeded with seed: the same
// replay makes the same ids, so the same token counts.
func seededSummaryIDs(seed uint64) func() string {
	r := rand.New(rand.NewPCG(seed, 28))
	var b [16]byte
	return func() string {
		for i := 0; i < len(b); i += 8 {
			v := r.Uint64()
			for j := range 8 {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		return "sum_" + hex.EncodeToString(b[:])
	}
}

// settleLossless waits for the engine's background compactions, then for
// its recall index, whose segments it merges (CompactRecallIndex). Done
// after every turn, this keeps the index's layout (the order of its docs,
// the term statistics BM25 and the relevance gate read) the same from run
// to run, instead of depending on when the background indexing and
// Bleve's merges ran: without it, two replays differed in a few recall
// blocks (about 0.5 point of the figures).
func settleLossless(ctx context.Context, e core.Engine) error {
	le, ok := e.(*lossless.Engine)
	if !ok {
		return fmt.Errorf("locomo: %T is not *lossless.Engine", e)
	}
	if err := le.WaitCompactions(ctx); err != nil {
		return err
	}
	if le.Config().RecallEnabled() {
		return le.CompactRecallIndex(ctx)
	}
	return nil
}

func assembleLossless(ctx context.Context, e core.Engine, p core.AssembleParams) (core.AssembleResult, []string, error) {
	le, ok := e.(*lossless.Engine)
	if !ok {
		return core.AssembleResult{}, nil, fmt.Errorf("locomo: %T is not *lossless.Engine", e)
	}
	r, err := le.AssembleReport(ctx, p)
	if err != nil {
		return core.AssembleResult{}, nil, err
	}
	parts := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		switch m.Part {
		case explain.PartSummaries:
			parts[i] = PartSummaries
		case explain.PartRecall:
			parts[i] = PartRecall
		case explain.PartTail:
			parts[i] = PartTail
		default:
			parts[i] = PartSystem
		}
	}
	return r.Result, parts, nil
}
