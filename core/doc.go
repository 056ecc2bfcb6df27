// Package core is the context-engine contract: the interfaces an engine
// implements, the parameter and result types of every lifecycle call, the
// message and transcript model, token counting and the summarizer interface.
//
// It plays the role database/sql/driver plays for database/sql: engines
// (packages legacy and lossless) implement it, and the root package
// contextengine (the registry, slot resolution, failure isolation and the
// turn driver) calls it. Nothing here does I/O except the transcript reader
// and writer.
//
// # Required and optional interfaces
//
// Every engine implements [Engine]: Info, Ingest, Assemble and Compact.
// An engine may also implement any of these optional interfaces, which the
// host discovers by type assertion:
//
//   - [Bootstrapper]: Bootstrap, when a session is first seen.
//   - [Maintainer]: Maintain, after bootstrap, turns and compaction.
//   - [BatchIngester]: IngestBatch, a whole turn at once.
//   - [AfterTurner]: AfterTurn, after a run, with the whole session view.
//   - [TurnCommitter]: CommitTurn, an atomic, idempotent turn commit.
//   - [SubagentSpawner]: PrepareSubagentSpawn, with an optional rollback.
//   - [SubagentEndListener]: OnSubagentEnded.
//   - io.Closer: Close is the contract's dispose.
//
// Every method takes a context.Context first; its cancellation is the
// contract's abort signal.
//
// # Messages
//
// A [Message] keeps the exact bytes it was decoded from, unknown fields
// included, and exposes typed, read-only accessors. An engine that stores
// Raw() and later returns ParseMessage(raw) gives the model exactly what it
// was given.
//
// # JSON names
//
// Every exported field carries OpenClaw's JSON name, so a params object sent
// by OpenClaw decodes into these types and encodes back to the same object.
package core
