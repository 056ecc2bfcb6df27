package config

import (
	"encoding/json"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store/badgerstore"
	"github.com/lossless-engine/contextengine/summarize"
)

// Config is the engine's configuration: the JSON object at
// plugins.entries.lossless.config in openclaw.json. Zero fields take the
// defaults of DefaultConfig (documented on each field).
type Config struct {
	// StoreDir is the Badger directory. Default: <agentDir>/lossless when the
	// host gives an agent directory, else $XDG_DATA_HOME/lossless or
	// ~/.local/share/lossless.
	StoreDir string `json:"storeDir,omitempty"`
	// StoreURL selects a PostgreSQL store instead of Badger:
	// "postgres://user:password@host:port/database?options" (or
	// "postgresql://…", any libpq URL). Several engine processes, on one
	// machine or many, may share one database; the recall index is then
	// the database's full-text search, and StoreDir is not used. Empty
	// (default): Badger in StoreDir.
	StoreURL string `json:"storeUrl,omitempty"`
	// AgentID is the agent used when none can be derived from a call
	// (CompactParams.AgentID, a sessionKey "agent:<id>:..."). Default "main".
	AgentID string `json:"agentId,omitempty"`
	// Tokenizer counts tokens at ingest: "o200k_base" (default),
	// "cl100k_base" or "chars4" (OpenClaw's chars/4 estimate). A store keeps
	// the counts of the tokenizer it was written with.
	Tokenizer string `json:"tokenizer,omitempty"`
	// SyncWrites fsyncs every write of the Badger store (survives power
	// loss; ~30x slower single writes). Default false: a process crash
	// (kill -9) loses no acknowledged message, a power loss may lose the
	// last writes. A PostgreSQL store (StoreURL) commits durably either
	// way (see AsyncCommit); SyncWrites and AsyncCommit together are
	// refused.
	SyncWrites bool `json:"syncWrites,omitempty"`
	// AsyncCommit, on a PostgreSQL store (StoreURL), lets a commit return
	// before the server flushed it to disk (synchronous_commit off for
	// the engine's sessions; the URL parameter synchronous_commit=off does
	// the same). It is faster for single writes, and risks this: a crash
	// of the database server or of its machine loses the commits of its
	// last fraction of a second (up to three times the server's
	// wal_writer_delay, 600 ms by default), messages the engine
	// acknowledged included, for every process sharing the database
	// (never part of a commit; a crash of an engine process alone loses
	// nothing). Default false: a commit returns once the server made it
	// durable, and nothing acknowledged is lost on a server crash. Ignored
	// by the Badger store.
	AsyncCommit bool `json:"asyncCommit,omitempty"`
	// LargeContentTokens is the size above which a message is represented in
	// the active context by a reference with a short description (the full
	// content stays stored and retrievable). Default 25000.
	LargeContentTokens int `json:"largeContentTokens,omitempty"`
	// MaxMessageBytes is the largest message accepted (its raw JSON); larger
	// ones are refused with an error wrapping core.ErrTooLarge (a 100 MB
	// message, say). Default 32 MiB; at most half of badger.valueLogFileSize.
	MaxMessageBytes int `json:"maxMessageBytes,omitempty"`
	// ContextThreshold is the share of the token budget above which
	// compaction runs. Default 0.75.
	ContextThreshold float64 `json:"contextThreshold,omitempty"`
	// DefaultTokenBudget is the budget when neither the call nor the runtime
	// context gives one. Default 128000.
	DefaultTokenBudget int `json:"defaultTokenBudget,omitempty"`
	// FreshTailMessages is the number of newest messages never compacted.
	// Default 64.
	FreshTailMessages int `json:"freshTailMessages,omitempty"`
	// FreshTailMaxTokens caps the fresh tail's tokens. Default 0: no cap
	// beyond the budget.
	FreshTailMaxTokens int `json:"freshTailMaxTokens,omitempty"`
	// LeafChunkTokens is the most raw tokens one leaf summary covers.
	// Default 20000.
	LeafChunkTokens int `json:"leafChunkTokens,omitempty"`
	// LeafTargetTokens is the target size of a leaf summary. Default 2400.
	LeafTargetTokens int `json:"leafTargetTokens,omitempty"`
	// CondensedTargetTokens is the target size of a condensed summary.
	// Default 2000.
	CondensedTargetTokens int `json:"condensedTargetTokens,omitempty"`
	// MinFanIn is the fewest summaries one condensed summary covers.
	// Default 8.
	MinFanIn int `json:"minFanIn,omitempty"`
	// CompactionConcurrency is how many conversations compact at once.
	// Default 2.
	CompactionConcurrency int `json:"compactionConcurrency,omitempty"`
	// SummarizerConcurrency bounds the summarizer calls in flight within one
	// compaction (independent leaf chunks are summarised concurrently, so
	// wall time with a model summarizer is not the sum of the calls).
	// Default 4.
	SummarizerConcurrency int `json:"summarizerConcurrency,omitempty"`
	// RotateBytes is the transcript size above which compaction rotates the
	// host transcript. Default 2 MiB.
	RotateBytes int64 `json:"rotateBytes,omitempty"`
	// ContextProjection is the contextProjection mode Assemble reports when
	// the call does not say: "per_turn" (default) or "thread_bootstrap" for
	// hosts with persistent backend threads (see lossless.ProjectionMode).
	ContextProjection string `json:"contextProjection,omitempty"`
	// MaintainMinTokens is the size above which Maintain replaces an old
	// tool result in the host's transcript by a reference to the stored
	// original. Default 2000 (lossless.DefaultMaintainMinTokens).
	MaintainMinTokens int `json:"maintainMinTokens,omitempty"`
	// Summarizer configures the summarizer (package summarize's Config, kept
	// raw here, checked by Open and decoded by the compaction code). Kind
	// "host" summarizes with the host's own model
	// (runtimeContext.llm.complete, OpenClaw's session model): compact and
	// maintain, which the host calls with it, run those compactions, and a
	// summary asked where the host offers no model is the extractive
	// summarizer's. Default: kind "host" when Host is core.HostOpenClaw
	// (the OpenClaw plugin), else "extractive" (the CLI, Go hosts). An
	// object without "kind" takes the default kind with its other settings
	// (say, {"maxTokensPerHour": 200000} under OpenClaw).
	Summarizer json.RawMessage `json:"summarizer,omitempty"`
	// Host is the host that runs the engine: core.HostOpenClaw under the
	// OpenClaw plugin (lossless.Factory sets it from core.FactoryOptions.Host),
	// empty otherwise. It chooses the default summarizer. Not settable
	// from JSON.
	Host string `json:"-"`
	// Spend is where the summarizer's spend guard and cap come from
	// (summarize.Config.Spend): the process's, shared by its engines (a
	// gateway's agents; lossless.NewFactory hands one to each engine it
	// makes); nil gives the engine its own. Not settable from JSON.
	Spend *summarize.Spend `json:"-"`
	// Recall configures cross-session recall (on by default; see
	// Recall.Enabled and RecallEnabled).
	Recall Recall `json:"recall,omitempty"`
	// Retention limits the store's growth. Off by default.
	Retention RetentionConfig `json:"retention,omitempty"`
	// Badger overrides the store's Badger sizes.
	Badger BadgerConfig `json:"badger,omitempty"`
	// HostRequest says what a host's model request carries beside the
	// context that the engine cannot see. Under OpenClaw every assembled
	// context leaves the model its output cap, counted the way OpenClaw's
	// transport counts the request (README, "Every request stays inside
	// the model's window"). Zero fields are learned or estimated.
	HostRequest HostRequestConfig `json:"hostRequest,omitempty"`
	// Bridge is the OpenClaw plugin's own section (how it runs the engine
	// process: command, args, env, restarts). It shares the plugin's
	// config object, so it is accepted here and ignored by the engine.
	Bridge json.RawMessage `json:"bridge,omitempty"`
	// AssembleCacheBytes bounds the memory the engine keeps per
	// conversation: the parsed window of its last Assemble (which the next
	// Assemble reuses, the bulk of it), its record, the session names
	// resolved to it and its display name. Beyond it the least recently
	// used conversations are forgotten (their next use reads them from the
	// store again), so memory stays flat however many sessions are served.
	// Default 32 MiB (lossless.DefaultAssembleCacheBytes).
	AssembleCacheBytes int64 `json:"assembleCacheBytes,omitempty"`
	// ReadOnly opens the store for reading only (commands that only read
	// use it): Badger maps nothing new and changes nothing, so it opens
	// and reads even on a full disk; no recall index, retention or sweep
	// runs, and every write fails. A store Badger must recover first (the
	// last process died) is refused read-only; Open then says so. Not
	// settable from JSON.
	ReadOnly bool `json:"-"`
	// NewSummaryID, when set, makes the ids of new summaries instead of
	// dag.NewSummaryID's random ones (benchmarks that must give the same
	// figures on every run: an id's token count varies with its digits).
	// Not settable from JSON.
	NewSummaryID func() string `json:"-"`
}

