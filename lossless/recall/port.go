package recall

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// Port is what recall needs from the engine (package lossless implements
// it over its *Engine). C is the engine's call resolved at Assemble's door:
// this package only hands it back to AssembleWindow.
type Port[C any] interface {
	// Config is the engine's recall configuration.
	Config() Config
	// Counter is the engine's token counter.
	Counter() core.TokenCounter
	// Store is the engine's store: the recalled items are read from it.
	Store() store.Store
	// Index is the engine's recall index (nil when recall is off).
	Index() *Index
	// InContext returns what the last assembled window of c shows: raw
	// messages from seq from on, and the doc ids (SummaryDocID) of its
	// summaries.
	InContext(c store.ConvID) (from uint64, summaries map[string]bool)
	// SessionName returns c's cached name for the model (ok false: not
	// cached); CacheSessionName caches one read from c's record.
	SessionName(c store.ConvID) (name string, ok bool)
	// CacheSessionName caches c's name for the model.
	CacheSessionName(c store.ConvID, name string)
	// PlainText renders a stored message as the block shows it.
	PlainText(m core.Message) string
	// Budget is the call's token budget (an explicit one, else the
	// runtime context's, else the configured default).
	Budget(p core.AssembleParams) int
	// AssembleWindow assembles the window of call for p (its TokenBudget
	// what the window may take; recall messages already dropped from
	// p.Messages), without recall.
	AssembleWindow(ctx context.Context, call C, p core.AssembleParams) (core.AssembleResult, error)
}

// Call is one Assemble call as recall sees it, resolved at its door.
type Call[C any] struct {
	// Engine is the engine's own call, handed back to Port.AssembleWindow.
	Engine C
	// Params are the call's parameters.
	Params core.AssembleParams
	// Agent is the call's agent.
	Agent string
	// Conv is the call's conversation, when Known (false: a session never
	// stored, which gets the host's messages).
	Conv  store.ConvID
	Known bool
	// GrepTool is the name of the engine's grep tool when the host offers
	// it ("" otherwise): the block then tells the model to search with it.
	GrepTool string
}

// here is the id of the conversation the call is for ("" when none is
// stored): its recalled items are shown without their session's name.
func (c *Call[C]) here() string {
	if !c.Known {
		return ""
	}
	return c.Conv.String()
}
