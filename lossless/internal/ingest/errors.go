package ingest

import "errors"

// ErrConcurrentWrite: on a shared store, a conversation changed between the
// read of its record under its lock and the write based on it — a write of
// another process that committed after its lock was released (its process
// killed or its connection cut while its commit was in flight). The write
// is refused, nothing of it stored; retrying it reads the record again.
// It is lossless.ErrConcurrentWrite.
var ErrConcurrentWrite = errors.New("lossless: conversation written by another process meanwhile")

// ErrKeyReused: a turn commit whose advancement key is recorded for a turn
// of other messages (one of the commit's messages is not among them, or
// not stored). Answering "duplicate" would drop the messages that differ;
// the commit is refused instead, nothing of it stored. A retry of a turn
// sends the same messages under its key; another turn takes a new key. It
// is lossless.ErrKeyReused.
var ErrKeyReused = errors.New("lossless: advancement key already committed with other messages")
