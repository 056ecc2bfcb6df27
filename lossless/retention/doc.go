// Package retention is the engine's retention: which stored conversations
// a pass deletes (by the age of their last message, by an agent's stored
// bytes, orphans no session maps to any more, and those a stopped pass
// began to delete), their deletion from the store in the order that lets
// an interrupted pass be finished by the next, and the open engine's
// periodic pass.
//
// It never imports package lossless: it takes a Port, which lossless
// implements over its *Engine (retentionPort in
// lossless/port_retention.go), giving the engine's locks, its write path
// into the store and its caches. Package lossless keeps the doors
// (Engine.Retain, RetainDryRun) and the loop's start and stop in Open and
// Close.
//
// A deletion marks the conversation's record Retiring first (readers and
// writers then refuse it with lossless.ErrRetiring), removes its recall
// index docs, then its data and subagent links, then its session names,
// import checkpoints and the record last, so that a crash at any point
// leaves a Retiring record the next pass finds and finishes.
package retention
