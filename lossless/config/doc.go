// Package config is the lossless engine's configuration: Config (the JSON
// object at plugins.entries.lossless.config in openclaw.json) with its
// sections (recall, retention, Badger), its defaults (Default,
// Config.WithDefaults), its validation (Config.Validate) and its decoding
// from JSON (Parse, unknown fields refused), plus where a store lives
// (DefaultStoreDir, IsStoreURL, RedactURL).
//
// It does one job: say what a configuration means and whether it can work,
// before anything is opened. It never imports package lossless, which takes
// a Config in Open and re-exports none of it: callers write config.Config,
// config.Default and config.Parse.
package config
