package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/recall"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// The engine's tests of recall in Assemble reach package recall's block
// rendering through these.

type recallBodies = recall.Bodies

// renderRecall renders items into the recall block as Assemble does
// (recall.Render over the engine's recall.Deps), with the grep tool named when
// grep is set.
func (e *Engine) renderRecall(ctx context.Context, items []recalled.Item, citations string, grep bool, max int, ts int64, here string, bodies *recallBodies) (core.Message, int, error) {
	tool := ""
	if grep {
		tool = ToolGrep
	}
	return recall.Render(ctx, e.recallDeps(), items, citations, tool, max, ts, here, bodies)
}

func holdsSummary(msgs []core.Message) bool { return recalled.HoldsSummary(msgs) }
