package main

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/bench"
	"github.com/lossless-engine/contextengine/internal/locomo"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/summarize"
)

// losslessTarget is the lossless engine on embedded defaults: a Badger
// store in the suite's directory, the default summarizer, no network.
func losslessTarget() bench.Target {
	return bench.Target{
		Name: lossless.EngineID,
		Open: func(ctx context.Context, dir string, budget int) (core.Engine, error) {
			cfg := lossless.DefaultConfig()
			cfg.StoreDir = dir
			cfg.DefaultTokenBudget = budget
			return lossless.Open(ctx, cfg)
		},
		Flush: func(ctx context.Context, e core.Engine) error {
			if f, ok := e.(interface{ Flush(context.Context) error }); ok {
				return f.Flush(ctx)
			}
			return nil
		},
		Expand: func(ctx context.Context, e core.Engine, sessions []string) ([][]byte, error) {
			le, ok := e.(*lossless.Engine)
			if !ok {
				return nil, fmt.Errorf("lossless-bench: expand: %T is not *lossless.Engine", e)
			}
			var out [][]byte
			err := le.Messages(ctx, "", sessions[0], func(_ uint64, m core.Message) error {
				out = append(out, m.Raw())
				return nil
			})
			return out, err
		},
	}
}

// recallFunc runs the LoCoMo recall measurement of internal/locomo.
func recallFunc(ctx context.Context, path string, ks []int, rep *bench.RecallReport) error {
	r, err := locomo.RunRecall(ctx, locomo.RecallConfig{Path: path, Ks: ks})
	if err != nil {
		return err
	}
	rep.RecallAt, rep.PerCategory, rep.Questions = r.RecallAt, r.PerCategory, r.Questions
	rep.QueryP50Ms, rep.QueryP99Ms, rep.Turns, rep.Path = r.QueryP50Ms, r.QueryP99Ms, r.Turns, r.Path
	return nil
}

// identifiers is summarize.Identifiers.
func identifiers(text string) []string { return summarize.Identifiers(text) }
