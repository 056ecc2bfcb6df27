-- The store's records (package store), one table per record family.
--
-- Encodings (see store/pgstore/doc.go):
--   * ids (ConvID, SubID, FileTag, Hash) are bytea, byte for byte: encode(conv, 'hex')
--     is the id the CLI shows, and bytea sorts as the bytes do;
--   * uint64 numbers (sequence numbers, positions, entry indexes) are bigint
--     holding the same 64 bits: every realistic value reads as itself, and
--     scans read the range >= 2^63 (negative here) after the rest;
--   * strings that are keys are text COLLATE "C" (byte order, as the
--     interface sorts them);
--   * records with many fields are json (not jsonb: json keeps any string
--     Go encodes, \u0000 included), decoded as package store's structs;
--   * a message's raw JSON is bytea, byte for byte (PostgreSQL compresses
--     large values itself).

CREATE TABLE lossless_meta (
	id  smallint PRIMARY KEY CHECK (id = 1),
	rec json NOT NULL
);

CREATE TABLE lossless_conversations (
	conv bytea PRIMARY KEY,
	rec  json NOT NULL -- store.Conversation
);

CREATE TABLE lossless_names (
	agent text COLLATE "C" NOT NULL,
	kind  smallint NOT NULL, -- store.NameKind: 107 'k' sessionKey, 115 's' session id
	value text COLLATE "C" NOT NULL,
	conv  bytea NOT NULL,
	PRIMARY KEY (agent, kind, value)
);

CREATE TABLE lossless_messages (
	conv   bytea NOT NULL,
	seq    bigint NOT NULL,
	flags  smallint NOT NULL,
	tokens bigint NOT NULL,
	ts     bigint NOT NULL, -- Unix ms
	role   text NOT NULL,
	hash   bytea NOT NULL,  -- the message key (not unique here: lossless_hashes is the dedup index)
	raw    bytea NOT NULL,  -- the message's JSON as ingested
	PRIMARY KEY (conv, seq)
);

-- The dedup index: one message per (conversation, key).
CREATE TABLE lossless_hashes (
	conv bytea NOT NULL,
	hash bytea NOT NULL,
	seq  bigint NOT NULL,
	PRIMARY KEY (conv, hash)
);

CREATE TABLE lossless_large (
	conv bytea NOT NULL,
	seq  bigint NOT NULL,
	ref  bytea NOT NULL,
	PRIMARY KEY (conv, seq)
);

-- Context items (dag.Item with its flags); ref_kind 1 message (ref_seq), 2 summary (ref_id).
CREATE TABLE lossless_items (
	conv     bytea NOT NULL,
	pos      bigint NOT NULL,
	ref_kind smallint NOT NULL,
	ref_seq  bigint NOT NULL,
	ref_id   text NOT NULL,
	tokens   bigint NOT NULL,
	depth    integer NOT NULL,
	ts       bigint NOT NULL,
	role     text NOT NULL,
	flags    smallint NOT NULL,
	PRIMARY KEY (conv, pos)
);

CREATE TABLE lossless_summaries (
	conv bytea NOT NULL,
	id   text COLLATE "C" NOT NULL,
	rec  json NOT NULL, -- dag.Summary
	PRIMARY KEY (conv, id)
);

-- Entry maps of transcript files: map 120 'x' current, 111 'o' previous.
CREATE TABLE lossless_entries (
	conv bytea NOT NULL,
	tag  bytea NOT NULL,
	map  smallint NOT NULL,
	idx  bigint NOT NULL,
	seq  bigint NOT NULL,
	PRIMARY KEY (conv, tag, map, idx)
);

CREATE TABLE lossless_entry_ids (
	conv     bytea NOT NULL,
	tag      bytea NOT NULL,
	entry_id text COLLATE "C" NOT NULL,
	idx      bigint NOT NULL,
	PRIMARY KEY (conv, tag, entry_id)
);

CREATE TABLE lossless_reconcile (
	conv bytea NOT NULL,
	tag  bytea NOT NULL,
	seq  bigint NOT NULL,
	PRIMARY KEY (conv, tag)
);

CREATE TABLE lossless_host_entries (
	conv     bytea NOT NULL,
	idx      bigint NOT NULL,
	seq      bigint NOT NULL,
	key      bytea NOT NULL,
	entry_id text NOT NULL,
	PRIMARY KEY (conv, idx)
);

CREATE TABLE lossless_orders (
	conv bytea NOT NULL,
	seq  bigint NOT NULL,
	pos  bigint NOT NULL,
	PRIMARY KEY (conv, seq)
);

CREATE TABLE lossless_file_checkpoints (
	agent text COLLATE "C" NOT NULL,
	path  text COLLATE "C" NOT NULL,
	rec   json NOT NULL, -- store.FileCheckpoint
	PRIMARY KEY (agent, path)
);

CREATE TABLE lossless_host_checkpoints (
	agent text COLLATE "C" NOT NULL,
	conv  bytea NOT NULL,
	rec   json NOT NULL, -- store.HostCheckpoint
	PRIMARY KEY (agent, conv)
);

CREATE TABLE lossless_turns (
	conv bytea NOT NULL,
	key  text COLLATE "C" NOT NULL, -- the advancement key
	rec  json NOT NULL,             -- store.Turn
	PRIMARY KEY (conv, key)
);

CREATE TABLE lossless_subagents (
	sub bytea PRIMARY KEY,
	rec json NOT NULL -- store.Subagent
);

CREATE TABLE lossless_subagent_children (
	agent      text COLLATE "C" NOT NULL,
	session_id text COLLATE "C" NOT NULL,
	sub        bytea NOT NULL,
	PRIMARY KEY (agent, session_id)
);

CREATE TABLE lossless_fork_items (
	sub      bytea NOT NULL,
	pos      bigint NOT NULL,
	ref_kind smallint NOT NULL,
	ref_seq  bigint NOT NULL,
	ref_id   text NOT NULL,
	tokens   bigint NOT NULL,
	depth    integer NOT NULL,
	ts       bigint NOT NULL,
	role     text NOT NULL,
	flags    smallint NOT NULL,
	PRIMARY KEY (sub, pos)
);

CREATE TABLE lossless_subagent_links (
	parent    bytea NOT NULL,
	sub       bytea NOT NULL,
	child_key text NOT NULL,
	PRIMARY KEY (parent, sub)
);
