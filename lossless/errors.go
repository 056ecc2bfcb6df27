package lossless

import (
	"errors"

	"github.com/lossless-engine/contextengine/lossless/internal/ingest"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
)

// The errors of package lossless, for errors.Is (several wrap a
// store package sentinel: store.ErrCorrupt, store.ErrDiskFull).

// ErrBadParams is wrapped by the errors of lifecycle calls whose parameters
// cannot be used (an empty advancement key, an unknown context mode or end
// reason, ...).
var ErrBadParams = records.ErrBadParams

// ErrBadToolArgs is wrapped by the errors of tool handlers given arguments
// they cannot use.
var ErrBadToolArgs = tools.ErrBadArgs

// ErrNotSessionFile is wrapped by the error of an import of a path that is
// not a regular file (a directory, a device such as /dev/zero, a pipe). It
// is lossless/transcript's.
var ErrNotSessionFile = transcript.ErrNotSessionFile

// ErrConcurrentWrite: on a shared store, a conversation changed between the
// read of its record under its lock and the write based on it — a write of
// another process that committed after its lock was released (its process
// killed or its connection cut while its commit was in flight). The write
// is refused, nothing of it stored; retrying it reads the record again.
// It is lossless/internal/ingest's, whose writes run again on it.
var ErrConcurrentWrite = ingest.ErrConcurrentWrite

// ErrKeyReused is wrapped by the error of a CommitTurn whose advancement key
// is already recorded for a turn that lacks one of its messages: answering
// "duplicate" would drop them, so the commit is refused and nothing of it
// stored. It is lossless/internal/ingest's.
var ErrKeyReused = ingest.ErrKeyReused

// ErrRetiring is wrapped by the error of a read of, or a write to, a
// conversation that an interrupted retention pass left partly deleted; the
// next pass (lossless retain, or the engine's periodic one) finishes
// deleting it.
var ErrRetiring = records.ErrRetiring

// ErrCorrupt is wrapped by errors that find the store damaged: a missing
// range of messages, a record that does not decode. What could be read is
// never returned as if it were all. It is the store's store.ErrCorrupt, so
// that a record the store cannot decode is ErrCorrupt as well.
var ErrCorrupt = store.ErrCorrupt

// ErrNoFormat is wrapped by the error of an open for writing of a store
// whose format record is missing or does not decode while the store holds
// other records (store.Reader.HasData): the store is damaged, not new.
// Writing a new format record would make it look empty and healthy (its
// records read as those of an older format, or not at all), so the engine
// refuses it and names `lossless doctor`, which reads the store and says
// what it finds. Only a store holding no record at all (a new directory or
// database, or one whose first open stopped before its first transaction)
// is made a new store. Nothing is written.
var ErrNoFormat = errors.New("lossless: the store's format record is missing or unreadable")

// ErrDiskFull is wrapped by the error of a write refused because the
// store's filesystem has less free space than the engine keeps in reserve.
// Nothing is written; what is stored stays readable, and writes succeed
// again once space is freed. It is the store's error (store.ErrDiskFull).
//
// Badger writes its memtables and value log through memory maps: a write
// into a mapped page of a full filesystem is a SIGBUS that kills the
// process, not an error. So the engine looks before it writes: a write
// needs at least the space Badger may map for the next memtable and value
// log file (diskspace.Reserve). The store (badgerstore) guards its writes
// with the same guard (package internal/diskspace); the engine's stays in
// front of it, and looks before Open maps anything.
var ErrDiskFull = store.ErrDiskFull
