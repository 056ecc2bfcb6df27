package lossless

// The engine's configuration is package lossless/config's: Config and its
// sections, defaults, validation and decoding, which callers name there
// (config.Config, config.Default, config.Parse). What is the engine's own
// stays here: its view of its configuration (engineConfig: the Config with the
// tests' seams), Open's check that a store is named, and the store's name
// in errors.

import (
	"fmt"

	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/summarize"
)

// engineConfig is an open engine's configuration (Engine.cfg): its
// Config, defaults filled, and the tests' seams it was opened with
// (hooks.go), which tests may also set on the open engine.
type engineConfig struct {
	config.Config
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
func validate(c config.Config) error {
	if c.StoreDir == "" && c.StoreURL == "" {
		return fmt.Errorf("lossless: config: storeDir is empty")
	}
	return c.Validate()
}

// storeName names the store in errors: the redacted StoreURL, else
// StoreDir, else "the store".
func storeName(c config.Config) string {
	switch {
	case c.StoreURL != "":
		return config.RedactURL(c.StoreURL)
	case c.StoreDir != "":
		return c.StoreDir
	}
	return "the store"
}
