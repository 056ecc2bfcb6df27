package config

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/summarize"
)

// Parse decodes raw JSON (nil or empty: the defaults) into a Config with
// defaults filled (Parse). Unknown fields are refused, so a
// typo is reported.
func Parse(raw json.RawMessage) (Config, error) {
	var cfg Config
	if s := strings.TrimSpace(string(raw)); s != "" && s != "null" {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return Config{}, fmt.Errorf("lossless: config: %w", err)
		}
	}
	return cfg.WithDefaults(), nil
}

// WithDefaults returns c with zero fields set to their defaults (as
// lossless.Open and Parse fill them in).
func (c Config) WithDefaults() Config {
	d := Default()
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

// Validate reports a configuration that lossless.Open would refuse,
// whatever its store: the checks of Open but for where the store is (Open
// also needs StoreDir or StoreURL; lossless.OpenStore makes none). A Parse
// result that passes it is refused by Open only for its store.
func (c Config) Validate() error {
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
	if h := c.HostRequest; h.OutputTokens < 0 || h.ToolTokens < 0 {
		return fmt.Errorf("lossless: config: hostRequest.outputTokens %d and hostRequest.toolTokens %d must be 0 (learned) or positive", h.OutputTokens, h.ToolTokens)
	}
	if r := c.Retention; r.MaxAgeDays < 0 || r.MaxBytesPerAgent < 0 || r.IntervalMinutes < -1 {
		return fmt.Errorf("lossless: config: retention %+v: maxAgeDays and maxBytesPerAgent must be 0 (no limit) or positive, intervalMinutes -1 (off), 0 (default) or positive", r)
	}
	if _, err := c.SummarizerConfig(); err != nil {
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
//
// It decodes Summarizer (unknown fields refused) and fills in the default
// kind: KindHost under OpenClaw (Host), else the extractive one.
func (c Config) SummarizerConfig() (summarize.Config, error) {
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
