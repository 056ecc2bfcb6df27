// Package orchestrate decides when and how a conversation of the lossless
// engine is made smaller: a compaction on request (Engine.Compact, with
// the transcript's import first and its rotation after), a background
// compaction after a committed turn (one run at a time per conversation, a
// bounded number at once), a compaction in Maintain when the summarizer is
// the host's model, and Maintain's lossless rewrite of the host's
// transcript (old large tool results replaced by references to the stored
// originals). It holds the state of those runs (State) and the engine's
// summarizer.
//
// # Why "orchestrate"
//
// Three parts of this module were called "compact": the built-in summary
// compaction of the legacy engine (package compaction), the DAG compactor
// that condenses a context into summaries (dag.Compactor, dag/compact.go),
// and the engine's wiring of that compactor (this package, formerly
// lossless/compact.go). This package does not compact anything itself: it
// chooses the moment and the budget and runs dag.Compactor (the engine
// takes the locks).
// Hence a name for that job, not a fourth "compact".
//
// # What it takes
//
// The package never imports package lossless, nor another part of it, and
// never calls back into the engine: it takes concrete values. The engine
// (lossless/orchestrate.go, maintain.go, rotate.go) does what needs its
// state — entering itself, resolving the session, importing the
// transcript first, taking the conversation's compaction locks (its own
// and a shared store's), the tests' seams, writing a rotation's successor
// file (lossless/transcript) and mapping its session — and calls this
// package with what it resolved:
//
//   - Run: a *dag.Compactor and the conversation as a dag.Store (the
//     engine's *Conversation, or dag.Memory in tests);
//   - State: the background runs' bookkeeping (Begin, Again, Acquire,
//     Release, Record, Stop) and the summarizer made once from a
//     summarize.Config and a core.TokenCounter;
//   - the decisions: OverThreshold, ShouldRotate, Reserved, KeptTail,
//     Details, WindowTokens;
//   - Maintain's plan over a store.Reader or store.Tx and a value Config:
//     FileCandidates, HostCandidates, Plan (given the references the
//     engine made), HostSuffix, RewriteSuffix, WriteAliases and
//     RewriteOutcome;
//   - ContextSummaryText and HostKept over a store.Store.
package orchestrate
