package contextengine

import (
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/legacy"
)

// legacyFactory builds the engine registered as "legacy" by core: package
// legacy's engine (ingest a no-op, assemble a pass-through, compact the
// built-in summary compaction over the session file). Its config is
// plugins.entries.legacy.config.
var legacyFactory core.Factory = legacy.Factory
