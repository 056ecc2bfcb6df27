package index

import "context"

// Recall is the recall index as the lossless engine uses it: documents in,
// ranked turns out. *Index (Bleve, in a directory beside the store)
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

var _ Recall = (*Index)(nil)
