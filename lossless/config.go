package lossless

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

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
	// hosts with persistent backend threads (see ProjectionMode).
	ContextProjection string `json:"contextProjection,omitempty"`
	// MaintainMinTokens is the size above which Maintain replaces an old
	// tool result in the host's transcript by a reference to the stored
	// original. Default 2000 (DefaultMaintainMinTokens).
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
	// OpenClaw plugin (Factory sets it from core.FactoryOptions.Host),
	// empty otherwise. It chooses the default summarizer. Not settable
	// from JSON.
	Host string `json:"-"`
	// Recall configures cross-session recall (on by default; see
	// RecallConfig.Enabled and RecallEnabled).
	Recall RecallConfig `json:"recall,omitempty"`
	// Retention limits the store's growth. Off by default.
	Retention RetentionConfig `json:"retention,omitempty"`
	// Badger overrides the store's Badger sizes.
	Badger BadgerConfig `json:"badger,omitempty"`
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
	// Default 32 MiB (DefaultAssembleCacheBytes).
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

	hooks testHooks // tests only (hooks.go)
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
	// Engine.Retain, or run `lossless retain`).
	IntervalMinutes int `json:"intervalMinutes,omitempty"`
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
)

// DefaultConfig returns the configuration with every default filled in
// (StoreDir left empty: Open and Factory resolve it).
func DefaultConfig() Config {
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
		Recall:                RecallConfig{Share: DefaultRecallShare, K: DefaultRecallK},
		Badger: BadgerConfig{MemTableSize: 8 << 20, ValueLogFileSize: 64 << 20,
			BlockCacheSize: 8 << 20, IndexCacheSize: 4 << 20, NumMemtables: 2},
	}
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.AgentID == "" {
		c.AgentID = d.AgentID
	}
	if c.Tokenizer == "" {
		c.Tokenizer = d.Tokenizer
	}
	if c.LargeContentTokens <= 0 {
		c.LargeContentTokens = d.LargeContentTokens
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.ContextThreshold <= 0 {
		c.ContextThreshold = d.ContextThreshold
	}
	if c.DefaultTokenBudget <= 0 {
		c.DefaultTokenBudget = d.DefaultTokenBudget
	}
	if c.FreshTailMessages <= 0 {
		c.FreshTailMessages = d.FreshTailMessages
	}
	if c.LeafChunkTokens <= 0 {
		c.LeafChunkTokens = d.LeafChunkTokens
	}
	if c.LeafTargetTokens <= 0 {
		c.LeafTargetTokens = d.LeafTargetTokens
	}
	if c.CondensedTargetTokens <= 0 {
		c.CondensedTargetTokens = d.CondensedTargetTokens
	}
	if c.MinFanIn <= 0 {
		c.MinFanIn = d.MinFanIn
	}
	if c.CompactionConcurrency <= 0 {
		c.CompactionConcurrency = d.CompactionConcurrency
	}
	if c.RotateBytes <= 0 {
		c.RotateBytes = d.RotateBytes
	}
	if c.Recall.Share <= 0 {
		c.Recall.Share = d.Recall.Share
	}
	if c.Recall.K <= 0 {
		c.Recall.K = d.Recall.K
	}
	b := &c.Badger
	if b.MemTableSize <= 0 {
		b.MemTableSize = d.Badger.MemTableSize
	}
	if b.ValueLogFileSize <= 0 {
		b.ValueLogFileSize = d.Badger.ValueLogFileSize
	}
	if b.BlockCacheSize <= 0 {
		b.BlockCacheSize = d.Badger.BlockCacheSize
	}
	if b.IndexCacheSize <= 0 {
		b.IndexCacheSize = d.Badger.IndexCacheSize
	}
	if b.NumMemtables <= 0 {
		b.NumMemtables = d.Badger.NumMemtables
	}
	return c
}

// validate reports a configuration that cannot work.
func (c Config) validate() error {
	if c.StoreDir == "" && c.StoreURL == "" {
		return fmt.Errorf("lossless: config: storeDir is empty")
	}
	return c.validateStoreless()
}

// Validate reports a configuration that Open would refuse, whatever its
// store: the checks of Open but for where the store is (Open also needs
// StoreDir or StoreURL). A ParseConfig result that passes it is refused by
// Open only for its store.
func (c Config) Validate() error { return c.validateStoreless() }

