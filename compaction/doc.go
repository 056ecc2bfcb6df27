// Package compaction is the built-in summary compaction: the runtime's own
// compaction that the legacy engine delegates to, usable by any engine that
// does not own compaction.
//
// # What Compact does
//
// Compact works on an OpenClaw session transcript (JSONL), read with
// core.ReadTranscript. The model-visible window (core.Transcript.Window: the
// last compaction's summary, then the kept entries) is counted with the
// configured token counter, and compaction runs when
//
//	context tokens > window − reserve
//
// or when the call is forced (/compact, overflow recovery). The window is the
// call's tokenBudget (else runtimeContext.tokenBudget, the runtime settings'
// prompt budget, Options.ContextWindow); the reserve is
// Options.ReserveTokens (16384) raised to at least 20000 and lowered to at
// most a quarter of the window (EffectiveReserve).
//
// Walking back from the end, the most recent KeepRecentTokens (20000) are
// kept verbatim. The cut never lands on a toolResult (FindCut). When it falls
// inside a turn, the turn's prefix (from its user message to the cut) is
// summarised separately and written under "Turn Context (split turn)".
//
// The rest is summarised with the configured core.Summarizer. A previous
// compaction's summary is passed as SummarizeRequest.PreviousSummary and its
// sections are carried over, so it is updated, not re-summarised. Input
// larger than the summarizer's window is split at tool-call boundaries (a
// call is never parted from its results; Chunk), summarised chunk by chunk
// and merged; a message larger than half the window is replaced in the
// summarizer's input by a one-line marker (OversizeMarker). Failed calls
// escalate: an aggressive retry, then deterministic truncation.
//
// # The summary
//
// The summary always has the same sections: Goal, Constraints & Preferences,
// Progress (Done, In Progress, Blocked), Key Decisions, Next Steps, Critical
// Context, then <read-files> and <modified-files> blocks built from the tool
// calls (read/edit/write tool names and their path arguments). Opaque
// identifiers of the summarised messages (UUIDs, URLs, paths and file names,
// hashes, IPs, host names and host:port; Identifiers, over package ident) that the text does not already
// contain are listed verbatim in Critical Context. The /compact focus text
// (customInstructions) is passed to the summarizer as Focus and written in
// the Goal section as additional focus. The summary is capped at
// MaxSummaryChars (16000): least valuable lines are dropped first.
//
// # What is written
//
// One compaction entry (Entry) is appended with core.AppendTranscript;
// earlier lines are never rewritten. Its firstKeptEntryId names the first
// kept entry. Old files without entry ids get no firstKeptEntryId in the file
// (core's Window matches ids only) but firstKeptEntryIndex, the kept entry's
// 0-based index among the non-empty lines (header = 0), and a null parentId
// (such files are linear); the result's FirstKeptEntryID is then the entry's
// key "#<index>" (core.Entry.Key). The same figures come back in the
// core.CompactResult, with Details as JSON, including the identifier
// retention. Compacted is true only when tokens went down; the entry is not
// written otherwise.
package compaction
