package orchestrate

import (
	"context"
	"encoding/json"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/summarize"
)

// Config is the part of the engine's configuration the runs read.
type Config struct {
	// Engine is the engine's id (CompactDetails.Engine).
	Engine string
	// ContextThreshold is the share of the budget over which a
	// conversation is compacted after a turn or in Maintain.
	ContextThreshold float64
	// FreshTailMessages is the number of newest messages Maintain never
	// rewrites.
	FreshTailMessages int
	// MaintainMinTokens is the size over which Maintain rewrites an old
	// tool result (0: DefaultMaintainMinTokens).
	MaintainMinTokens int
	// RotateBytes is the transcript size from which Compact rotates it.
	RotateBytes int64
}

// Port is what the runs need from the engine (package lossless implements
// it over its *Engine). C is the engine's conversation handle: the
// compactor runs on it.
type Port[C dag.Store] interface {
	// State is the engine's run state.
	State() *State
	// Config is the engine's configuration of the runs.
	Config() Config
	// Enter fails when the engine is closed; done leaves it.
	Enter() (done func(), err error)

	// SummarizerConfig is the engine's configured summarizer.
	SummarizerConfig() (summarize.Config, error)
	// Counter is the engine's token counter.
	Counter() core.TokenCounter
	// Compactor is the engine's dag.Compactor (with the engine's
	// summarizer).
	Compactor() (*dag.Compactor, error)

	// Identity resolves a call's agent, session id and key (the call's
	// own fields, then its sessionTarget).
	Identity(explicitAgent, sessionID, sessionKey string, target json.RawMessage) (agent, id, key string)
	// Conversation returns the stored conversation of a session
	// (core.ErrUnknownSession when none is stored).
	Conversation(ctx context.Context, agent, sessionID, sessionKey string) (C, error)
	// Lookup returns the id of the stored conversation of a session
	// (core.ErrUnknownSession when none is stored).
	Lookup(ctx context.Context, agent, sessionID, sessionKey string) (store.ConvID, error)
	// ID is c's id.
	ID(c C) store.ConvID
	// Get reads records of c in one read.
	Get(ctx context.Context, c C, refs []store.Ref) ([]store.Got, error)

	// LockCompaction takes the engine's compaction lock of conversation c
	// (waiting honours ctx); unlock releases it.
	LockCompaction(ctx context.Context, c store.ConvID) (unlock func(), err error)
	// SharedLock takes c's compaction lock in a shared store: waiting for
	// it when wait, else ok false when another process holds it. Without a
	// shared store it returns a no-op release and ok.
	SharedLock(ctx context.Context, c store.ConvID, wait bool) (release func(), ok bool, err error)
	// RunHook is called once a run holds its locks; the func it returns
	// when the run ends (tests).
	RunHook(c store.ConvID) func()

	// BootstrapHost is Bootstrap of a host-kept transcript.
	BootstrapHost(ctx context.Context, p core.BootstrapParams, agent, sessionID, sessionKey string) error
	// ImportFile imports what is new in a session file.
	ImportFile(ctx context.Context, agent, sessionID, sessionKey, path string) error
	// RawMessage returns the raw bytes of message seq of c.
	RawMessage(ctx context.Context, c C, seq uint64) ([]byte, error)
	// MapSession maps session id newID of agent to c and records the
	// successor transcript's import checkpoint cp at cpPath, in one
	// transaction.
	MapSession(ctx context.Context, c C, agent, newID, cpPath string, cp transcript.Checkpoint) error

	// Budget is a call's token budget: explicit, else the runtime
	// context's tokenBudget, else the configured default.
	Budget(explicit int, rc *core.RuntimeContext) int
	// CompactBudget is Compact's budget of a session, less the host's own
	// share when its assembles told it (known).
	CompactBudget(agent, sessionID, sessionKey string, budget int) (eff int, known bool)
	// TurnBudget is the budget a committed turn's compaction decision
	// measures against; it closes the turn.
	TurnBudget(agent, sessionID, sessionKey string, rc *core.RuntimeContext) int

	// View runs fn in a read transaction of the engine's store.
	View(ctx context.Context, fn func(store.Reader) error) error
	// Sync makes the store's writes durable.
	Sync(ctx context.Context) error
	// UpdateConv runs fn in a write transaction under c's lock.
	UpdateConv(ctx context.Context, c store.ConvID, fn func(store.Tx) error) error
	// Hash is a message's key in its conversation.
	Hash(raw []byte) store.Hash
	// Reference is the reference message that stands for m (tokens its
	// tokens) once rewritten.
	Reference(m core.Message, tokens int) []byte
	// MessageHeader reads message seq of c without its body; Message with
	// it.
	MessageHeader(r store.Reader, c store.ConvID, seq uint64) (store.Message, error)
	// Message reads message seq of c with its raw bytes.
	Message(r store.Reader, c store.ConvID, seq uint64) (store.Message, error)
	// SyncHost reads what is new of a host-kept transcript (transcript.SyncHost).
	SyncHost(ctx context.Context, agent string, c store.ConvID, read core.HostTranscriptReader) (transcript.HostSyncResult, error)
	// HostEntries is the entry map of a host-kept transcript.
	HostEntries(ctx context.Context, c store.ConvID) ([]store.HostEntry, error)
	// DropHostMap drops the entry map of a host-kept transcript.
	DropHostMap(ctx context.Context, agent string, c store.ConvID) error
}