// RecallEnabled reports whether cross-session recall is on: true unless
// Recall.Enabled is set to false.
func (c Config) RecallEnabled() bool { return c.Recall.On() }

// RetentionConfig is Config.Retention. Zero values mean no limit.
type RetentionConfig struct {
	// MaxAgeDays deletes conversations whose last message is older than
	// this many days, by the message's own timestamp (an imported history
	// ages from when it took place, not from its import), or by the
	// conversation's last write when that message has none.
	MaxAgeDays int `json:"maxAgeDays,omitempty"`
	// MaxBytesPerAgent deletes an agent's conversations with the oldest
	// last message (as MaxAgeDays) while its stored bytes exceed this.
	MaxBytesPerAgent int64 `json:"maxBytesPerAgent,omitempty"`
	// IntervalMinutes is how often the open engine applies these limits on
	// its own when one is set: first a minute after Open, then every
	// IntervalMinutes (default 60). -1 turns the automatic pass off (call
	// lossless.Engine.Retain, or run `lossless retain`).
	IntervalMinutes int `json:"intervalMinutes,omitempty"`
}

// HostRequestConfig is Config.HostRequest.
type HostRequestConfig struct {
	// OutputTokens is the model's output cap (its maxTokens), which every
	// request keeps free. Default: the one the OpenClaw plugin finds for
	// the call's model in OpenClaw's config (models.providers.<p>.models),
	// else the turn's compaction reserve, at most 8,192.
	OutputTokens int `json:"outputTokens,omitempty"`
	// ToolTokens is the size of the tool schemas OpenClaw sends with each
	// request, in chars/4 tokens (the JSON of their names, descriptions
	// and parameters). Default: 210 per tool sent directly (15 when
	// OpenClaw's tool search holds the others in its catalog).
	ToolTokens int `json:"toolTokens,omitempty"`
}

