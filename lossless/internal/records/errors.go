package records

import (
	"fmt"

	"github.com/lossless-engine/contextengine/store"
)

// ErrBadRecord wraps store.ErrCorrupt (lossless.ErrCorrupt): a stored
// record that does not decode (FromStore maps store.ErrCorrupt to it).
var ErrBadRecord = fmt.Errorf("lossless: corrupt record: %w", store.ErrCorrupt)
