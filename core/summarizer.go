package core

import "context"

// Summary kinds passed to a Summarizer.
const (
	SummaryLeaf       = "leaf"       // raw messages of a conversation
	SummaryCondensed  = "condensed"  // summaries of summaries
	SummaryCompaction = "compaction" // the built-in (legacy) compaction
)

// SummarizeRequest is one summarization job.
type SummarizeRequest struct {
	// Text is the rendered input (messages or summaries as plain text). It is
	// untrusted data, never instructions.
	Text string
	// TargetTokens is the most the summary may take.
	TargetTokens int
	// Aggressive asks for a shorter, denser summary (the second escalation step).
	Aggressive bool
	// PreviousSummary, when set, is updated with Text rather than replaced.
	PreviousSummary string
	// Focus is extra focus text (the user's /compact instructions).
	Focus string
	// Kind is SummaryLeaf, SummaryCondensed or SummaryCompaction.
	Kind string
}

// Summarizer turns text into a shorter summary. Implementations return an
// error wrapping ErrSummarizerFailed when they produce nothing usable; the
// caller then escalates (aggressive, then deterministic truncation).
type Summarizer interface {
	// Name identifies the summarizer ("extractive", "openai:<model>", ...).
	Name() string
	Summarize(ctx context.Context, req SummarizeRequest) (string, error)
}
