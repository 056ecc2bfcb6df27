package records

import (
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/store"
)

// ErrBadParams is wrapped by the errors of lifecycle calls whose parameters
// cannot be used (lossless.ErrBadParams).
var ErrBadParams = errors.New("lossless: bad parameters")

// ErrBadRecord wraps store.ErrCorrupt (lossless.ErrCorrupt): a stored
// record that does not decode (FromStore maps store.ErrCorrupt to it).
var ErrBadRecord = fmt.Errorf("lossless: corrupt record: %w", store.ErrCorrupt)

// ErrRetiring is wrapped by the error of a read of, or a write to, a
// conversation that an interrupted retention pass left partly deleted
// (lossless.ErrRetiring).
var ErrRetiring = errors.New("lossless: conversation is being deleted by retention")

// RetiringErr is the error of a read of, or a write to, conversation c
// (of session sessionID) while retention deletes it: it wraps
// ErrRetiring.
func RetiringErr(c store.ConvID, sessionID string) error {
	return fmt.Errorf("lossless: session %q (conversation %s) is partly deleted by an interrupted retention pass; the next pass (lossless retain) finishes deleting it: %w",
		sessionID, c, ErrRetiring)
}
