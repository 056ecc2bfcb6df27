package lossless

import (
	"context"
	"errors"

	"github.com/lossless-engine/contextengine/core"
)

var errTODO = errors.New("lossless: not implemented yet")

// Ingest stores one message.
func (e *Engine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	return core.IngestResult{}, errTODO
}

// IngestBatch stores a turn.
func (e *Engine) IngestBatch(ctx context.Context, p core.IngestBatchParams) (core.IngestBatchResult, error) {
	return core.IngestBatchResult{}, errTODO
}

// AfterTurn stores the new messages of a turn.
func (e *Engine) AfterTurn(ctx context.Context, p core.AfterTurnParams) error { return errTODO }

// Bootstrap imports the session file.
func (e *Engine) Bootstrap(ctx context.Context, p core.BootstrapParams) (core.BootstrapResult, error) {
	return core.BootstrapResult{}, errTODO
}

// Assemble returns the context.
func (e *Engine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return core.AssembleResult{}, errTODO
}
