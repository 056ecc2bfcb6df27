package contextengine

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
)

// legacyFactory builds the engine registered as "legacy" by core.
//
// Until package legacy lands, this is a minimal private stand-in with the
// contract's legacy behaviour for ingest and assemble: ingest is a no-op
// ({ingested:false}), assemble passes the messages through with a chars/4
// estimate, and compact reports that it compacted nothing (the built-in
// summarisation compaction lives in package legacy).
var legacyFactory core.Factory = func(ctx context.Context, opts core.FactoryOptions) (core.Engine, error) {
	return passThroughLegacy{}, nil
}

// passThroughLegacy is the stand-in legacy engine (see legacyFactory).
type passThroughLegacy struct{}

func (passThroughLegacy) Info() core.Info {
	return core.Info{ID: LegacyID, Name: "Legacy"}
}

func (passThroughLegacy) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	return core.IngestResult{Ingested: false}, nil
}

func (passThroughLegacy) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return core.AssembleResult{Messages: p.Messages, EstimatedTokens: core.EstimateChars4(p.Messages)}, nil
}

func (passThroughLegacy) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	if err := ctx.Err(); err != nil {
		return core.CompactResult{}, fmt.Errorf("contextengine: legacy compact: %w", err)
	}
	return core.CompactResult{OK: true, Compacted: false, Reason: "legacy compaction unavailable in this build"}, nil
}
