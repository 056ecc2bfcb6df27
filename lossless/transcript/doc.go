// Package transcript brings session transcripts into the lossless engine's
// store and writes them out again: the streaming import of an OpenClaw
// session JSONL file (import.go, pipeline.go: a checkpoint per file,
// resumed when the file was only appended to, re-read when it was
// rewritten), the reconciliation of a rewritten file with the messages
// already stored (reconcile.go), the read of a transcript the host keeps
// itself, through the host, with its entry map (host.go), and the
// successor file of a transcript rotation (rotate.go).
//
// It holds the logic only. The engine's doors (lossless/import.go,
// host.go, rotate.go) do what needs the engine's state — the import lock of
// a file (ImportPath) or of a host-kept transcript (HostLockKey), Bootstrap
// of a host-kept transcript (resolving the conversation, then
// HostHasMessages, FirstPage, SyncHost and BootstrapReason), the free-space
// check before DropHostMap — and call this package with concrete values:
// WriteSuccessor, DropHostMap and HostEntries take no engine at all. The
// streaming import and the host sync still reach the rest of the engine
// (resolving the session named by a file's header, the conversation's
// lock and DAG, preparing and storing messages: the write path of
// lossless/ingest, the store behind the free-space guard) through the Port
// interface, which package lossless implements over its *Engine (#40
// leaves it to convert). The engine's exported API (Engine.Import,
// Engine.Bootstrap, Engine.Rotate, WithImportProgress) is unchanged.
package transcript
