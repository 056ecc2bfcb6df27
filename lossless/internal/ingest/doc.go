// Package ingest is the engine's write path: it validates and prepares
// messages (hashed, counted, a large one given its reference message),
// resolves the conversation a call writes to (created on the first
// message, every session id mapped to it), stores the messages not stored
// yet with their sequence numbers and order positions in whole-message
// transactions (dedup by the message's bytes), commits a turn with its
// advancement key atomically (the committed-turn records), and runs a
// write again when another process's write made it conflict.
//
// It never imports package lossless and never calls back into it: its
// functions take concrete values — the store (store.Store, or a store.Tx
// for the steps that run inside the caller's transaction), a
// conversation's id and its record (read under the caller's lock and
// advanced as the writes commit), whether the store is shared by several
// processes, and a Preparer (the token counter, a TokenCache this package
// owns, the large-content threshold). The engine keeps the doors
// (Ingest, IngestBatch, AfterTurn, CommitTurn, TurnCommitted in
// lossless/ingest.go and commit.go): entering the engine, the call's
// agent, its resolution cache, the agent's names lock, the conversation's
// lock, the free-space guard, the recall index fed with what StoreMessages
// and CommitLocked return, the compaction after a turn.
//
// A message is stored in one transaction with its key index, its context
// item and, for large content, its reference message:
//
//	Message(c, seq)        the message record, verbatim (store.Message)
//	SeqByHash(c, hash)     its key: the first 16 bytes of SHA-256 over its
//	                       compacted JSON
//	Item(c, pos)           its context item, at position seq*PosStep
//	Large(c, seq)          the reference message of large content
//	Turn(c, key)           a committed turn's record (store.Turn)
//
// and the conversation record (its next sequence number and position,
// counts) in the same transaction, so a crash leaves a message either
// fully stored or absent.
package ingest
