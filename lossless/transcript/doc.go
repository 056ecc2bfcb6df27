// Package transcript brings session transcripts into the lossless engine's
// store and writes them out again: the streaming import of an OpenClaw
// session JSONL file (import.go, pipeline.go: a checkpoint per file,
// resumed when the file was only appended to, re-read when it was
// rewritten), the reconciliation of a rewritten file with the messages
// already stored (reconcile.go), the read of a transcript the host keeps
// itself, through the host, with its entry map (host.go), and the
// successor file of a transcript rotation (rotate.go).
//
// It never imports package lossless nor another part of the engine, and
// never calls back into it: it takes concrete values — the store
// (store.Store), the store's free-space guard (*diskspace.Guard, nil for
// none), the agent, the conversation's id, the host's transcript reader,
// the pipeline's Options — and hands back what the engine must do itself.
// The engine's doors (lossless/import.go, host.go, rotate.go) drive it and
// do what needs the engine's state:
//
//   - a file's import (Import): the door takes the file's import lock
//     (ImportPath: its key), Opens the import, resolves the session it
//     names (SessionID: the caller's, the checkpoint's, the header's or
//     the file's name) through the engine's resolution cache, Begins the
//     read into that conversation (reading its NextSeq under the
//     conversation's lock when a rewritten file must be reconciled:
//     BeginReconcile), then for each Chunk that Next returns validates its
//     messages (Reject), prepares and stores the valid ones through the
//     write path (lossless/ingest, which feeds the recall index), hands
//     their sequence numbers to Stored (which writes the entry maps),
//     applies a compaction entry (PlanCompaction, then the conversation's
//     Replace, which updates recall) and moves the Checkpoint; a rewritten
//     file is then reconciled under the conversation's lock (Reconcile)
//     and its compaction entries applied (Deferred) before Result;
//   - a host-kept transcript's sync (HostSync): the door takes the
//     transcript's import lock (HostLockKey), resolves the conversation
//     (HostHasMessages and FirstPage for a session not stored yet), then
//     for each HostPage validates (Skip), prepares and stores the messages
//     and hands their sequence numbers and keys to Stored, which maps the
//     entries and moves the cursor; BootstrapReason words the result;
//   - WriteSuccessor, DropHostMap and HostEntries take no engine at all.
//
// The engine's exported API (Engine.Import, Engine.Bootstrap,
// Engine.Rotate, WithImportProgress) is unchanged.
package transcript
