-- Postings for the recall index (recall_sql.go): one row per term of a
-- doc's field, so that a recall reads only the postings of the prompt's
-- terms, in one index range per term, and sums BM25 from them, instead of
-- reading the tsvectors of every matching doc. The tsvectors stay (the
-- terms a few top hits hold, deletions); their GIN indexes go.

-- A term's number, a doc's number: the postings' keys.
ALTER TABLE recall_terms ADD COLUMN tid integer GENERATED ALWAYS AS IDENTITY;
ALTER TABLE recall_terms ADD CONSTRAINT recall_terms_tid UNIQUE (tid);
ALTER TABLE recall_docs ADD COLUMN key bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE recall_docs ADD CONSTRAINT recall_docs_key UNIQUE (key);

-- field: 0 text, 1 context. tf: the term's frequency in the field; len:
-- the field's length (recall_docs.text_len or ctx_len), ts and agent the
-- doc's: copied here so that a recall scores and filters (agent, time)
-- from the postings' index alone. An agent's postings of a term are one
-- range of the key.
CREATE TABLE recall_postings (
	doc   bigint NOT NULL,
	ts    bigint NOT NULL,
	tid   integer NOT NULL,
	tf    integer NOT NULL,
	len   integer NOT NULL,
	field smallint NOT NULL,
	agent text COLLATE "C" NOT NULL,
	PRIMARY KEY (tid, field, agent, doc) INCLUDE (tf, len, ts)
);

-- Docs written before this step: their postings from their tsvectors (a
-- frequency there is capped at 256 positions; new docs keep the exact
-- one).
INSERT INTO recall_postings (doc, ts, tid, tf, len, field, agent)
SELECT d.key, d.ts, t.tid, cardinality(u.positions), d.text_len, 0, d.agent
FROM recall_docs d CROSS JOIN LATERAL unnest(d.text_tsv) u JOIN recall_terms t ON t.term = u.lexeme;
INSERT INTO recall_postings (doc, ts, tid, tf, len, field, agent)
SELECT d.key, d.ts, t.tid, cardinality(u.positions), d.ctx_len, 1, d.agent
FROM recall_docs d CROSS JOIN LATERAL unnest(d.ctx_tsv) u JOIN recall_terms t ON t.term = u.lexeme;

DROP INDEX recall_docs_text_tsv;
DROP INDEX recall_docs_ctx_tsv;
