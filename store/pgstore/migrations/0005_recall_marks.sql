-- How far each conversation's messages are indexed (recall_marks.go):
-- every message of the conversation through seq `through` has its doc
-- written, or has none (a heartbeat). A write of docs moves the mark in
-- its own transaction when it follows on from it; an engine opening the
-- database, or finding a gap, indexes what lies past it (the docs a
-- process queued and never wrote: it was killed).
CREATE TABLE recall_marks (
	conversation text PRIMARY KEY,
	through      bigint NOT NULL
);

-- Conversations indexed before this step: through their last message's
-- doc (a conversation without one is indexed from its start).
INSERT INTO recall_marks (conversation, through)
SELECT conversation, max(seq) FROM recall_docs
WHERE kind = 'message' AND conversation <> ''
GROUP BY conversation;