// DefaultRetentionIntervalMinutes is the default of
// RetentionConfig.IntervalMinutes.
const DefaultRetentionIntervalMinutes = 60

// BadgerConfig is Config.Badger: Badger's sizes in bytes (counts for
// NumMemtables). Defaults are small, for an embedded library.
type BadgerConfig struct {
	// MemTableSize: default 8 MiB.
	MemTableSize int64 `json:"memTableSize,omitempty"`
	// ValueLogFileSize: default 64 MiB.
	ValueLogFileSize int64 `json:"valueLogFileSize,omitempty"`
	// BlockCacheSize: default 8 MiB.
	BlockCacheSize int64 `json:"blockCacheSize,omitempty"`
	// IndexCacheSize: default 4 MiB.
	IndexCacheSize int64 `json:"indexCacheSize,omitempty"`
	// NumMemtables: default 2.
	NumMemtables int `json:"numMemtables,omitempty"`
}

// BadgerOptions returns the options of the Badger store c opens in
// StoreDir (package store/badgerstore): its directory, sync and read-only
// settings and the Badger sizes (zero: badgerstore's defaults).
func (c Config) BadgerOptions() badgerstore.Options {
	b := c.Badger
	return badgerstore.Options{Dir: c.StoreDir, SyncWrites: c.SyncWrites, ReadOnly: c.ReadOnly,
		MemTableSize: b.MemTableSize, ValueLogFileSize: b.ValueLogFileSize, BlockCacheSize: b.BlockCacheSize,
		IndexCacheSize: b.IndexCacheSize, NumMemtables: b.NumMemtables}
}

// Default values of Config.
const (
	DefaultAgentID               = "main"
	DefaultLargeContentTokens    = 25000
	DefaultContextThreshold      = 0.75
	DefaultTokenBudget           = 128000
	DefaultFreshTailMessages     = 64
	DefaultLeafChunkTokens       = 20000
	DefaultLeafTargetTokens      = 2400
	DefaultCondensedTargetTokens = 2000
	DefaultMinFanIn              = 8
	DefaultCompactionConcurrency = 2
	DefaultRotateBytes           = 2 << 20
	// DefaultMaxMessageBytes is the default of Config.MaxMessageBytes
	// (lossless.DefaultMaxMessageBytes).
	DefaultMaxMessageBytes = 32 << 20
)

// Default returns the configuration with every default filled in
// (StoreDir left empty: lossless.Open and lossless.Factory resolve it).
func Default() Config {
	return Config{
		AgentID:               DefaultAgentID,
		Tokenizer:             core.EncodingO200k,
		LargeContentTokens:    DefaultLargeContentTokens,
		MaxMessageBytes:       DefaultMaxMessageBytes,
		ContextThreshold:      DefaultContextThreshold,
		DefaultTokenBudget:    DefaultTokenBudget,
		FreshTailMessages:     DefaultFreshTailMessages,
		LeafChunkTokens:       DefaultLeafChunkTokens,
		LeafTargetTokens:      DefaultLeafTargetTokens,
		CondensedTargetTokens: DefaultCondensedTargetTokens,
		MinFanIn:              DefaultMinFanIn,
		CompactionConcurrency: DefaultCompactionConcurrency,
		RotateBytes:           DefaultRotateBytes,
		Recall:                Recall{Share: DefaultRecallShare, K: DefaultRecallK},
		Badger: BadgerConfig{MemTableSize: 8 << 20, ValueLogFileSize: 64 << 20,
			BlockCacheSize: 8 << 20, IndexCacheSize: 4 << 20, NumMemtables: 2},
	}
}
