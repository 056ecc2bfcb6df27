package lossless

// The engine's configuration is package lossless/config's: Config and its
// sections, defaults, validation and decoding are re-exported here, so
// callers keep writing lossless.Config. What is the engine's own stays
// here: its view of its configuration (engineConfig: the Config with the
// tests' seams), Open's check that a store is named, and the store's name
// in errors.

import (
	"fmt"

	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/summarize"
)

// Config is the engine's configuration (config.Config): the JSON object at
// plugins.entries.lossless.config in openclaw.json. Zero fields take the
// defaults of DefaultConfig (documented on each field).
type Config = config.Config

// RetentionConfig is Config.Retention (config.RetentionConfig). Zero
// values mean no limit.
type RetentionConfig = config.RetentionConfig

// BadgerConfig is Config.Badger (config.BadgerConfig): Badger's sizes.
type BadgerConfig = config.BadgerConfig

// DefaultRetentionIntervalMinutes is the default of
// RetentionConfig.IntervalMinutes.
const DefaultRetentionIntervalMinutes = config.DefaultRetentionIntervalMinutes

// Default values of Config (package config's).
const (
	DefaultAgentID               = config.DefaultAgentID
	DefaultLargeContentTokens    = config.DefaultLargeContentTokens
	DefaultContextThreshold      = config.DefaultContextThreshold
	DefaultTokenBudget           = config.DefaultTokenBudget
	DefaultFreshTailMessages     = config.DefaultFreshTailMessages
	DefaultLeafChunkTokens       = config.DefaultLeafChunkTokens
	DefaultLeafTargetTokens      = config.DefaultLeafTargetTokens
	DefaultCondensedTargetTokens = config.DefaultCondensedTargetTokens
	DefaultMinFanIn              = config.DefaultMinFanIn
	DefaultCompactionConcurrency = config.DefaultCompactionConcurrency
	DefaultRotateBytes           = config.DefaultRotateBytes
)

// DefaultConfig returns the configuration with every default filled in
// (StoreDir left empty: Open and Factory resolve it).
func DefaultConfig() Config { return config.Default() }

// DefaultStoreDir returns the store directory used when Config.StoreDir is
// empty: <agentDir>/lossless when agentDir is set, else
// $XDG_DATA_HOME/lossless, else ~/.local/share/lossless.
func DefaultStoreDir(agentDir string) (string, error) { return config.DefaultStoreDir(agentDir) }

// IsStoreURL reports whether s names a PostgreSQL store (a URL starting
// with postgres:// or postgresql://) rather than a directory.
func IsStoreURL(s string) bool { return config.IsStoreURL(s) }

// RedactURL returns a store URL with its password replaced by "xxxxx", for
// messages and logs (s itself when it does not parse as a URL with a
// password).
func RedactURL(s string) string { return config.RedactURL(s) }

// engineConfig is an open engine's configuration (Engine.cfg): its
// Config, defaults filled, and the tests' seams it was opened with
// (hooks.go), which tests may also set on the open engine.
type engineConfig struct {
	Config
	hooks testHooks
}

// summarizerConfig is Config.SummarizerConfig with the engine's
// Config.Spend (nil: the summarizer's own).
func (c engineConfig) summarizerConfig() (summarize.Config, error) {
	sc, err := c.SummarizerConfig()
	sc.Spend = c.Spend
	return sc, err
}

// validate reports a configuration that Open refuses: no store named
// (StoreDir or StoreURL), or one Config.Validate refuses.
func validate(c Config) error {
	if c.StoreDir == "" && c.StoreURL == "" {
		return fmt.Errorf("lossless: config: storeDir is empty")
	}
	return c.Validate()
}

// storeName names the store in errors: the redacted StoreURL, else
// StoreDir, else "the store".
func storeName(c Config) string {
	switch {
	case c.StoreURL != "":
		return RedactURL(c.StoreURL)
	case c.StoreDir != "":
		return c.StoreDir
	}
	return "the store"
}
