package transcript

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// Port is what an import needs from the engine (package lossless
// implements it over its *Engine). P is the engine's prepared message: a
// message hashed and counted by Prepare, stored by StoreMessages; this
// package only carries it from one to the other.
type Port[P any] interface {
	// Store is the engine's store: every read, and the writes made after
	// CheckSpace (or through Update and Batch).
	Store() store.Store
	// CheckSpace returns the engine's error when its store's filesystem is
	// too full to write (ErrDiskFull), nil otherwise.
	CheckSpace() error
	// Resolve returns the conversation of agent's session (by id, then
	// key), made when create is set and none exists.
	Resolve(ctx context.Context, agent, sessionID, sessionKey string, create bool) (store.ConvID, error)
	// LockConv locks conversation c for writing and returns its NextSeq
	// (the sequence number its next message gets); unlock releases it.
	LockConv(ctx context.Context, c store.ConvID) (nextSeq uint64, unlock func(), err error)
	// Conversation returns conversation c's summary DAG (its items and
	// summaries, Replace), for the import's compaction entries and the
	// reconciliation. Its methods are called with the engine entered.
	Conversation(c store.ConvID) dag.Store
	// Validate returns why the engine would not store message m (too
	// large, no role), nil when it would; an error is the line's, reported
	// in Result.Malformed (a host-kept entry's: logged and skipped).
	Validate(m core.Message) error
	// Prepare hashes and counts valid message m into p (a worker calls it,
	// concurrently with other workers); when ctx is done it may leave p
	// incomplete (the import then ends with ctx's error).
	Prepare(ctx context.Context, p *P, m core.Message)
	// PrepareAll prepares msgs, in parallel across the cores.
	PrepareAll(ctx context.Context, msgs []core.Message) ([]P, error)
	// StoreMessages stores in conversation c, in order, those of ps not
	// stored yet (one transaction; queued for recall) and returns their
	// number; every p's sequence number (Seq) is set, new or already
	// stored.
	StoreMessages(ctx context.Context, c store.ConvID, ps []P) (int, error)
	// Seq returns the sequence number StoreMessages gave p.
	Seq(p *P) uint64
	// Hash returns p's key: the hash of its message's bytes.
	Hash(p *P) store.Hash
	// SummaryTokens returns summary s's tokens as the context renders it.
	SummaryTokens(s dag.Summary) int
}
