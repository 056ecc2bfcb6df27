// Package index is the recall contract of the lossless engine and its
// ranking: what a recall index is (the Recall interface, and Tracker for
// one shared by processes), what goes in and comes out (Doc, Query,
// RecallQuery, Hit), and everything that makes two implementations rank
// alike: the chat analyzer (Analyze, QueryTerms, DocTerms), query-term
// pruning (PruneTerms), BM25's parameters, date spans named in a prompt
// (DateSpans), the relevance gate (ComputeRelevance) and the ranking
// itself (RankRecall over a Retriever).
//
// It imports no search engine. The implementations live apart, as
// store/badgerstore and store/pgstore live apart from package store:
// index/bleveindex, a Bleve index beside a Badger store, and
// store/pgstore's Recall, PostgreSQL's tables beside its store. The name
// stays "index" (rather than "recall") because it is what the engine
// holds and what both backends implement: a full-text index of turns,
// searched for recall.
//
// # Analysis
//
// Text goes through Analyze (AnalyzerChat): Unicode word segmentation, whole
// identifiers (paths, URLs, UUIDs) and their parts (snake_case, camelCase,
// dotted names), CJK width folding and bigrams, lower case, English
// possessives and stop words, Porter stemming.
//
// Analyze imports no Bleve package: it is built on the libraries Bleve's
// analyzers are (github.com/blevesearch/segment, go-porterstemmer), and
// gives, token for token, what the Bleve chain it replaces gave (tested in
// package bleveindex on real chats and by fuzzing), so indexes written
// before it stay valid (FormatVersion unchanged).
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
// exclusions, gate, neighbours and de-duplication. bleveindex.Index's
// retriever is Bleve; package pgstore's Recall is PostgreSQL with the same analyzer
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
package index
