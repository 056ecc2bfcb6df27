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
// # Analysis
//
// Text goes through AnalyzerChat: Unicode word segmentation, whole
// identifiers (paths, URLs, UUIDs) and their parts (snake_case, camelCase,
// dotted names), CJK width folding and bigrams, lower case, English
// possessives and stop words, Porter stemming.
//
// # Ranking
//
// BM25 (b = 0.3: chat turns vary in length without being less relevant).
// Each doc also indexes the previous turn of its session in a context field
// weighted 0.5, so an answer is found by the question before it (searched
// for the 5 rarest query terms, and in a large index only for terms in at
// most 2,000 docs). A prompt is never parsed as query syntax: its analyzed
// terms are OR-ed, cut to the 10 rarest, terms in more than 5% of the docs
// are dropped (while three remain), and the terms kept walk at most 12,000
// postings in all (a prompt of very common words only recalls nothing).
// Recall fetches max(2k, 30) candidates (loading one stored field each)
// and adds, for the 10 best hits, the turns up to two either side at 0.7 of
// the hit's score per step (fetched only when that score can rank in the
// top k); multiplies by 2 the score of
// turns within a date the prompt names ("on 3 June, 2023", "in July
// 2023"); and collapses near-identical texts. On the LoCoMo dev set
// (internal/locomo) this gives recall@5/10/25/50 of about 68/77/85/89.
//
// # Recall
//
// Recall is the retrieval half of assemble's recall: the prompt is the
// query, the agent's other sessions and the compacted part of the current
// one are searched, what is already in context is left out (by position
// in the current session, by id, and by text: RecallQuery.ExcludeTexts).
// A search or recall never crosses agents unless AllAgents is set.
//
// The ranking is shared: a Retriever supplies scored candidates, the
// relevance of hits (ComputeRelevance over a RelevanceSource) and the
// docs at given positions, and RankRecall does the date boost,
// exclusions, gate, neighbours and de-duplication. *Index's retriever is
// Bleve; package pgstore's Recall is PostgreSQL with the same analyzer
// (QueryTerms, DocTerms) and the same BM25, and ranks identically.
//
// # Relevance gate
//
// BM25 ranks something for any prompt. Recall measures each hit's
// Relevance: the IDF mass of the prompt terms it holds, over the geometric
// mean of the prompt's IDF mass (its 10 rarest terms; a term the agent's
// history lacks counts as a term in one doc) and the IDF of a term in one
// doc. With RecallQuery.MinRelevance, a prompt whose best hit is below the
// threshold recalls nothing, other hits need half of it, and only hits at
// the threshold bring neighbours. On LoCoMo (locomo-dev3.json, the
// engine's threshold 0.65, tuned on conv-26) it keeps injected recall@8
// within about 3 points of the ungated ranking's while under 10% of
// unrelated prompts get a block (see lossless-bench --suite recall).
//
// # Caveats
//
// Bleve keeps BM25's b in a package variable; the index never sets it: its
// text and context terms are scored by its own BM25 term query (bm25.go)
// with Options.BM25B, so other Bleve indexes in the process keep Bleve's
// default. Text is not stored unless Options.StoreText: hits
// carry ids, fields and scores, and the caller reads texts from its store.
package index
