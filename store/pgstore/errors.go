package pgstore

import (
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/store"
)

// The errors of package pgstore, for errors.Is.

// ErrSchemaTooNew: the database was migrated by a newer binary.
var ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this binary")

// ErrSchemaTooOld: a read-only open of a database whose schema is behind
// this binary (or not created at all); a read-write open migrates it.
var ErrSchemaTooOld = errors.New("pgstore: database schema is older than this binary")

var errClosedStore = fmt.Errorf("pgstore: %w", store.ErrClosed)

var errEnded = errors.New("pgstore: the transaction has ended (a Reader or Tx used after its View or Update returned)")

// errRecallClosed is returned by a Recall used after Close.
var errRecallClosed = fmt.Errorf("pgstore: recall: %w", index.ErrClosed)
