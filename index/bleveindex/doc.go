// Package bleveindex is the recall index of the Badger backend: a Bleve
// (scorch) full-text index of every message and summary, in a directory
// beside the Badger store, rebuildable from it. *Index implements the
// recall contract of package index (index.Recall): its Retriever is
// Bleve's postings, and index.RankRecall ranks its candidates as it ranks
// every backend's. Its analyzer is index.Analyze, registered with Bleve
// under index.AnalyzerChat (analysis.go).
//
// It is to package index what store/badgerstore is to package store: one
// implementation of a contract that lives apart from it, so that a backend
// with its own search (store/pgstore) links no Bleve.
//
// # Source of truth
//
// The index is derived data kept beside the Badger store. Open detects an
// index that is missing, stale (its recorded generation differs from the
// store's, see Options.Generation and SetGeneration), incomplete (a rebuild
// that did not finish) or corrupt, replaces it with an empty one and reports
// NeedsRebuild; the engine then calls Rebuild with the store as source,
// which reports progress and ends with a force merge (Compact). The
// generation is written in the same Bleve batch as the docs added before
// SetGeneration (or with them, AddGeneration), so a crash never leaves a
// generation that claims docs the index lacks. An index written by a newer
// FormatVersion is refused.
//
// # Rebuilding aside
//
// Rebuild builds the new index in a second directory while the old one
// keeps serving searches (with what it holds) and indexing added docs,
// which go to both; the new one is swapped in under a short lock at the
// end. Searches never wait for a rebuild. Each rebuild batch is saved with
// the position of its last doc in the source: a rebuild stopped by Close
// (or a crash, if the store gained nothing the new index lacks) resumes
// from there at the next Open instead of starting over.
//
// # Indexing off the ingest path
//
// Add enqueues and returns; a background goroutine indexes in batches
// (Options.BatchSize). Lag reports how many docs are not yet searchable,
// Flush waits for them, Query.WaitForLag makes a search wait, and Add
// blocks only when more than Options.MaxLag docs or Options.MaxLagBytes of
// text are pending.
//
// # Time filters
//
// A doc's timestamp is indexed as four bucket terms (timeterms.go); a
// time-filtered search matches the buckets overlapping the range and keeps
// the hits whose exact timestamp is in it.
//
// # Scoring
//
// Text and context terms are scored by the index's own BM25 term query
// (bm25.go, Options.BM25B); the context field, the previous turn of the
// session, is searched for the prompt's rarest terms at
// index.ContextBoost. Term pruning (index.PruneTerms) reads document
// frequencies from a cache (dfCache) refreshed as the index grows.
package bleveindex
