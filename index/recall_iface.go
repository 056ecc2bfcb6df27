package index

import "context"

// Recall is the recall index as the lossless engine uses it: documents in,
// ranked turns out. bleveindex.Index (Bleve, in a directory beside the
// store)
// implements it; a storage backend may bring its own search instead (a
// database's full-text index), so that every process sharing the store
// sees every other's messages. Implementations are safe for concurrent use.
type Recall interface {
	// AddGeneration queues docs for indexing and moves the store
	// generation the index has seen by delta, in one step (Add may block
	// while the queue is full; it never fails: an implementation that
	// cannot index logs and reports it through Lag or its own status).
	AddGeneration(delta int64, docs ...Doc)
	// Delete removes docs by id.
	Delete(ids ...string)
	// ConversationDocIDs returns the ids of every doc of a conversation
	// (retention deletes them).
	ConversationDocIDs(ctx context.Context, conversation string) ([]string, error)
	// Recall ranks the turns that best match a prompt (RecallQuery).
	Recall(ctx context.Context, q RecallQuery) ([]Hit, error)
	// Flush waits until every added doc is searchable.
	Flush(ctx context.Context) error
	// Lag is the number of docs added but not yet searchable.
	Lag() int
	// Close stops indexing and releases the index; later calls fail with
	// an error wrapping ErrClosed (Add and Delete do nothing).
	Close() error
}

// Tracker is implemented by a Recall that records, with the docs it
// writes, how far each conversation's messages are indexed (a mark per
// conversation: every message through it has its doc written, or has
// none), so that the messages of docs a process queued and never wrote
// (it was killed) are indexed later by another: pgstore's Recall, shared
// by every process of a database, whose queue is each process's own.
type Tracker interface {
	// AddMessages queues the docs of conversation conv's messages
	// from..to (all of them: a message without a doc, a heartbeat, is
	// covered by the range) as AddGeneration(0, docs...) does, and once
	// they are written moves conv's mark to to if it was at from-1 or
	// beyond. A mark below from-1 is a gap (Gaps).
	AddMessages(conv string, from, to uint64, docs ...Doc)
	// Marks returns the marks of convs (0: none).
	Marks(ctx context.Context, convs []string) ([]uint64, error)
	// CatchUp writes the docs of conversation conv's messages after its
	// mark through seq through (docs: those of them that have one, in seq
	// order) in one transaction with the move of its mark to through
	// (never back). A doc is written in place of one of the same id, so
	// that processes catching up at once, or a process whose queue held
	// it, never index one twice; docs already written are left as they
	// are, but for the one after a doc that was not (its context, the
	// previous turn, was an older one).
	CatchUp(ctx context.Context, conv string, through uint64, docs []Doc) error
	// Gaps returns, and forgets, the conversations whose mark a write of
	// this process found below the start of its messages since the last
	// call (messages of another process not written yet, or never: it
	// was killed).
	Gaps() []string
	// Missing returns those of ids that have no doc written. No mark
	// tracks a summary's doc: a process killed before its queue was
	// written leaves it out, and an engine opening the store finds it so
	// and writes it with CatchUp.
	Missing(ctx context.Context, ids []string) ([]string, error)
}
