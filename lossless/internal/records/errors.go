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
