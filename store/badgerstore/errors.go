package badgerstore

import (
	"fmt"

	"github.com/lossless-engine/contextengine/store"
)

// The errors of package badgerstore, for errors.Is.

// errEnded is the error of a Reader, Tx or Batch used after its
// transaction ended (fn returned, or Flush or Cancel was called).
var errEnded = fmt.Errorf("badgerstore: transaction or batch used after it ended: %w", store.ErrClosed)

// errBadRecord is wrapped by every decoder of stored records.
var errBadRecord = fmt.Errorf("badgerstore: %w", store.ErrCorrupt)
