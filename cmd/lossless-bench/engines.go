package main

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
	"github.com/lossless-engine/contextengine/internal/bench"
	"github.com/lossless-engine/contextengine/internal/locomo"
	"github.com/lossless-engine/contextengine/legacy"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

// losslessTarget is the lossless engine on embedded defaults (a Badger
// store in the suite's directory, the default summarizer, no network),
// counting tokens with tokenizer, with cross-session recall (its Bleve
// index) on or off.
func losslessTarget(tokenizer string, recall bool) bench.Target {
	return bench.Target{
		Name: lossless.EngineID,
		Open: func(ctx context.Context, dir string, budget int) (core.Engine, error) {
			cfg := config.Default()
			cfg.StoreDir = dir
			cfg.DefaultTokenBudget = budget
			cfg.Tokenizer = tokenizer
			cfg.Recall.Enabled = &recall
			return lossless.Open(ctx, cfg)
		},
		// Flush waits for the recall index, so that ingest rates include
		// the Bleve indexing.
		Flush: func(ctx context.Context, e core.Engine) error {
			if le, ok := e.(*lossless.Engine); ok {
				return le.WaitRecallIndex(ctx)
			}
			return nil
		},
		Expand: expandAll,
		Summaries: func(ctx context.Context, e core.Engine) (int, error) {
			le, ok := e.(*lossless.Engine)
			if !ok {
				return 0, fmt.Errorf("lossless-bench: summaries: %T is not *lossless.Engine", e)
			}
			st, err := le.Stats(ctx)
			if err != nil {
				return 0, err
			}
			n := 0
			for _, a := range st.Agents {
				n += int(a.Summaries)
			}
			return n, nil
		},
		Rotate: func(ctx context.Context, e core.Engine, session, key, file string, budget int) (string, string, error) {
			le, ok := e.(*lossless.Engine)
			if !ok {
				return "", "", fmt.Errorf("lossless-bench: rotate: %T is not *lossless.Engine", e)
			}
			r, err := le.Rotate(ctx, orchestrate.RotateParams{SessionID: session, SessionKey: key,
				SessionFile: file, TokenBudget: budget})
			return r.SessionID, r.SessionFile, err
		},
	}
}

