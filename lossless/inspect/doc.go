// Package inspect is the engine's read-only inspection of its store: the
// list of stored conversations (Sessions, Describe), a conversation's
// messages in order with the check of their continuity (Messages), the
// store's totals (Stats) and the doctor's check of the store's invariants
// (Check). Nothing here writes.
//
// It never imports package lossless: it reads through a Port, which
// lossless implements over its *Engine (inspectPort in
// lossless/port_inspect.go); the engine keeps the exported doors
// (Engine.Sessions, Engine.Messages, Engine.Stats, Engine.Check) and the
// types under their old names, as aliases.
package inspect
