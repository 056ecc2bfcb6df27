package explain

import (
	"context"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/internal/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// Port is what the explanations need from the engine (package lossless
// implements it over its *Engine).
type Port interface {
	// AssembleWithDetails assembles p as the engine's Assemble does and
	// says how recall went. It changes nothing in the store.
	AssembleWithDetails(ctx context.Context, p core.AssembleParams) (core.AssembleResult, recalled.Details, error)
	// Budget returns the token budget assemble uses for p: the call's,
	// else the runtime context's, else the configured default.
	Budget(p core.AssembleParams) int
	// Counter is the engine's token counter.
	Counter() core.TokenCounter
	// Conversation returns the stored conversation of a call's session
	// (an error when there is none: the call is a pass-through).
	Conversation(ctx context.Context, sessionID, sessionKey string) (store.ConvID, error)
	// View runs fn on a consistent read-only snapshot of the engine's
	// store (an error wrapping core.ErrClosed after Close).
	View(ctx context.Context, fn func(r store.Reader) error) error
	// SeqOf returns the sequence number of the stored message of c whose
	// bytes are raw (found by the engine's key of them; a store error
	// wrapping store.ErrNotFound when none).
	SeqOf(r store.Reader, c store.ConvID, raw []byte) (uint64, error)
	// RecallWith ranks p's prompt as the engine's recall does, with o.
	RecallWith(ctx context.Context, p core.AssembleParams, o recalled.Options) ([]recalled.Item, error)
	// RecallConfig is the engine's Config.Recall.
	RecallConfig() config.Recall
	// MessageText returns the bytes that stand for stored message seq of
	// c in text: its large-content reference, else its raw bytes (a
	// missing message: an error wrapping core.ErrNotFound).
	MessageText(r store.Reader, c store.ConvID, seq uint64) ([]byte, error)
	// SessionName is the name a person knows conversation c of record
	// rec by (the engine's SessionInfo.Name).
	SessionName(c store.ConvID, rec store.Conversation) string
	// Snippet returns text around byte offset at, as the engine's grep
	// shows it.
	Snippet(text string, at int) string
}
