// Package store is the storage interface of the lossless engine: everything
// the engine persists, as typed records, behind one interface that a backend
// implements: package store/badgerstore on Badger (a local directory, the
// default), package store/pgstore on PostgreSQL (shared by several
// processes), package store/memstore in memory, for tests; package
// store/storetest is the contract suite every backend passes.
//
// # Shape
//
// A Store runs transactions: View reads a consistent snapshot, Update runs a
// read-write transaction that commits atomically or not at all. Every
// multi-record invariant of the engine is written in one Update call — a
// message with its key index, its context item and the conversation record;
// a committed turn's messages with its advancement key; a summary with the
// context items it replaces — so no backend can split it. Batch is the one
// exception: a bulk writer for imports and deletions whose writes become
// durable together at Flush but are not isolated from readers (the engine
// uses it only where a partial batch is harmless or repaired on the next
// run: import chunks are re-read from their checkpoint, retention finishes
// an interrupted deletion).
//
// Records are typed per family (Conversation, Message, Item, dag.Summary,
// FileCheckpoint, Turn, Subagent, …). The engine keeps its logic (dedup,
// positions, compaction, reconciliation, retention decisions); a backend
// keeps bytes and order: keys sort numerically within a family, so that
// Items, Messages and the entry maps scan in order.
//
// # Batched reads
//
// Reader.Get reads records of several kinds and conversations at once
// (conversation records, messages as they stand in a context, summaries,
// subagent records): pgstore answers it in one round trip, the local
// backends with their point reads (GetEach). The engine resolves a
// call's conversation state and renders recalled items with it.
//
// # Errors
//
// A missing record is ErrNotFound (wrapped); a record that does not decode is
// ErrCorrupt; a transaction over the backend's size limit is ErrTooBig (the
// engine splits its writes by MaxTxnBytes, so this means one record is too
// large); writes to a read-only store fail with ErrReadOnly; a write refused
// because the disk is full, before anything is written, is ErrDiskFull
// (from a backend that can tell: one that writes through memory maps must
// look before it writes).
//
// # Size limits and large deletions
//
// An Update's size limit counts whole keys and values as the backend
// stores them (badgerstore fails an Update past 2×MaxTxnBytes with
// ErrTooBig, whatever part of it Badger would keep in its value log). The
// deletions that remove every record under a prefix — DeleteConversationData,
// DeleteForkItems, DeleteHostEntries — have no bound of their own: in an
// Update a large conversation or snapshot hits ErrTooBig, so the engine
// makes large deletions in a Batch, which writes in parts as it grows.
//
// A Batch's deletions by prefix see committed data, not the batch's own
// unflushed writes: they delete the records committed when they are
// called. Whether a record the batch wrote before the deletion survives it
// is unspecified (in badgerstore and memstore it does unless it was
// committed too; a backend that deletes at Flush would delete it), so a
// batch does not write under a prefix it then deletes. In an Update they
// see the transaction's own writes, as every read of a Tx does.
//
// # Optional interfaces
//
// A backend may implement MessageEncoder (badgerstore does): the engine
// then encodes and compresses message records on several cores before the
// Update that stores them (Message.Encoded). Its Reader (and Tx) may
// implement HashBatchReader (pgstore's does): the engine then resolves a
// batch's message keys in one read instead of one read per key; its Tx
// may implement FreshWriter (pgstore's does): the engine then writes new
// messages as such.
//
// The recall index is a second interface, index.Recall, so that a backend
// can bring its own search (Bleve's index in a directory beside the store
// by default).
//
// Unspecified on purpose, and not relied on by the engine: whether a scan
// sees writes its own Update makes after the scan started, the order of
// Checkpoints and SubagentLinks, and whether a Batch's prefix deletion
// removes the batch's own earlier writes. A Batch is used once (Flush or
// Cancel).
package store

import (
	"context"
	"encoding/hex"
	"iter"

	"github.com/lossless-engine/contextengine/dag"
)

// ConvID identifies a conversation: 8 bytes derived from its agent and first
// name (the engine derives it; the store only keys by it).
type ConvID [8]byte

