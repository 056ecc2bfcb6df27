package compaction

import (
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/summarize"
)

// Defaults of Options.
const (
	DefaultContextWindow          = 200000
	DefaultReserveTokens          = 16384
	MinReserveTokens              = 20000 // the reserve is raised to at least this...
	MaxReserveShare               = 4     // ...but to at most window/MaxReserveShare
	DefaultKeepRecentTokens       = 20000
	DefaultSummarizerWindowTokens = 64000
	DefaultSummaryTokens          = 3000
	DefaultTurnPrefixTokens       = 1000
	DefaultMaxSummaryChars        = 16000
	DefaultToolResultMaxChars     = 2000
)

// Options configures Compact. The zero value is usable: every zero field
// takes its documented default.
type Options struct {
	// Counter counts tokens (default core.DefaultCounter(), o200k).
	Counter core.TokenCounter
	// Summarizer writes the summaries (default summarize.NewExtractive).
	Summarizer core.Summarizer
	// ContextWindow is the model's window in tokens, used when the call
	// carries no token budget (default 200000).
	ContextWindow int
	// ReserveTokens is the room kept free for the next prompt and answer
	// (default 16384). The effective reserve is raised to at least 20000,
	// then lowered to at most a quarter of the window (EffectiveReserve).
	ReserveTokens int
	// KeepRecentTokens is how much recent history is kept verbatim (default
	// 20000). It is lowered when the window is too small to hold it and a
	// summary under the threshold.
	KeepRecentTokens int
	// SummarizerWindowTokens is the most input one summarizer call takes
	// (default 64000). Larger input is split at tool-call boundaries and
	// summarised in stages; a message larger than half of it is replaced by
	// a one-line marker.
	SummarizerWindowTokens int
	// SummaryTokens is the target of the history summary (default 3000).
	SummaryTokens int
	// TurnPrefixTokens is the target of a split turn's prefix summary
	// (default 1000).
	TurnPrefixTokens int
	// MaxSummaryChars caps the final summary (default 16000).
	MaxSummaryChars int
	// ToolResultMaxChars cuts each tool output in the summarizer input
	// (default 2000; negative for no cut).
	ToolResultMaxChars int
	// Now returns the time written in entries (default time.Now).
	Now func() time.Time
	// NewID returns new entry ids (default core.NewEntryID).
	NewID func() string
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Counter == nil {
		o.Counter = core.DefaultCounter()
	}
	if o.Summarizer == nil {
		o.Summarizer = summarize.NewExtractive(o.Counter)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ContextWindow, DefaultContextWindow)
	def(&o.ReserveTokens, DefaultReserveTokens)
	def(&o.KeepRecentTokens, DefaultKeepRecentTokens)
	def(&o.SummarizerWindowTokens, DefaultSummarizerWindowTokens)
	def(&o.SummaryTokens, DefaultSummaryTokens)
	def(&o.TurnPrefixTokens, DefaultTurnPrefixTokens)
	def(&o.MaxSummaryChars, DefaultMaxSummaryChars)
	if o.ToolResultMaxChars == 0 {
		o.ToolResultMaxChars = DefaultToolResultMaxChars
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = core.NewEntryID
	}
	return o
}

// EffectiveReserve is OpenClaw's reserve rule: reserve (16384 when <= 0)
// raised to at least MinReserveTokens, then lowered to at most a quarter of
// window.
func EffectiveReserve(window, reserve int) int {
	if reserve <= 0 {
		reserve = DefaultReserveTokens
	}
	if reserve < MinReserveTokens {
		reserve = MinReserveTokens
	}
	if q := window / MaxReserveShare; reserve > q {
		reserve = q
	}
	return reserve
}

// Window returns the context window for p: p.TokenBudget, else the
// runtime context's tokenBudget, else the runtime settings' prompt token
// budget, else o.ContextWindow.
func (o Options) Window(p core.CompactParams) int {
	if p.TokenBudget > 0 {
		return p.TokenBudget
	}
	if n, ok := p.RuntimeContext.Int("tokenBudget"); ok && n > 0 {
		return n
	}
	if s := p.RuntimeSettings; s != nil && s.Limits != nil && s.Limits.PromptTokenBudget != nil && *s.Limits.PromptTokenBudget > 0 {
		return *s.Limits.PromptTokenBudget
	}
	if o.ContextWindow > 0 {
		return o.ContextWindow
	}
	return DefaultContextWindow
}
