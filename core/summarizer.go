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
	// Refused, when set, says why the summarizer's previous answer to this
	// request was refused (empty, a canned reply, not shorter than the
	// input, the input's identifiers lost): a model is asked again with a
	// stricter prompt that says so. A Guard sets it for its one retry.
	Refused string
}

// SummarizeReport is what a summarizer tells its caller about one answer
// besides its text: a Guard (package summarize) fills it when it refused
// the model's summaries and its fallback wrote the answer. The caller
// passes one per call in the call's context (WithSummarizeReport); the
// compactor stores the summary as such (dag.MethodRefused).
type SummarizeReport struct {
	// Refused says why the model's last answer was refused; empty when
	// the model's summary was taken.
	Refused string
	// By names the summarizer that wrote the answer when it is not the
	// one called (the fallback's Name).
	By string
}

type summarizeReportKey struct{}

// WithSummarizeReport returns ctx carrying r, for the summarizer called
// with it to fill.
func WithSummarizeReport(ctx context.Context, r *SummarizeReport) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, summarizeReportKey{}, r)
}

// SummarizeReportFrom returns the report ctx carries, or nil.
func SummarizeReportFrom(ctx context.Context) *SummarizeReport {
	r, _ := ctx.Value(summarizeReportKey{}).(*SummarizeReport)
	return r
}

// Summarizer turns text into a shorter summary. Implementations return an
// error wrapping ErrSummarizerFailed when they produce nothing usable; the
// caller then escalates (aggressive, then deterministic truncation).
type Summarizer interface {
	// Name identifies the summarizer ("extractive", "openai:<model>", ...).
	Name() string
	Summarize(ctx context.Context, req SummarizeRequest) (string, error)
}