// String returns the id in hex, as the CLI and the tools show it.
func (c ConvID) String() string { return hex.EncodeToString(c[:]) }

// ParseConvID parses the hex form of a ConvID.
func ParseConvID(s string) (ConvID, bool) {
	var c ConvID
	if len(s) != 16 {
		return c, false
	}
	if _, err := hex.Decode(c[:], []byte(s)); err != nil {
		return c, false
	}
	return c, true
}

// Hash is a message's key within its conversation (the first 16 bytes of
// SHA-256 over its compacted JSON): the dedup index maps it to the message.
type Hash [16]byte

// FileTag identifies one transcript file within a conversation (entry maps).
type FileTag [8]byte

// SubID identifies a subagent preparation.
type SubID [8]byte

// NameKind is the kind of a conversation name.
type NameKind byte

// Name kinds: a conversation is found by its sessionKey or by any session id
// it has had.
const (
	NameSessionKey NameKind = 'k'
	NameSessionID  NameKind = 's'
)

// Name is one name of a conversation within an agent.
type Name struct {
	Agent string
	Kind  NameKind
	Value string
}

// Meta is the store's format record.
type Meta struct {
	Format int    `json:"format"`
	Engine string `json:"engine"`
	// Tokenizer is the counter the stored token counts were made with.
	Tokenizer string `json:"tokenizer"`
	// Since is the format the store was created with (0: before format
	// 3, when it was not recorded). A backend that checksums its records
	// from format 3 (badgerstore) reads a record without a checksum as
	// one written before then only in a store created before then.
	Since int `json:"since,omitempty"`
}

// Conversation is a conversation's record.
type Conversation struct {
	Agent string `json:"agent"`
	// Key is the sessionKey the conversation is keyed by ("" when keyed by
	// its first session id).
	Key        string   `json:"key,omitempty"`
	SessionIDs []string `json:"sessionIds"`
	Created    int64    `json:"created"`
	Updated    int64    `json:"updated"`
	// NextSeq is the sequence number of the next message, NextPos the
	// position of the next appended item.
	NextSeq   uint64 `json:"nextSeq"`
	NextPos   uint64 `json:"nextPos"`
	Messages  int64  `json:"messages"`
	Bytes     int64  `json:"bytes"`
	Summaries int64  `json:"summaries"`
	// RefusedSummaries counts the summaries of Summaries that the
	// summarizer's fallback wrote because the model's summary was refused
	// (dag.MethodRefused).
	RefusedSummaries int64 `json:"refusedSummaries,omitempty"`
	// Tokens is the total token count of the stored messages.
	Tokens int64 `json:"tokens"`
	// Retiring is set, before anything is deleted, on a conversation a
	// retention pass is deleting: a pass interrupted midway leaves it partly
	// deleted, which reads report as such rather than as corruption, and the
	// next pass finishes.
	Retiring bool `json:"retiring,omitempty"`
}

// Message flags (Message.Flags; the item flags share the low bits).
const (
	FlagHeartbeat = 1 << 0 // delivered with isHeartbeat
	FlagLarge     = 1 << 1 // represented in the context by a reference (Large)
	FlagHidden    = 1 << 2 // never shown: thinking-only/empty turn, excludeFromContext
	// FlagSuperseded (items only): the transcript no longer holds the
	// message (an edit's old version, a deleted entry); left out of the
	// context until a later read finds it again.
	FlagSuperseded = 1 << 3
)

// Message is a stored message: its header and its raw JSON, byte for byte as
// ingested.
type Message struct {
	Seq       uint64
	Flags     byte
	Tokens    int
	Timestamp int64
	Role      string
	Hash      Hash
	// Raw is the message's JSON exactly as ingested (nil when only the
	// header was read).
	Raw []byte
	// Encoded is the backend's encoding of the record, made by its
	// MessageEncoder outside the transaction; PutMessage stores it as it
	// is when set (nil: encoded at Put). The other fields must still be
	// set, Raw included: a backend without a MessageEncoder ignores
	// Encoded, and one with it may check the header against them. Reads
	// never set it.
	Encoded []byte
}

