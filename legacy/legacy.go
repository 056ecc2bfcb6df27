// Package legacy is OpenClaw's default context engine, in Go: ingest is a
// no-op, assemble passes the host's (already sanitized, validated and
// limited) messages through with an honest token estimate, and compact
// delegates to the built-in summary compaction (package compaction). It has
// no afterTurn, no system prompt addition and no tools.
//
// It is the engine a failing plugin falls back to, so it never loses the
// session: Compact answers ok:false with a reason, never an error, when it
// cannot compact (no session file, as with OpenClaw's own params, or an I/O
// failure); only cancellation is returned as an error.
package legacy

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/summarize"
)

// Identity of the engine (Info).
const (
	ID   = "legacy"
	Name = "Legacy Context Engine"
)

// ReasonNoSessionFile is the reason Compact gives when the params carry no
// session file (OpenClaw's compact params never do: its runtime compacts the
// transcript itself).
const ReasonNoSessionFile = "legacy: compact needs a session file (params.sessionFile); the host's built-in compaction applies"

// Options configures the engine. Zero fields take defaults.
type Options struct {
	// Counter counts tokens for estimatedTokens and compaction (default
	// core.DefaultCounter(): o200k_base, package tokens).
	Counter core.TokenCounter
	// Summarizer writes compaction summaries (default the extractive
	// summarizer, summarize.NewExtractive).
	Summarizer core.Summarizer
	// Compaction configures the built-in compaction. Its Counter and
	// Summarizer, when nil, are the two above.
	Compaction compaction.Options
}

// Engine is the legacy engine. It keeps no state and is safe for
// concurrent use.
type Engine struct {
	opts Options
}

var _ core.Engine = (*Engine)(nil)

// New returns a legacy engine with opts' defaults filled.
func New(opts Options) *Engine {
	if opts.Counter == nil {
		opts.Counter = opts.Compaction.Counter
	}
	if opts.Counter == nil {
		opts.Counter = core.DefaultCounter()
	}
	if opts.Summarizer == nil {
		opts.Summarizer = opts.Compaction.Summarizer
	}
	if opts.Summarizer == nil {
		opts.Summarizer = summarize.NewExtractive(opts.Counter)
	}
	if opts.Compaction.Counter == nil {
		opts.Compaction.Counter = opts.Counter
	}
	if opts.Compaction.Summarizer == nil {
		opts.Compaction.Summarizer = opts.Summarizer
	}
	return &Engine{opts: opts}
}

// Options returns the engine's options, defaults filled.
func (e *Engine) Options() Options { return e.opts }

// Info returns id "legacy", name "Legacy Context Engine"; the engine does
// not own compaction (the host's auto-compaction stays on).
func (e *Engine) Info() core.Info {
	return core.Info{ID: ID, Name: Name, OwnsCompaction: false}
}

// Ingest does nothing: the host's transcript is the record.
func (e *Engine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	return core.IngestResult{Ingested: false}, nil
}

// Assemble returns the host's messages unchanged, in order, with their
// token count as estimatedTokens.
func (e *Engine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	if err := ctx.Err(); err != nil {
		return core.AssembleResult{}, fmt.Errorf("legacy: assemble: %w", err)
	}
	msgs := p.Messages
	if msgs == nil {
		msgs = []core.Message{}
	}
	return core.AssembleResult{Messages: msgs, EstimatedTokens: core.CountMessages(e.opts.Counter, msgs)}, nil
}

// Compact runs the built-in summary compaction over p.SessionFile
// (compaction.Compact). Without a session file, or when compaction fails,
// it answers OK false with a reason and a nil error, so the session is never
// lost; cancellation is returned as an error wrapping the context's.
func (e *Engine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	if p.SessionFile == "" {
		return core.CompactResult{OK: false, Compacted: false, Reason: ReasonNoSessionFile}, nil
	}
	res, err := compaction.Compact(ctx, p.SessionFile, p, e.opts.Compaction)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return core.CompactResult{}, fmt.Errorf("legacy: compact: %w", err)
		}
		return core.CompactResult{OK: false, Compacted: false, Reason: "legacy: " + err.Error()}, nil
	}
	return res, nil
}
