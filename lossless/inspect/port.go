package inspect

import (
	"context"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// Port is what inspection needs of the engine.
type Port interface {
	// Enter admits a call into the open engine (an error wrapping
	// core.ErrClosed after Close); the call ends with done.
	Enter() (done func(), err error)
	// View runs fn on a consistent read-only snapshot of the store.
	View(ctx context.Context, fn func(r store.Reader) error) error
	// Resolve returns the conversation agent's session sessionID (any id
	// it has had, or its sessionKey) belongs to: an error wrapping
	// core.ErrUnknownSession when none.
	Resolve(ctx context.Context, agent, sessionID string) (store.ConvID, error)
	// DAG returns conversation c of agent as the DAG algorithms read it.
	DAG(c store.ConvID, agent string) dag.Store
	// Retiring is the error of a read of conversation c (of session
	// sessionID) that a stopped retention pass left partly deleted.
	Retiring(c store.ConvID, sessionID string) error
	// Size is what the store takes on disk (store.Store.Size).
	Size(ctx context.Context) (int64, error)
	// IndexDir is the directory of the recall index ("" when there is
	// none beside the store).
	IndexDir() string
	// Format is the store format version this build writes.
	Format() int
}
