// Package lossless is the lossless context engine: every message stored
// verbatim in a store.Store (Badger on local disk by default, PostgreSQL
// with package lossless/postgres), an active context of raw messages and
// summaries with sparse positions, and an Assemble whose cost is
// proportional to the token budget, not to the history.
//
// It is the engine itself: *Engine with its doors (core.Engine's methods,
// every optional interface of the contract, and the API for tools, the CLI
// and the benchmark), the state it owns (store, recall index, compaction
// state, subagents, retention, token counter, the per-conversation cache),
// the *Conversation handle over the store, the locks, and the doors: one
// file per part whose methods enter the engine, resolve the session, take
// the locks and call the part with concrete values (no part calls back
// into the engine or imports another part). The parts are packages of
// their own, each along the data flow: lossless/config (the Config), lossless/internal/ingest
// (the write path), lossless/transcript (import, reconciliation, the host
// reader, rotation's file), lossless/internal/assemble (Assemble: the call resolved
// once, the window, its rendering), lossless/internal/recall (recall in Assemble and
// the recall index's lifecycle), lossless/orchestrate (when to compact,
// rotate and Maintain), lossless/internal/subagent (the subagent lifecycle and fork
// snapshots), lossless/tools (the agent tools), lossless/retention,
// lossless/inspect (sessions, messages, stats and the store check) and
// lossless/explain (the explorer's explanations); lossless/explore answers
// the explorer's read-only queries through the exported read API. It keeps
// no storage format of its own: records and their encodings belong to
// package store and its backends, summaries and their invariants to
// package dag, the recall index to package index and its implementations,
// token counting to package tokens. docs/ARCHITECTURE.md draws the data
// flow through them.
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
// DescribeMessage, ExpandSummary, Tools (lcm_grep, lcm_describe,
// lcm_expand), Recall, Rotate and Retain for tools, the CLI and the
// benchmark.
//
// # Storage
//
// The engine reads and writes typed records (package store: conversations,
// messages, context items, summaries, transcript-entry maps, checkpoints,
// committed turns, subagents) through the store.Store interface, in
// transactions that hold each invariant whole. The backends own the
// layout: store/badgerstore (its doc lists the Badger key layout, store
// format 3) and store/pgstore (one table per record family). The recall
// index is derived data: index/bleveindex in <storeDir>/index beside a
// Badger store, rebuilt from the store when missing, stale or corrupt;
// PostgreSQL's own full-text tables beside a PostgreSQL store.
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
// Every write is one store transaction holding whole messages (message, key
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