// MessageEncoder is implemented by a backend (its Store) whose message
// records are worth encoding before the transaction: badgerstore
// compresses bodies, so the engine's ingest encodes a batch of messages on
// several cores and then stores the records in one short Update. It is safe
// for concurrent use.
type MessageEncoder interface {
	// EncodeMessage returns the record PutMessage would store for m,
	// byte for byte (m.Encoded is ignored).
	EncodeMessage(m Message) []byte
}

// HashBatchReader is implemented by a Reader (and Tx) that resolves many
// message keys in one read: pgstore answers them in one query instead of a
// round trip each. The engine's ingest and turn commit resolve their
// batch's keys with it when the store's Reader has it.
type HashBatchReader interface {
	// SeqsByHash resolves the keys hs of conversation c as SeqByHash does
	// one by one: found[i] reports whether hs[i] is stored, seqs[i] is
	// then its sequence number. A key may be given more than once.
	SeqsByHash(c ConvID, hs []Hash) (seqs []uint64, found []bool, err error)
}

// FreshWriter is implemented by a Tx whose backend writes records known
// to be new for less than other puts (pgstore: an INSERT instead of an
// upsert). The engine's ingest and turn commit write each new message, its
// key and its context item through it when the store's Tx has it: their
// keys are the conversation's next sequence number and position and a
// key the transaction found missing.
type FreshWriter interface {
	// PutFreshMessage, PutFreshHash and PutFreshItem write as PutMessage,
	// PutHash and PutItem do a record whose key holds none, in the store
	// or earlier in the transaction. Given a key that does hold one, the
	// backend fails the transaction (its commit stores nothing) or
	// overwrites the record, never anything else.
	PutFreshMessage(c ConvID, m Message) error
	PutFreshHash(c ConvID, h Hash, seq uint64) error
	PutFreshItem(c ConvID, it Item) error
}

// Item is one context item with its flags.
type Item struct {
	dag.Item
	Flags byte
}

// EntryMap names one of a transcript file's entry maps (index -> seq).
type EntryMap byte

// Entry maps of a file.
const (
	// EntriesCurrent maps the entry index of the last read to the message.
	EntriesCurrent EntryMap = 'x'
	// EntriesPrevious is the previous read's map of a rewritten file, kept
	// until its reconciliation ends.
	EntriesPrevious EntryMap = 'o'
)

// HostEntry is one entry of a host-kept transcript (the host keeps the
// transcript; the engine reads it page by page and maps every entry read).
type HostEntry struct {
	// Seq is the stored message the entry holds.
	Seq uint64
	// Key is the key of the entry's own bytes: it differs from the stored
	// message's when the entry holds a reference maintain put there.
	Key Hash
	// EntryID is the host's id of the entry.
	EntryID string
}

// EntryPair is one (index, seq) of an entry map.
type EntryPair struct {
	Index uint64
	Seq   uint64
}

// Pair is one (key, value) of a numeric map (order positions, fork items).
type Pair struct {
	Key, Value uint64
}

