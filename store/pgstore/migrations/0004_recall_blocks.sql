-- Postings in blocks (recall_write.go, recall_sql.go): one row per term,
-- field and agent for each write of docs (a recall batch: up to 500 docs),
-- holding that write's postings of the term as parallel arrays, instead of
-- one row per posting. A batch of short chat messages wrote about fifteen
-- posting rows per doc, each a heap tuple and an index entry; a block row
-- carries all of a batch's postings of its term, so a write inserts about
-- as many rows as the batch has distinct terms. A recall reads the blocks
-- of the prompt's terms (one index range per term and agent) and unnests
-- them; the scores are those of the postings.
--
-- docs ascend within a block, and the blocks of a (term, field, agent)
-- hold disjoint ranges of docs (writes of docs take their turns, and doc
-- keys only grow), so the block holding a doc is the one with the greatest
-- first doc at or below it.
CREATE TABLE recall_blocks (
	tid   integer NOT NULL,
	field smallint NOT NULL,            -- 0 text, 1 context
	agent text COLLATE "C" NOT NULL,
	first_doc bigint NOT NULL,          -- docs[1]
	docs  bigint[] NOT NULL,            -- recall_docs.key, ascending
	tf    integer[] NOT NULL,           -- the term's frequency in the field
	len   integer[] NOT NULL,           -- the field's length
	ts    bigint[] NOT NULL,            -- the doc's time
	PRIMARY KEY (tid, field, agent, first_doc)
);

-- The postings written before this step, in blocks of at most 500 docs.
INSERT INTO recall_blocks (tid, field, agent, first_doc, docs, tf, len, ts)
SELECT tid, field, agent, min(doc), array_agg(doc ORDER BY doc), array_agg(tf ORDER BY doc),
	array_agg(len ORDER BY doc), array_agg(ts ORDER BY doc)
FROM (SELECT p.*, (row_number() OVER (PARTITION BY tid, field, agent ORDER BY doc) - 1) / 500 AS part
	FROM recall_postings p) q
GROUP BY tid, field, agent, part;

DROP TABLE recall_postings;

-- Every write of docs updates the document frequencies of their terms:
-- room on each page for the new versions of its rows makes those updates
-- HOT (no new index entries). Pages written from now on keep it.
ALTER TABLE recall_terms SET (fillfactor = 70);

-- No query filters docs by agent and time any more (the blocks carry
-- both): the index only cost every write.
DROP INDEX recall_docs_agent_ts;
