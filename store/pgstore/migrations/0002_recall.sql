-- The recall index (recall.go): every message and summary of every agent,
-- searchable by the engine's own analyzer. text_tsv and ctx_tsv hold the
-- terms of the text and of its context (the previous turn) as package
-- index analyzes them (AnalyzerChat, written by the engine, not by a text
-- search configuration), each term with as many positions as occurrences
-- (its frequency), labelled A (text) or B (context).
CREATE TABLE recall_docs (
	id           text PRIMARY KEY,
	agent        text NOT NULL,
	conversation text NOT NULL DEFAULT '',
	session      text NOT NULL,
	role         text NOT NULL DEFAULT '',
	kind         text NOT NULL DEFAULT 'message',
	seq          bigint NOT NULL,
	ts           bigint NOT NULL,
	text         text NOT NULL,
	context      text NOT NULL DEFAULT '',
	text_key     bigint NOT NULL,  -- index.TextKey(text), for de-duplication
	text_len     integer NOT NULL, -- analyzed tokens of text (BM25's field length)
	ctx_len      integer NOT NULL, -- analyzed tokens of context
	text_tsv     tsvector NOT NULL,
	ctx_tsv      tsvector NOT NULL
);
CREATE INDEX recall_docs_text_tsv ON recall_docs USING gin (text_tsv);
CREATE INDEX recall_docs_ctx_tsv ON recall_docs USING gin (ctx_tsv);
CREATE INDEX recall_docs_agent_ts ON recall_docs (agent, ts);
CREATE INDEX recall_docs_conversation ON recall_docs (conversation);
CREATE INDEX recall_docs_session_seq ON recall_docs (session, seq);

-- Document frequencies (BM25's IDF, term pruning, the relevance gate):
-- df counts docs holding the term in text, ctx_df in context.
CREATE TABLE recall_terms (
	term   text PRIMARY KEY,
	df     bigint NOT NULL DEFAULT 0,
	ctx_df bigint NOT NULL DEFAULT 0
);

-- One row: the totals BM25 needs, and the analyzer's version. Every write
-- locks this row first, so writers of several processes take their turns
-- (and never deadlock on recall_terms rows).
CREATE TABLE recall_stats (
	id          integer PRIMARY KEY CHECK (id = 1),
	docs        bigint NOT NULL DEFAULT 0,
	text_terms  bigint NOT NULL DEFAULT 0, -- terms with df > 0
	ctx_terms   bigint NOT NULL DEFAULT 0, -- terms with ctx_df > 0
	analyzer    integer                    -- index.FormatVersion of the terms stored (NULL: none yet)
);
INSERT INTO recall_stats (id) VALUES (1);
