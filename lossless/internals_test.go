package lossless

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/recall"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/internal/subagent"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// Test-only names of the engine's internals: wrappers and constants the
// white-box tests of this package use, kept out of the production files.

// forkCache returns sub's fork cache (subagent.Forks.Get).
func (e *Engine) forkCache(sub store.SubID) *subagent.ForkCache { return e.subagents.forks.Get(sub) }

// subIDOf is subagent.ID.
var subIDOf = subagent.ID

// maxForkCaches bounds the fork caches kept (subagent.MaxForkCaches).
const maxForkCaches = subagent.MaxForkCaches

// posStep is the gap between consecutive appended positions: positions are
// sparse so that a range can be replaced by one summary at its first
// position without renumbering anything.
const posStep = records.PosStep

// storeGeneration counts what the index holds when up to date: messages
// plus summaries over all conversations (recall.StoreGeneration).
func (e *Engine) storeGeneration() (uint64, error) {
	return recall.StoreGeneration(context.Background(), e.st)
}

// Doc ids: "<conv>:<seq>" for a message, "<conv>/<summary id>" for a summary.
func messageDocID(c convID, seq uint64) string { return recall.MessageDocID(c, seq) }

// renderedSummaryID returns the id of a summary as RenderSummary shows it
// (recalled.SummaryID).
func renderedSummaryID(m core.Message) (string, bool) { return recalled.SummaryID(m) }

// parseConvID is records.ParseConvID.
var parseConvID = records.ParseConvID

// waitBackground waits until no background compaction runs (tests).
func (e *Engine) waitBackground() { e.compaction.runs.WaitIdle() }

// lastBackground returns the last background result of conv (tests).
func (e *Engine) lastBackground(conv *Conversation) (orchestrate.BackgroundResult, bool) {
	return e.compaction.runs.Last(conv.id)
}

// maxBackgroundResults bounds the background results kept.
const maxBackgroundResults = orchestrate.MaxBackgroundResults

// itemTokens is the tokens of all items.
var itemTokens = dag.SumTokens
