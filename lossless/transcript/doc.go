// Package transcript brings session transcripts into the lossless engine's
// store and writes them out again: the streaming import of an OpenClaw
// session JSONL file (import.go, pipeline.go: a checkpoint per file,
// resumed when the file was only appended to, re-read when it was
// rewritten), the reconciliation of a rewritten file with the messages
// already stored (reconcile.go), the read of a transcript the host keeps
// itself, through the host, with its entry map (host.go), and the
// successor file of a transcript rotation (rotate.go).
//
// It holds the logic only: what it needs from the engine (conversations,
// their locks, preparing and storing messages, the store behind the
// engine's free-space guard) comes through the narrow Port interface that
// package lossless implements over its *Engine. The engine's exported API
// (Engine.Import, Engine.Bootstrap, Engine.Rotate, WithImportProgress) is
// unchanged; package lossless calls into this one.
package transcript
