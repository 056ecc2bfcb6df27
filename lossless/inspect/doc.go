// Package inspect is the engine's read-only inspection of its store: the
// list of stored conversations (Sessions, Describe), a conversation's
// messages in order with the check of their continuity (Messages), the
// store's totals (ReadStats) and the doctor's check of the store's
// invariants (Check). Nothing here writes.
//
// It never imports package lossless and never calls back into the
// engine: each function takes the store.Store it reads (and what it
// reports besides: the conversation, the format version, the recall
// index's directory). Package lossless keeps the exported doors
// (Engine.Sessions, Engine.Messages, Engine.Stats, Engine.Check in
// lossless/inspect.go), which enter the engine and resolve the session,
// and the types under their old names, as aliases.
package inspect