// validateStoreless is validate but for where the store is (OpenStore).
func (c Config) validateStoreless() error {
	if c.StoreURL != "" && !IsStoreURL(c.StoreURL) {
		return fmt.Errorf("lossless: config: storeUrl %q is not a PostgreSQL URL (want postgres://… or postgresql://…)", RedactURL(c.StoreURL))
	}
	if c.SyncWrites && c.AsyncCommit {
		return fmt.Errorf("lossless: config: syncWrites and asyncCommit are both set (asyncCommit lets PostgreSQL commits return before they are durable, syncWrites asks for durable writes): set one")
	}
	if c.ContextThreshold > 1 {
		return fmt.Errorf("lossless: config: contextThreshold %v is above 1", c.ContextThreshold)
	}
	if int64(c.MaxMessageBytes) > c.Badger.ValueLogFileSize/2 {
		return fmt.Errorf("lossless: config: maxMessageBytes %d is above half of badger.valueLogFileSize %d", c.MaxMessageBytes, c.Badger.ValueLogFileSize)
	}
	if c.Recall.Share > 1 {
		return fmt.Errorf("lossless: config: recall.share %v is above 1", c.Recall.Share)
	}
	if c.Recall.QuestionShare > 0.9 {
		return fmt.Errorf("lossless: config: recall.questionShare %v is above 0.9 (the context keeps at least a tenth of the budget)", c.Recall.QuestionShare)
	}
	if r := c.Retention; r.MaxAgeDays < 0 || r.MaxBytesPerAgent < 0 || r.IntervalMinutes < -1 {
		return fmt.Errorf("lossless: config: retention %+v: maxAgeDays and maxBytesPerAgent must be 0 (no limit) or positive, intervalMinutes -1 (off), 0 (default) or positive", r)
	}
	if _, err := c.summarizerConfig(); err != nil {
		return err
	}
	switch c.ContextProjection {
	case "", core.ProjectionPerTurn, core.ProjectionThreadBootstrap:
	default:
		return fmt.Errorf("lossless: config: contextProjection %q (want per_turn or thread_bootstrap)", c.ContextProjection)
	}
	switch c.Tokenizer {
	case core.EncodingO200k, core.EncodingCL100k, core.CounterChars4:
	default:
		return fmt.Errorf("lossless: config: unknown tokenizer %q (want o200k_base, cl100k_base or chars4)", c.Tokenizer)
	}
	return nil
}

// SummarizerConfig returns the summarizer the engine builds from this
// config: Summarizer decoded, its kind defaulted by Host (KindHost under
// OpenClaw, else KindExtractive), checked. Limits left at zero mean the
// summarize package's defaults.
func (c Config) SummarizerConfig() (summarize.Config, error) { return c.summarizerConfig() }

// summarizerConfig decodes Summarizer (unknown fields refused) and fills
// in the default kind: KindHost under OpenClaw (Host), else the extractive
// one.
func (c Config) summarizerConfig() (summarize.Config, error) {
	var sc summarize.Config
	if raw := strings.TrimSpace(string(c.Summarizer)); raw != "" && raw != "null" {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			return sc, fmt.Errorf("lossless: config: summarizer: %w", err)
		}
	}
	if sc.Kind == "" {
		sc.Kind = summarize.KindExtractive
		if c.Host == core.HostOpenClaw {
			sc.Kind = summarize.KindHost
		}
	}
	if err := sc.Validate(); err != nil {
		return sc, fmt.Errorf("lossless: config: summarizer: %w", err)
	}
	return sc, nil
}

// DefaultStoreDir returns the store directory used when Config.StoreDir is
// empty: <agentDir>/lossless when agentDir is set, else
// $XDG_DATA_HOME/lossless, else ~/.local/share/lossless.
func DefaultStoreDir(agentDir string) (string, error) {
	if agentDir != "" {
		return filepath.Join(agentDir, "lossless"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "lossless"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("lossless: no store directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "lossless"), nil
}

// IsStoreURL reports whether s names a PostgreSQL store (a URL starting
// with postgres:// or postgresql://) rather than a directory.
func IsStoreURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// RedactURL returns a store URL with its password replaced by "xxxxx", for
// messages and logs (s itself when it does not parse as a URL with a
// password).
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		// Unparsable: hide whatever stands between the scheme and an @.
		if i := strings.Index(s, "://"); i >= 0 {
			if j := strings.LastIndex(s, "@"); j > i {
				return s[:i+3] + "xxxxx" + s[j:]
			}
		}
		return s
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	return u.Redacted()
}

// storeName names the store in errors: the redacted StoreURL, else
// StoreDir, else "the store".
func (c Config) storeName() string {
	switch {
	case c.StoreURL != "":
		return RedactURL(c.StoreURL)
	case c.StoreDir != "":
		return c.StoreDir
	}
	return "the store"
}