// expandAll walks the conversation's active context (after the last
// session of sessions, i.e. after any rotation) and expands every summary
// item with ExpandSummary — the lcm_expand tool's path, page by page —
// down to raw messages; raw items are read as stored.
func expandAll(ctx context.Context, e core.Engine, sessions []string) ([][]byte, error) {
	le, ok := e.(*lossless.Engine)
	if !ok {
		return nil, fmt.Errorf("lossless-bench: expand: %T is not *lossless.Engine", e)
	}
	session := sessions[len(sessions)-1]
	conv, err := le.Conversation(ctx, "", session)
	if err != nil {
		return nil, fmt.Errorf("lossless-bench: expand: %w", err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		return nil, fmt.Errorf("lossless-bench: expand: %w", err)
	}
	var out [][]byte
	for _, it := range items {
		if !it.IsSummary() {
			m, err := conv.Message(ctx, it.Ref.Seq)
			if err != nil {
				return nil, fmt.Errorf("lossless-bench: expand: message %d: %w", it.Ref.Seq, err)
			}
			out = append(out, m.Raw())
			continue
		}
		cursor := ""
		for {
			page, err := le.ExpandSummary(ctx, tools.ExpandParams{SessionID: session, ID: it.Ref.ID,
				MaxTokens: 64000, Cursor: cursor})
			if err != nil {
				return nil, fmt.Errorf("lossless-bench: expand %s: %w", it.Ref.ID, err)
			}
			for _, m := range page.Messages {
				out = append(out, m.Message.Raw())
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	return out, nil
}

// legacyTarget is the legacy engine (built-in compaction over the session
// file, extractive summarizer), counting tokens with tokenizer: chars4 (as
// OpenClaw's legacy engine estimates) for the main baseline row, an exact
// counter for the second.
func legacyTarget(tokenizer string) bench.Target {
	return bench.Target{
		Name:    legacy.ID,
		Counter: tokenizer,
		Open: func(ctx context.Context, dir string, budget int) (core.Engine, error) {
			tc, err := core.NewCounter(tokenizer)
			if err != nil {
				return nil, fmt.Errorf("lossless-bench: legacy: %w", err)
			}
			return legacy.New(legacy.Options{Counter: tc}), nil
		},
	}
}

// exactCounter is the counter of the exact legacy row: the engines'
// tokenizer, or o200k_base when that is the chars/4 estimate.
func exactCounter(tokenizer string) string {
	if tokenizer == core.CounterChars4 {
		return core.EncodingO200k
	}
	return tokenizer
}

// recallFunc runs the LoCoMo recall measurement of internal/locomo twice:
// with the speaker's name on each turn (the usual figures) and without it
// (RecallAtNoSpeaker, GateNoSpeaker), the relevance gate at threshold
// minScore (0: the engine's default).
func recallFunc(minScore float64) bench.RecallFunc {
	return func(ctx context.Context, path string, ks []int, rep *bench.RecallReport) error {
		r, err := locomo.RunRecall(ctx, locomo.RecallConfig{Path: path, Ks: ks, MinScore: minScore})
		if err != nil {
			return err
		}
		rep.RecallAt, rep.PerCategory, rep.Questions = r.RecallAt, r.PerCategory, r.Questions
		rep.QueryP50Ms, rep.QueryP99Ms, rep.Turns, rep.Path = r.QueryP50Ms, r.QueryP99Ms, r.Turns, r.Path
		rep.GateReport, rep.Sets = r.Gate, r.Sets
		ns, err := locomo.RunRecall(ctx, locomo.RecallConfig{Path: path, Ks: ks, MinScore: minScore, NoSpeaker: true})
		if err != nil {
			return fmt.Errorf("without the speaker prefix: %w", err)
		}
		rep.RecallAtNoSpeaker, rep.GateNoSpeaker, rep.SetsNoSpeaker = ns.RecallAt, ns.Gate, ns.Sets
		return nil
	}
}

// windowOptions are the window suite's flags.
type windowOptions struct {
	tokenizer string
	speaker   bool
	questions int
	detail    string
}

// windowFunc runs the window suite of internal/locomo: the lossless
// engine (recall on, and the same store with recall off), the legacy
// engine counting with chars4 as OpenClaw's does, and the recency
// baseline, token figures counted with the engine's tokenizer.
func windowFunc(o windowOptions) bench.WindowFunc {
	return func(ctx context.Context, path string, budgets []int, rep *bench.WindowReport) (err error) {
		tc, err := core.NewCounter(o.tokenizer)
		if err != nil {
			return err
		}
		cfg := locomo.WindowConfig{Path: path, Budgets: budgets, Counter: tc, Speaker: o.speaker, Questions: o.questions,
			Engines: []locomo.WindowEngine{locomo.LosslessWindowEngine(o.tokenizer), locomo.LegacyWindowEngine(core.CounterChars4)}}
		if o.detail != "" {
			f, err := os.Create(o.detail)
			if err != nil {
				return fmt.Errorf("--window-detail: %w", err)
			}
			defer func() {
				if cerr := f.Close(); err == nil && cerr != nil {
					err = fmt.Errorf("--window-detail: %w", cerr)
				}
			}()
			w := bufio.NewWriter(f)
			defer func() {
				if ferr := w.Flush(); err == nil && ferr != nil {
					err = fmt.Errorf("--window-detail: %w", ferr)
				}
			}()
			cfg.Detail = w
		}
		r, err := locomo.RunWindow(ctx, cfg)
		rep.WindowReport = r
		return err
	}
}

// identifiers is ident.Values, the project's identifier extractor.
func identifiers(text string) []string { return ident.Values(text) }
