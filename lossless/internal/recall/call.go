package recall

import (
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
)

// Deps are what recall in Assemble reads, handed over by the engine: the
// configuration, the token counter, the store the recalled items are read
// from, the recall index (nil when recall is off) and the cache of
// conversations' names.
type Deps struct {
	Config  config.Recall
	Counter core.TokenCounter
	Store   store.Store
	Index   *Index
	Names   Names
}

// Names caches the name a conversation is shown by in the block (its
// sessionKey, else its latest session id). Implemented by the engine's
// per-conversation state cache (lossless/assemble.Cache, which drops a
// name with its conversation's state); recall's tests substitute a map.
type Names interface {
	// Name returns c's cached name (ok false: not cached).
	Name(c store.ConvID) (name string, ok bool)
	// SetName caches c's name.
	SetName(c store.ConvID, name string)
}

// Call is one Assemble call as recall sees it, resolved at the engine's
// door.
type Call struct {
	// Params are the call's parameters.
	Params core.AssembleParams
	// Budget is the call's token budget (an explicit one, else the
	// runtime context's, else the configured default): the window and the
	// block share it.
	Budget int
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
func (c *Call) here() string {
	if !c.Known {
		return ""
	}
	return c.Conv.String()
}

// kOf is cfg's K, config.DefaultRecallK when unset.
func kOf(cfg config.Recall) int { return cfg.KOrDefault() }
