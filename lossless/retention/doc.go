// Package retention is the engine's retention: which stored conversations
// a pass deletes (Plan: by the age of their last message, by an agent's
// stored bytes, orphans no session maps to any more, and those a stopped
// pass began to delete), their deletion from the store in the order that
// lets an interrupted pass be finished by the next (Recheck, DeleteData,
// DeleteRecord), and the periodic pass's schedule (Schedule,
// AnyRetiring).
//
// It never imports package lossless and never calls back into the
// engine: it takes concrete values — a store.Reader to plan from, a
// store.Store and a store.Batch to delete with, the Limits, and the
// reference time (the clock is the caller's). Package lossless keeps the
// doors (Engine.Retain, RetainDryRun in lossless/retention.go), which
// enter the engine, take a conversation's locks and the names lock
// around the steps, remove the recall index's docs, forget the engine's
// caches of a deleted conversation, and run the periodic pass started in
// Open and stopped in Close.
//
// A deletion marks the conversation's record Retiring first (readers and
// writers then refuse it with lossless.ErrRetiring), removes its recall
// index docs, then its data and subagent links, then its session names,
// import checkpoints and the record last, so that a crash at any point
// leaves a Retiring record the next pass finds and finishes.
package retention
