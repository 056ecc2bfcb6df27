// Package lossless is the lossless context engine: every message stored
// verbatim in Badger, an active context of raw messages and summaries with
// sparse positions, and an Assemble whose cost is proportional to the token
// budget, not to the history.
//
// # Using it
//
// Import the package for its side effect (it registers "lossless" with the
// root package's registry, database/sql style) and select it with
// plugins.slots.contextEngine: "lossless"; its configuration is
// plugins.entries.lossless.config (Config, with DefaultConfig's defaults).
// Or call Open directly. *Engine implements core.Engine and every optional
// interface of the contract: core.Bootstrapper, core.Maintainer,
// core.BatchIngester, core.AfterTurner, core.TurnCommitter,
// core.SubagentSpawner, core.SubagentEndListener and io.Closer; plus Import,
// Sessions, Messages, Stats, Conversation, Grep, DescribeSummary,
// ExpandSummary, Tools (lcm_grep, lcm_describe, lcm_expand), Recall, Rotate
// and Retain for tools, the CLI and the benchmark.
//
// # Store layout
//
// One Badger database; keys start with a one-byte prefix, integers are
// 8-byte big-endian so that keys sort in numeric order:
//
//	0x00 "format"                     -> {format, engine, tokenizer}   format record
//	'N' agent 0x00 "k:"sessionKey     -> conv(8)                        conversation by session key
//	'N' agent 0x00 "s:"sessionId      -> conv(8)                        session id -> conversation map
//	'C' conv(8)                       -> conversation record (JSON): agent, key,
//	                                     session ids, nextSeq, nextPos, counters
//	'M' conv seq(8)                   -> message: flags, tokens, timestamp, role,
//	                                     key, then the raw JSON byte for byte
//	                                     (zstd-compressed from 256 bytes when
//	                                     that saves an eighth; record byte 2)
//	'H' conv key(16)                  -> seq(8)                         message key index (dedup)
//	'I' conv pos(8)                   -> context item: ref (message seq or
//	                                     summary id), tokens, depth, timestamp, role, flags
//	'L' conv seq(8)                   -> the reference message standing for large content
//	'S' conv summaryId                -> summary (dag.Summary JSON)
//	'E' conv fileTag(8) 'x' index(8)  -> seq(8)   transcript entry index -> message
//	'E' conv fileTag(8) 'i' entryId   -> index(8) transcript entry id -> index
//	'E' conv fileTag(8) 'o' index(8)  -> seq(8)   the previous read's map of a rewritten
//	                                     file, kept until its reconciliation ends
//	'O' conv seq(8)                   -> pos(8)   order position of a message a
//	                                     reconciliation moved (reconcile.go)
//	'F' agent 0x00 path               -> import checkpoint (JSON)
//	'T' conv advancementKey           -> committed turn (commitTurn idempotency)
//	'G' sub                           -> subagent record (mode, parent, TTL, state)
//	'g' agent 0x00 sessionId          -> sub                            child session id -> subagent
//	'Y' sub pos(8)                    -> fork snapshot: the parent's item records
//	                                     (references, not message copies)
//	'K' parentConv sub                -> link from an ended child to its parent
//
// The recall index (Bleve, package index) lives in <storeDir>/index; it is
// derived data, rebuilt from the store when missing, stale or corrupt.
//
// Agents own conversations. A conversation is keyed by its sessionKey when
// there is one, else by its first session id; every session id it has had
// maps to it, so it survives session-id changes. Messages are numbered by a
// per-conversation sequence. Context items sit at sparse positions (a step
// of 65536 between appends): replacing a range by a summary writes the
// summary's item at the range's first position and deletes the rest, so
// nothing is ever renumbered. Summaries link to their sources (messages or
// summaries) by reference; nothing is deleted by compaction.
//
// A message's key is the first 16 bytes of SHA-256 over its compacted JSON:
// the same message delivered again (replay, restart, a transcript re-read,
// afterTurn's whole-session view) is the same message and is stored once.
// Two byte-identical messages in one conversation are therefore one
// message; real messages carry millisecond timestamps, which makes this
// rare.
//
// # Durability
//
// Every write is a Badger transaction holding whole messages (message, key
// index, context item) and the conversation record, so a crash leaves each
// message fully stored or absent. By default Badger's write-ahead log is
// written without fsync: a process crash (kill -9) loses no acknowledged
// message (TestCrash). Config.SyncWrites fsyncs every commit and survives
// power loss. A PostgreSQL store (Config.StoreURL) commits durably by
// default: a crash of the database server loses nothing acknowledged
// (lossless/postgres's TestServerCrash); Config.AsyncCommit opts into
// asynchronous commits, which may lose the server's last commits on its
// crash. Badger opens with small memtables and caches (about 14 MB of
// heap; Config.Badger overrides), without block compression (message bodies
// are compressed in their records; see store/badgerstore), and its log is
// routed to slog at warning level.
//
// # Versions
//
// The format version and the engine name are stored. A store written by a
// newer format is refused with an error wrapping core.ErrFormatTooNew, one of
// another engine is refused, an older format is migrated on open.
//
// # Errors
//
// Errors are prefixed "lossless: " and wrap the core sentinels:
// core.ErrClosed after Close, core.ErrEmptySessionID, core.ErrInvalidSessionID
// (a session id, session key or agent id with a NUL byte or invalid UTF-8,
// refused on both backends before anything is written), core.ErrInvalidMessage,
// core.ErrTooLarge (over Config.MaxMessageBytes), core.ErrUnknownSession,
// core.ErrFormatTooNew; dag.ErrConflict and dag.ErrNotFound from the
// dag.Store methods. A refused message or batch stores nothing. Messages of
// roles outside the contract are accepted and stored verbatim.
package lossless
