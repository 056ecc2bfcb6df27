// Package ingest is the engine's write path: it validates and prepares
// messages (hashed, counted, a large one given its reference message),
// resolves the conversation a call writes to (created on the first
// message, every session id mapped to it), stores the messages not stored
// yet with their sequence numbers and order positions in whole-message
// transactions (dedup by the message's bytes), commits a turn with its
// advancement key atomically (the committed-turn records), and runs a
// write again when another process's write made it conflict.
//
// It never imports package lossless: what it needs of the engine (the
// store, the free-space guard, the conversation locks and records, the
// token counter and its cache, the resolution cache, the recall index) is
// its Port, which lossless implements over its *Engine (ingestPort in
// lossless/port_ingest.go). The engine keeps the calls' doors (Ingest,
// IngestBatch, AfterTurn, CommitTurn, TurnCommitted: entering the engine,
// the call's agent, the compaction after a turn).
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
