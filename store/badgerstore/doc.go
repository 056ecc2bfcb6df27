// Package badgerstore implements store.Store on Badger, in store format 3
// (records checksummed), reading the format-2 stores package lossless
// wrote before store.Store as they are.
//
// # Using it
//
//	s, err := badgerstore.Open(ctx, badgerstore.Options{Dir: dir})
//	...
//	err = s.Update(ctx, func(tx store.Tx) error { return tx.PutConversation(c, rec) })
//
// Options mirrors lossless.BadgerConfig (Badger's sizes, small by default)
// plus the directory, SyncWrites and ReadOnly; Badger is opened with the
// options package lossless uses (no block compression: see options.go; 1 KiB value
// threshold, no conflict detection, checksums verified on every block read,
// one table size at every level, every value read from the value log
// checked against its entry's checksum), and its log goes to slog at
// warning level.
//
// # Key layout
//
// One Badger database; keys start with a one-byte prefix, integers are
// 8-byte big-endian so that keys sort in numeric order; conv, sub and tag
// are 8 bytes (store.ConvID, store.SubID, store.FileTag), key is 16
// (store.Hash):
//
//	0x00 "format"                     -> Meta (JSON, never checked)    format record
//	'N' agent 0x00 "k:"sessionKey     -> conv                          conversation by session key
//	'N' agent 0x00 "s:"sessionId      -> conv                          conversation by session id
//	'C' conv                          -> Conversation (JSON)
//	'M' conv seq(8)                   -> message record (below)
//	'H' conv key                      -> seq(8)                        message key index (dedup)
//	'I' conv pos(8)                   -> item record (below)           context item
//	'L' conv seq(8)                   -> the reference text standing for large content
//	'S' conv summaryId                -> summary record (below)
//	'E' conv tag 'x' index(8)         -> seq(8)                        entry index -> message
//	'E' conv tag 'o' index(8)         -> seq(8)                        the previous read's map of a
//	                                                                     rewritten file (until reconciled)
//	'E' conv tag 'i' entryId          -> index(8)                      entry id -> index
//	'E' conv tag 'f'                  -> seq(8)                        first seq of an unreconciled read
//	'E' conv hostTag 'h' index(8)     -> seq(8) key entryId            host-kept transcript's entries
//	                                                                     (store.HostEntry; hostTag is
//	                                                                     SHA-256("host-transcript")[:8])
//	'O' conv seq(8)                   -> pos(8)                        order position of a moved message
//	'F' agent 0x00 path               -> FileCheckpoint (JSON)         import checkpoint
//	'F' agent 0x00 "host:" hex(conv)  -> HostCheckpoint (JSON)         host transcript's cursor
//	'T' conv advancementKey           -> Turn (JSON)                   committed turn
//	'G' sub                           -> Subagent (JSON)
//	'g' agent 0x00 sessionId          -> sub                           child session id -> subagent
//	'Y' sub pos(8)                    -> item record                   fork snapshot (the parent's items)
//	'K' parentConv sub                -> the child's session key       link of an ended child
//	                                                                     (store.SubagentLinkRecord)
//
// # Checksums (format 3)
//
// Every value but the format record's and the messages' is a checked
// record (checksum.go):
//
//	3, body, CRC-32C (Castagnoli) over key || 3 || body, 4 bytes big-endian
//
// where body is the format-2 encoding below (for items and summaries,
// without their version byte 1): JSON for the JSON records, 8 bytes for
// the integers and ids (a checked one is 13), the text of a large
// reference or a link, seq(8) key(16) entryId for a host entry. Every read
// verifies it; a mismatch, or a value too short for it, is
// store.ErrCorrupt naming the record (RecordName: its family, conversation
// or subagent, and key). The key is in the checksum, so a value read under
// another key fails too.
//
// A store is not rewritten when it moves to format 3 (a read-only open
// could not, and a large store would take long): a record written before
// has no checksum and is read as it is. It is told apart by its family's
// format-2 encoding: 8 bytes long (integers, ids), a first byte '{'
// (JSON), 1 (items, summaries), 0 (a host entry: the high byte of a
// sequence number) or anything but 3 (large references, links). Such a
// record is accepted only in a store created before format 3: the format
// record's "since" (store.Meta.Since) is absent there and 3 in a store
// created at format 3, where every record has a checksum and one without
// is corruption (a damaged first byte). The answer is read from the format
// record the first time a record without a checksum is met, and kept.
//
// Messages keep their records (below): a compressed body has zstd's frame
// checksum; Badger checks a value-log value against its entry's CRC-32C
// (Options.VerifyValueChecksum) and a table block against its own. A table
// block that fails its checksum is store.ErrCorrupt naming the table file
// and the block ("table 000012.sst: block 3: corrupt: checksum mismatch"),
// for a Get and for a scan whose range reaches it: the patched Badger
// (third_party/badger, PATCHES.md) never reads an older version of the
// key from another table instead, and a compaction over the table fails,
// keeping it. A record written again after the damage reads back.
//
// The JSON records are encoding/json of the store's types, whose fields and
// tags are those of package lossless's records. The binary records (their
// format-2 encoding; in format 3 inside a checked record, except messages):
//
//   - message: 1 (or 2, below), flags, uvarint tokens, varint timestamp,
//     uvarint length and role, key(16), then the raw JSON byte for byte.
//     A body of 256 bytes or more (up to 256 MiB) is stored
//     zstd-compressed (fastest level, one checksummed frame) when that
//     saves at least an eighth, and the record's first byte is then 2.
//     MessageHeader decodes the fields before the body and never touches
//     the body.
//   - item: 1, flags, ref kind (1 message, 2 summary), the ref (uvarint
//     seq, or uvarint length and summary id), uvarint tokens, varint
//     depth, varint timestamp, uvarint length and role.
//   - summary: 1, then dag.Summary's JSON.
//
// compat_test.go pins one record of every family to the bytes package
// lossless wrote for it in format 2 (golden2, still read) and
// compat3_test.go to the bytes this package writes (golden3, checked
// against the layout above by TestGolden3Layout); fixture_test.go reads
// every record of package lossless's fixture store
// (lossless/testdata/store-format2) and writes it back, byte for byte in
// format 3.
//
// A conversation's data is every key under 'M', 'H', 'I', 'L', 'S', 'E',
// 'O' or 'T' followed by its id (DeleteConversationData; its host entries
// are under 'E'); its record, names, checkpoints and subagent links are
// deleted by name.
//
// The host tag is this package's (a constant, package lossless's hostTag):
// the interface's host entries take no tag, and a file's entry maps never
// use the kind byte 'h'.
//
// The recall index is not in this database (package lossless keeps it in
// Options.Dir's "index" subdirectory).
//
// # Transactions and batches
//
// View and Update run Badger transactions; a Tx reads its own writes. A scan
// is an iter.Seq2 over a Badger iterator, closed when the loop ends or
// breaks, checking the call's context every 256 keys. Every value returned
// is the caller's (copied out of Badger, or decompressed). A Reader, Tx or
// Batch is for one goroutine, and for the duration of its View or Update
// function (after it, every call fails with store.ErrClosed).
//
// Update commits when fn returns nil and ctx is not done by then. Badger
// refuses a transaction over 15% of the memtable (about 1.2 MB with the
// defaults), counting a value stored in its value log (over 1 KiB) as a
// pointer; an Update here is held to the same number of bytes counting
// keys and whole values (store.ErrTooBig beyond), and MaxTxnBytes, the
// engine's split size, is half of it. (Package lossless counts a large
// value as 64 bytes: converted, its ingest must split by whole sizes.) Once
// a write of an Update fails (over the limit, or in Badger), its later
// writes and the Update fail with the same error whatever fn returns. A
// batch is a badger.WriteBatch: it commits in parts as it grows, whatever
// their values; Flush commits the rest and waits.
//
// The deletions that scan (DeleteConversationData, DeleteForkItems,
// DeleteHostEntries) read, in an Update, the transaction itself, and in a
// batch a snapshot of what is committed when they are called (not the
// batch's own unflushed writes, which they leave: a key the batch set
// before is deleted only if it was committed too). In an Update a large
// one fails with store.ErrTooBig; the engine makes them in a batch.
//
// # Encoding outside the transaction
//
// Store implements store.MessageEncoder: EncodeMessage returns the message
// record PutMessage would write (encodeMsg, compression included), so that
// the engine compresses a batch of messages on several cores and hands the
// records to PutMessage in store.Message.Encoded. PutMessage stores such a
// record as it is, after checking that its header (flags, tokens,
// timestamp, role, key) is the message's; the body is not decompressed.
//
// # Errors
//
// Errors are prefixed "badgerstore: " and wrap the store sentinels: a
// missing key is store.ErrNotFound; a record that does not decode (a wrong
// length, a bad header, a record or body whose checksum fails, a record
// without a checksum in a store created at format 3, JSON that does not
// parse, a value-log entry whose checksum fails) store.ErrCorrupt, naming
// the record; Badger's ErrTxnTooBig store.ErrTooBig; a write on
// a read-only store store.ErrReadOnly; any call after Close store.ErrClosed.
// Update and NewBatch refuse to write on a filesystem with less free space
// than Badger may map next (store.ErrDiskFull): Badger writes through
// memory maps, and a full disk there is a SIGBUS, not an error. The
// patched Badger and ristretto under third_party allocate a mapped file's
// blocks before a write reaches them (the memtable and value logs 256 KiB
// at a time as they are written, tables whole), so when the disk fills
// between two looks, the write that meets it fails with
// store.ErrDiskFull, whole (space.go).
package badgerstore
