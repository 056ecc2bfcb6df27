package tools

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// The tools' names as offered to the model (lossless.ToolGrep,
// ToolDescribe and ToolExpand).
const (
	NameGrep     = "lcm_grep"
	NameDescribe = "lcm_describe"
	NameExpand   = "lcm_expand"
)

// Conversation is the engine's handle of one stored conversation, as the
// tools read it: its summary DAG, its id in the store and its messages.
type Conversation interface {
	dag.Store
	dag.MessageMetaReader
	// StoreID is the conversation's id in the store.
	StoreID() store.ConvID
	// Message returns raw message seq, bytes as stored.
	Message(ctx context.Context, seq uint64) (core.Message, error)
	// MessageByKey returns the message of large-content reference key.
	MessageByKey(ctx context.Context, key string) (uint64, core.Message, error)
}

// Port is what the tools need from the engine (package lossless implements
// it over its *Engine). C is the engine's conversation handle.
type Port[C Conversation] interface {
	// Conversation resolves the conversation of a session (an error
	// wrapping core.ErrUnknownSession when none is stored).
	Conversation(ctx context.Context, agentID, sessionID, sessionKey string) (C, error)
	// ConversationByID returns the handle of stored conversation c and
	// its agent (an error wrapping core.ErrNotFound when none is stored).
	ConversationByID(ctx context.Context, c store.ConvID) (C, string, error)
	// Holding returns the conversation that holds summary id (or the
	// large-content reference id) for a call made in c: c itself, a
	// forked child's parent or an ended child linked to c; c when none,
	// an error when a read fails.
	Holding(ctx context.Context, c C, id string) (C, error)
	// LinkedChildren returns the conversations of the ended subagents
	// linked to c, whose histories join c's.
	LinkedChildren(ctx context.Context, c store.ConvID) ([]store.ConvID, error)
	// AgentConversations returns the ids (hex, as Conversation.ID
	// prints them) of every conversation of agent.
	AgentConversations(ctx context.Context, agent string) ([]string, error)
	// AgentFor returns the agent of a call: the agent a sessionKey names,
	// else explicit, else the engine's default.
	AgentFor(explicit, sessionKey string) string
	// AgentOfKey returns the agent a session key "agent:<id>:..." names,
	// or "".
	AgentOfKey(sessionKey string) string
	// Enter marks a call in progress (Close waits for it); done ends it.
	// It fails after Close.
	Enter() (done func(), err error)
	// View runs fn on a read-only snapshot of the engine's store.
	View(ctx context.Context, fn func(store.Reader) error) error
	// ReadMessage returns message seq of c with its body (an error
	// wrapping dag.ErrNotFound when there is none).
	ReadMessage(r store.Reader, c store.ConvID, seq uint64) (store.Message, error)
	// Missing is the error of messages from..to of c missing from the
	// store (wrapping the engine's ErrCorrupt).
	Missing(c store.ConvID, from, to uint64) error
	// PlainText renders a stored message as grep matches it.
	PlainText(m core.Message) string
	// IsLargeRef reports whether id is a large-content reference
	// ("lcm-large:<key>").
	IsLargeRef(id string) bool
}