// Reader reads a consistent snapshot of the store. Values it returns are the
// caller's (they stay valid after the transaction). A scan stops when the
// loop breaks; a scan error is yielded once, as the last element.
type Reader interface {
	// Meta returns the format record.
	Meta() (Meta, error)
	// HasData reports whether the store holds any record besides its
	// format record. The engine writes the format record in the first
	// transaction of a new store, before anything else: a store without
	// one that holds data is damaged, not new, and the engine refuses to
	// open it for writing (a new format record would make it look empty
	// and healthy).
	HasData() (bool, error)

	// Conversation returns conversation c's record.
	Conversation(c ConvID) (Conversation, error)
	// Conversations scans every conversation record, in id order.
	Conversations() iter.Seq2[ConvRecord, error]
	// ConvByName resolves a name to its conversation.
	ConvByName(n Name) (ConvID, error)
	// Names scans every name, in (agent, kind, value) order.
	Names() iter.Seq2[NameRecord, error]

	// Message returns message seq of c with its raw bytes; MessageHeader
	// without them (no decompression).
	Message(c ConvID, seq uint64) (Message, error)
	MessageHeader(c ConvID, seq uint64) (Message, error)
	// Messages scans c's messages with seq >= from in seq order, with their
	// raw bytes when withRaw.
	Messages(c ConvID, from uint64, withRaw bool) iter.Seq2[Message, error]
	// SeqByHash resolves a message key to its sequence number.
	SeqByHash(c ConvID, h Hash) (uint64, error)
	// Large returns the reference text standing for large message seq.
	Large(c ConvID, seq uint64) ([]byte, error)

	// Item returns the context item at pos.
	Item(c ConvID, pos uint64) (Item, error)
	// Items scans c's context items with from <= pos <= to, in position
	// order, or from the highest down when reverse.
	Items(c ConvID, from, to uint64, reverse bool) iter.Seq2[Item, error]

	// Summary returns summary id of c.
	Summary(c ConvID, id string) (dag.Summary, error)
	// Summaries scans c's summaries in id order.
	Summaries(c ConvID) iter.Seq2[dag.Summary, error]

	// EntrySeq returns the message of entry index of file tag's map m.
	EntrySeq(c ConvID, tag FileTag, m EntryMap, index uint64) (uint64, error)
	// EntryIndex returns the entry index of entry id in file tag.
	EntryIndex(c ConvID, tag FileTag, id string) (uint64, error)
	// Entries scans map m of file tag from index from, in index order.
	Entries(c ConvID, tag FileTag, m EntryMap, from uint64) iter.Seq2[EntryPair, error]
	// ReconcileFrom returns the first sequence number an unreconciled read
	// of file tag may have appended (ErrNotFound when none is pending).
	ReconcileFrom(c ConvID, tag FileTag) (uint64, error)

	// HostEntry returns entry index of c's host-kept transcript.
	HostEntry(c ConvID, index uint64) (HostEntry, error)
	// HostEntries scans c's host-kept transcript's entries from index
	// from, in index (transcript) order.
	HostEntries(c ConvID, from uint64) iter.Seq2[HostEntryRecord, error]

	// Order returns the order position of a message a reconciliation moved;
	// Orders scans them in seq order (Pair{Key: seq, Value: pos}).
	Order(c ConvID, seq uint64) (uint64, error)
	Orders(c ConvID) iter.Seq2[Pair, error]

	// FileCheckpoint returns an imported file's progress.
	FileCheckpoint(agent, path string) (FileCheckpoint, error)
	// HostCheckpoint returns the progress of a host-kept transcript.
	HostCheckpoint(agent string, c ConvID) (HostCheckpoint, error)
	// Checkpoints scans every checkpoint of every agent (file and host).
	Checkpoints() iter.Seq2[CheckpointRecord, error]

	// Turn returns the committed turn of advancement key.
	Turn(c ConvID, key string) (Turn, error)

	// Subagent returns a subagent record; SubagentByChild resolves a child
	// session id; Subagents scans every record in id order.
	Subagent(s SubID) (Subagent, error)
	SubagentByChild(agent, sessionID string) (SubID, error)
	Subagents() iter.Seq2[SubagentRecord, error]
	// ForkItems scans a fork snapshot's items in position order.
	ForkItems(s SubID) iter.Seq2[Item, error]
	// ForkSnapshots scans the ids of every fork snapshot, in id order
	// (orphans included: snapshots whose record is gone).
	ForkSnapshots() iter.Seq2[SubID, error]
	// SubagentLinks scans the ended children linked to parent, each with
	// its session key.
	SubagentLinks(parent ConvID) iter.Seq2[SubagentLinkRecord, error]

	// Get reads the records refs name, of any conversations, in one read
	// (pgstore: one round trip): got[i] is what refs[i] names. A record
	// that does not exist is reported in its Got.Err (wrapping
	// ErrNotFound), one that does not decode likewise (ErrCorrupt); err is
	// a failure of the read itself. A Ref may be given more than once.
	Get(refs []Ref) (got []Got, err error)
}

// RefKind is the kind of record a Ref names.
type RefKind byte

