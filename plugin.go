package contextengine

import (
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/legacy"
	"github.com/lossless-engine/contextengine/summarize"
)

// newLegacyFactory returns the factory of the engine registered as
// "legacy" by core: package legacy's engine (ingest a no-op, assemble a
// pass-through, compact the built-in summary compaction over the session
// file). Its config is plugins.entries.legacy.config. The engines one
// registry makes (the process's, for the default registry) share one
// summarizer spend cap.
func newLegacyFactory() core.Factory { return legacy.NewFactory(summarize.NewSpend()) }
