package legacy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/summarize"
)

// ErrInvalidConfig is returned by Factory and Config.Options for a config
// that does not decode or holds an invalid value.
var ErrInvalidConfig = errors.New("legacy: invalid config")

// Config is the engine's JSON config (plugins.entries.legacy.config). Every
// field is optional; zero means the default. Token figures are in tokens.
type Config struct {
	// Counter names the token counter: "o200k_base" (default),
	// "cl100k_base" or "chars4" (OpenClaw's chars/4 estimate).
	Counter string `json:"counter,omitempty"`
	// ContextWindow is the window used when compact params carry no token
	// budget (default 200000).
	ContextWindow int `json:"contextWindow,omitempty"`
	// ReserveTokens is the compaction reserve (default 16384, raised to at
	// least 20000, at most a quarter of the window).
	ReserveTokens int `json:"reserveTokens,omitempty"`
	// KeepRecentTokens is the recent history kept verbatim (default 20000).
	KeepRecentTokens int `json:"keepRecentTokens,omitempty"`
	// SummarizerWindowTokens is the most input one summarizer call takes
	// (default 64000).
	SummarizerWindowTokens int `json:"summarizerWindowTokens,omitempty"`
	// SummaryTokens is the summary's token target (default 3000).
	SummaryTokens int `json:"summaryTokens,omitempty"`
	// MaxSummaryChars caps the summary (default 16000).
	MaxSummaryChars int `json:"maxSummaryChars,omitempty"`
	// Summarizer selects the summarizer (default extractive); see
	// summarize.Config.
	Summarizer *summarize.Config `json:"summarizer,omitempty"`
}

// ParseConfig decodes raw (JSON; empty or null means defaults). Unknown
// fields and negative figures are refused with ErrInvalidConfig.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return c, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("%w: trailing data after the config object", ErrInvalidConfig)
	}
	for name, v := range map[string]int{"contextWindow": c.ContextWindow, "reserveTokens": c.ReserveTokens,
		"keepRecentTokens": c.KeepRecentTokens, "summarizerWindowTokens": c.SummarizerWindowTokens,
		"summaryTokens": c.SummaryTokens, "maxSummaryChars": c.MaxSummaryChars} {
		if v < 0 {
			return Config{}, fmt.Errorf("%w: %s is negative (%d)", ErrInvalidConfig, name, v)
		}
	}
	return c, nil
}

// Options turns the config into engine Options.
func (c Config) Options() (Options, error) {
	tc := core.DefaultCounter()
	if c.Counter != "" {
		var err error
		if tc, err = core.NewCounter(c.Counter); err != nil {
			return Options{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	var s core.Summarizer
	if c.Summarizer != nil {
		var err error
		if s, err = summarize.FromConfig(*c.Summarizer, tc); err != nil {
			return Options{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	return Options{Counter: tc, Summarizer: s, Compaction: compaction.Options{
		ContextWindow: c.ContextWindow, ReserveTokens: c.ReserveTokens, KeepRecentTokens: c.KeepRecentTokens,
		SummarizerWindowTokens: c.SummarizerWindowTokens, SummaryTokens: c.SummaryTokens,
		MaxSummaryChars: c.MaxSummaryChars}}, nil
}

// Factory builds a legacy engine from its JSON config (ParseConfig), its
// model summarizer with a spend cap of its own (NewFactory).
var Factory core.Factory = NewFactory(nil)

// NewFactory returns a core.Factory that builds a legacy engine from its
// JSON config (ParseConfig), its model summarizer's spend guard and cap
// spend's (summarize.Config.Spend): a process that makes several engines
// hands them one spend so that they share the cap; with nil each has its
// own.
func NewFactory(spend *summarize.Spend) core.Factory {
	return func(ctx context.Context, opts core.FactoryOptions) (core.Engine, error) {
		c, err := ParseConfig(opts.Config)
		if err != nil {
			return nil, err
		}
		if c.Summarizer != nil {
			sc := *c.Summarizer
			sc.Spend = spend
			c.Summarizer = &sc
		}
		o, err := c.Options()
		if err != nil {
			return nil, err
		}
		return New(o), nil
	}
}