// Record kinds of a batched read (Reader.Get).
const (
	// RefConversation: conversation Conv's record (Got.Conversation).
	RefConversation RefKind = 'c'
	// RefMessage: message Seq of Conv as it stands in a context
	// (Got.Message): its header and its raw bytes, or, when it is
	// FlagLarge and its reference is stored, the reference (Got.Large)
	// and no raw bytes.
	RefMessage RefKind = 'm'
	// RefSummary: summary ID of Conv (Got.Summary).
	RefSummary RefKind = 's'
	// RefSubagent: subagent record Sub (Got.Subagent).
	RefSubagent RefKind = 'a'
	// RefSubagentByChild: the subagent whose child has session id ID in
	// agent Agent (SubagentByChild): its id (Got.Sub, set whenever the
	// child is mapped) and its record (Got.Subagent).
	RefSubagentByChild RefKind = 'b'
)

// Ref names one record of a batched read (Reader.Get); the fields its
// Kind does not use are ignored.
type Ref struct {
	Kind  RefKind
	Conv  ConvID
	Seq   uint64
	ID    string
	Sub   SubID
	Agent string
}

// Got is what a batched read found for one Ref: the field its kind names,
// or Err.
type Got struct {
	Conversation Conversation
	Message      Message
	// Large is a FlagLarge message's reference (RefMessage).
	Large    []byte
	Summary  dag.Summary
	Sub      SubID
	Subagent Subagent
	Err      error
}

// Writer holds the writes of a transaction or a batch. Put replaces.
type Writer interface {
	PutMeta(m Meta) error
	PutConversation(c ConvID, r Conversation) error
	DeleteConversation(c ConvID) error
	PutName(n Name, c ConvID) error
	DeleteName(n Name) error

	// PutMessage stores message m.Seq of c (encoding, compressing as the
	// backend does, or m.Encoded as it is when set); PutHash indexes its
	// key.
	PutMessage(c ConvID, m Message) error
	DeleteMessage(c ConvID, seq uint64) error
	PutHash(c ConvID, h Hash, seq uint64) error
	DeleteHash(c ConvID, h Hash) error
	PutLarge(c ConvID, seq uint64, ref []byte) error
	DeleteLarge(c ConvID, seq uint64) error

	PutItem(c ConvID, it Item) error
	DeleteItem(c ConvID, pos uint64) error

	PutSummary(c ConvID, s dag.Summary) error
	DeleteSummary(c ConvID, id string) error

	PutEntrySeq(c ConvID, tag FileTag, m EntryMap, index, seq uint64) error
	DeleteEntrySeq(c ConvID, tag FileTag, m EntryMap, index uint64) error
	PutEntryIndex(c ConvID, tag FileTag, id string, index uint64) error
	DeleteEntryIndex(c ConvID, tag FileTag, id string) error
	PutReconcileFrom(c ConvID, tag FileTag, seq uint64) error
	DeleteReconcileFrom(c ConvID, tag FileTag) error

	PutOrder(c ConvID, seq, pos uint64) error
	DeleteOrder(c ConvID, seq uint64) error

	PutFileCheckpoint(agent, path string, cp FileCheckpoint) error
	DeleteFileCheckpoint(agent, path string) error
	PutHostCheckpoint(agent string, c ConvID, cp HostCheckpoint) error
	DeleteHostCheckpoint(agent string, c ConvID) error

	// PutHostEntry maps entry index of c's host-kept transcript;
	// DeleteHostEntries deletes every entry of it (a deletion by prefix:
	// see the package comment), when the transcript is read again from its
	// start.
	PutHostEntry(c ConvID, index uint64, e HostEntry) error
	DeleteHostEntries(c ConvID) error

	PutTurn(c ConvID, key string, t Turn) error
	DeleteTurn(c ConvID, key string) error

	PutSubagent(s SubID, r Subagent) error
	DeleteSubagent(s SubID) error
	PutSubagentByChild(agent, sessionID string, s SubID) error
	DeleteSubagentByChild(agent, sessionID string) error
	PutForkItem(s SubID, it Item) error
	// DeleteForkItems deletes s's fork snapshot (a deletion by prefix).
	DeleteForkItems(s SubID) error
	// PutSubagentLink links ended child s, whose session key is childKey,
	// to conversation parent.
	PutSubagentLink(parent ConvID, s SubID, childKey string) error
	DeleteSubagentLink(parent ConvID, s SubID) error

	// DeleteConversationData deletes every record scoped to conversation c
	// (messages, key index, items, large references, summaries, entry maps,
	// host entries, order records, committed turns) but not its record,
	// names, checkpoints or subagent links, which the caller deletes by
	// name. It is a deletion by prefix: a large conversation's goes in a
	// Batch (see the package comment).
	DeleteConversationData(c ConvID) error
}

