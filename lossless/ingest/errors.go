package ingest

import "errors"

// ErrConcurrentWrite: on a shared store, a conversation changed between the
// read of its record under its lock and the write based on it — a write of
// another process that committed after its lock was released (its process
// killed or its connection cut while its commit was in flight). The write
// is refused, nothing of it stored; retrying it reads the record again.
// It is lossless.ErrConcurrentWrite.
var ErrConcurrentWrite = errors.New("lossless: conversation written by another process meanwhile")
