// Package pgstore is the PostgreSQL backend of package store: a store.Store
// (and a store.Locker) on PostgreSQL 15 or later, through pgx/v5 and a
// connection pool, so that several processes — gateways, the CLI — share
// one store.
//
//	s, err := pgstore.Open(ctx, pgstore.Options{URL: "postgres://lossless@db/lossless"})
//
// Open parses the URL (a bad one is refused, its password redacted in the
// error), connects and pings (an unreachable server is named), then
// migrates the schema (Migrate: the embedded migrations/NNNN_name.sql,
// under an advisory lock) or, read-only, checks it (CheckSchema). A
// database a newer binary migrated is refused with ErrSchemaTooNew.
//
// # Schema
//
// One table per record family (migrations/0001_store.sql), each keyed by
// its natural key with a primary key, so that every scan is an index range
// scan in key order. Ids (ConvID, SubID, FileTag, Hash) are bytea, byte for
// byte (encode(conv, 'hex') is the id the CLI prints); uint64 numbers
// (sequence numbers, positions, entry indexes) are bigint holding the same
// 64 bits, so that every realistic value reads as itself and scans read
// the values from 2^63 up (negative bigints) after the others (u64Ranges);
// string keys are text COLLATE "C", in byte order as the interface sorts
// them. A message is its header in columns (flags, tokens, ts, role, hash)
// and its raw JSON as bytea, byte for byte (PostgreSQL compresses large
// values itself). Context items are columns. Records with many fields
// (conversations, summaries, checkpoints, turns, subagents, meta) are json
// documents of package store's structs: json rather than jsonb, which
// refuses the \u0000 Go may encode. lossless_hashes is the dedup index, one
// message key per conversation.
//
// Rows carry no checksum of their own (badgerstore's records do, from store
// format 3): a value is typed columns or a json document the server parses,
// and on-disk damage is the server's to find, with data page checksums
// (initdb --data-checksums, the default from PostgreSQL 18; SHOW
// data_checksums tells) and the WAL's CRCs; a page whose checksum fails is
// an error of the query, never a silently changed row. A store format 3
// store.Meta.Since in lossless_meta is kept but means nothing here. The
// storetest Corrupt case is not run on this backend.
//
// # Transactions
//
// View runs REPEATABLE READ READ ONLY (one snapshot for all its reads);
// Update runs REPEATABLE READ read-write. Either holds one pooled
// connection and begins with its first statement, in the same round trip.
// An Update queues its writes (copies of what it is given), keeping the
// last write of each key, and sends them as one statement per table
// written (INSERT ... SELECT FROM unnest(arrays) ON CONFLICT DO UPDATE, or
// DELETE ... USING unnest(arrays)), pipelined in one round trip with its
// next read — so it reads its own writes — or with its COMMIT: the
// engine's batched ingest (1,000 messages, their keys and items, the
// conversation record) is one round trip. A deletion by prefix
// (DeleteConversationData, DeleteHostEntries, DeleteForkItems) is queued
// in order among the other writes. An Update commits when its function
// returns nil and its context is live; a failed statement, a
// serialization failure included, fails it, and it is never run again
// (its function may have changed its caller's state): the engine
// serializes the writers of a conversation itself, across processes with
// the Locker.
//
// A Batch queues writes the same way and commits them in parts, each a
// transaction of one round trip, when it holds flushBytes and at Flush: it
// has no size limit, and is not isolated from readers (see store.Batch).
// Its deletions by prefix run at Flush in order with its other writes, so
// they also delete what the batch wrote before them (which the interface
// leaves unspecified).
//
// # Scans
//
// Scans read pages by keyset pagination (each page a query from the last
// key read, 64 rows first, then up to 1,024; 256 for messages with their
// raw bytes), so that a scan of a large conversation holds one page in
// memory, stops reading when its loop breaks, and lets an Update read and
// write between two pages on its one connection. A scan in an Update
// whose own writes change the rows it has yet to read may see them (the
// interface leaves it unspecified).
//
// # Limits and durability
//
// MaxTxnBytes is 8 MiB; an Update fails with store.ErrTooBig when it
// writes more than twice that besides its largest record (so one message
// of any size the engine accepts commits). A commit returns once the
// server made it durable (synchronous_commit on, PostgreSQL's default), so
// Sync has nothing to do, unless Options.AsyncCommit (synchronous_commit
// off, also set by the URL parameter synchronous_commit=off: a client
// crash loses nothing, a server crash the last commits) asks for commits
// that do not wait for the disk; Sync then flushes them. Size is the size
// of the tables of the current schema, indexes and TOAST included.
//
// # Locks
//
// Lock and TryLock (store.Locker) are session advisory locks keyed by
// LockKey(name), each held on a connection of a second pool
// (Options.MaxLockConns) until unlocked: a lock dies with the connection,
// so a process killed while holding one frees it, and Close frees the
// store's.
//
// # Errors
//
// A missing record is store.ErrNotFound (wrapped, its message formatted
// only when printed: most key lookups of an ingest miss); an undecodable
// one store.ErrCorrupt; writes on a read-only store store.ErrReadOnly
// (whose sessions are also opened with default_transaction_read_only);
// every call after Close store.ErrClosed. PostgreSQL's own errors are
// wrapped, naming the operation. The store has no MessageEncoder: it
// ignores store.Message.Encoded.
package pgstore
