// Package index is the full-text index of the lossless engine: every message
// and summary of every session, searchable by agent, conversation, session,
// role, kind and time, with analyzers that fit real chats.
//
// # Source of truth
//
// The index is derived data kept beside the Badger store. Open detects an
// index that is missing, stale (its recorded generation differs from the
// store's, see Options.Generation and SetGeneration), incomplete (a rebuild
// that did not finish) or corrupt, replaces it with an empty one and reports
// NeedsRebuild; the engine then calls Rebuild with the store as source.
//
// # Indexing off the ingest path
//
// Add enqueues and returns; a background goroutine indexes in batches
// (Options.BatchSize). Lag reports how many docs are not yet searchable,
// Flush waits for them, and Query.WaitForLag makes a search wait.
//
// # Analysis
//
// Text goes through AnalyzerChat: Unicode word segmentation, whole
// identifiers (paths, URLs, UUIDs) and their parts (snake_case, camelCase,
// dotted names), CJK width folding and bigrams, lower case, English
// possessives and stop words, Porter stemming. Scoring is BM25.
//
// # Recall
//
// Recall is the retrieval half of assemble's recall: the prompt is the
// query, the agent's other sessions and the compacted part of the current
// one are searched, what is already in context is left out, near-identical
// turns are collapsed and neighbours may be added. The LoCoMo benchmark
// (internal/locomo) measures this same function.
package index