// Tx is a read-write transaction: it reads its own writes.
type Tx interface {
	Reader
	Writer
}

// Batch is a bulk writer: writes become durable together at Flush, are not
// visible to readers before it, and are not isolated from concurrent
// transactions. A batch may be flushed in parts by the backend when it grows,
// and has no size limit: large deletions go in one. Its deletions by prefix
// delete what is committed when they are called, not its own unflushed
// writes.
type Batch interface {
	Writer
	// Flush writes what the batch holds and waits for it.
	Flush() error
	// Cancel drops the batch's unflushed writes.
	Cancel()
}

// Store is a backend.
type Store interface {
	// View runs fn in a read-only snapshot.
	View(ctx context.Context, fn func(Reader) error) error
	// Update runs fn in a read-write transaction committed atomically when
	// fn returns nil, discarded otherwise. Its writes are bounded (ErrTooBig
	// past the backend's limit: see MaxTxnBytes); on a full disk it fails
	// with ErrDiskFull before fn runs.
	Update(ctx context.Context, fn func(Tx) error) error
	// NewBatch returns a bulk writer (ErrDiskFull on a full disk).
	NewBatch(ctx context.Context) (Batch, error)
	// MaxTxnBytes is about how much one Update may write; the engine
	// splits larger writes. A backend may allow some margin over it and
	// may count a value it stores out of line for less than its size
	// (badgerstore counts a value-log value as its pointer, as Badger
	// does), but an Update holding one message of any size the engine
	// accepts (Config.MaxMessageBytes) beside a few small records must
	// commit.
	MaxTxnBytes() int64
	// Sync makes every committed write durable (fsync), whatever the
	// store's sync setting.
	Sync(ctx context.Context) error
	// Size reports the bytes the store occupies; a done ctx ends it with
	// its error.
	Size(ctx context.Context) (int64, error)
	// Close closes the store; later calls fail with ErrClosed.
	Close() error
}

// Locker is implemented by a backend that several processes share at once
// (pgstore): its named locks hold across processes, where the engine's own
// mutexes hold only within one. An engine on a store that implements Locker
// treats the store as shared: it takes a conversation's lock around every
// read-modify-write of it (and compaction's lock around a compaction), and
// reads the conversation record afresh each time it holds the lock, since
// another process may have written since. A lock is released by its unlock
// func, or when the process holding it dies.
type Locker interface {
	// Lock takes the lock called name, waiting for it until ctx ends.
	Lock(ctx context.Context, name string) (unlock func(), err error)
	// TryLock takes the lock called name if no one holds it (ok false,
	// err nil when someone does).
	TryLock(ctx context.Context, name string) (unlock func(), ok bool, err error)
}

// ConvRecord is a conversation record with its id (Conversations).
type ConvRecord struct {
	ID ConvID
	Conversation
}

// NameRecord is a name with its conversation (Names).
type NameRecord struct {
	Name
	Conv ConvID
}

// CheckpointRecord is one checkpoint (Checkpoints): a file checkpoint when
// Host is nil, else a host checkpoint of conversation HostConv.
type CheckpointRecord struct {
	Agent string
	// Path is the file's path (file checkpoints).
	Path string
	File *FileCheckpoint
	// HostConv and Host are set for a host-kept transcript's checkpoint.
	HostConv ConvID
	Host     *HostCheckpoint
}

// SubagentRecord is a subagent record with its id (Subagents).
type SubagentRecord struct {
	ID SubID
	Subagent
}

// HostEntryRecord is a host entry with its index (HostEntries).
type HostEntryRecord struct {
	Index uint64
	HostEntry
}

// SubagentLinkRecord is a link to an ended child (SubagentLinks): its id and
// its session key.
type SubagentLinkRecord struct {
	ID       SubID
	ChildKey string
}
