// Package orchestrate decides when a conversation of the lossless engine is
// made smaller, and runs it: a compaction on request (Engine.Compact, with
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
// chooses the moment, the budget and the locks, and calls dag.Compactor.
// Hence a name for that job, not a fourth "compact".
//
// # The engine behind it
//
// The package never imports package lossless: it declares what it needs of
// the engine as Port (the store, the conversation look-up, the locks, the
// assemble budgets, the transcript's import and rotation), which package
// lossless implements over its *Engine (lossless/port_orchestrate.go). C is
// the engine's conversation handle, a dag.Store the compactor runs on.
package orchestrate
