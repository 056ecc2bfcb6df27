// Package transcript brings session transcripts into the lossless engine's
// store: the streaming import of an OpenClaw session JSONL file (a
// checkpoint per file, resumed when the file was only appended to, re-read
// when it was rewritten), the reconciliation of a rewritten file with the
// messages already stored, and the pure parts of rotating a transcript
// into a successor file.
//
// It holds the logic only: what it needs from the engine (conversations,
// their locks, preparing and storing messages, the store behind the
// engine's free-space guard) comes through the narrow Port interface that
// package lossless implements over its *Engine. The engine's exported API
// (Engine.Import, Engine.Bootstrap, Engine.Rotate, WithImportProgress) is
// unchanged; package lossless calls into this one.
package transcript
