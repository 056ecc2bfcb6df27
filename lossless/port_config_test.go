package lossless

import (
	"testing"

	"github.com/lossless-engine/contextengine/lossless/config"
)

// TestConfigReexported: the engine's defaults are package config's, and
// the seams a test sets on a Config reach the engine opened with it (a
// copy taken at Open).
func TestConfigReexported(t *testing.T) {
	if DefaultMaxMessageBytes != config.DefaultMaxMessageBytes || DefaultConfig().MaxMessageBytes != DefaultMaxMessageBytes {
		t.Fatalf("DefaultMaxMessageBytes %d, config's %d", DefaultMaxMessageBytes, config.DefaultMaxMessageBytes)
	}
	var cfg Config
	if ec := newEngineConfig(cfg); ec.hooks.indexMaxLag != 0 || ec.hooks.rebuild != nil {
		t.Fatalf("seams without a test: %+v", ec.hooks)
	}
	hooksOf(&cfg).indexMaxLag = 7
	ec := newEngineConfig(cfg)
	hooksOf(&cfg).indexMaxLag = 9
	if ec.hooks.indexMaxLag != 7 || newEngineConfig(cfg).hooks.indexMaxLag != 9 {
		t.Fatalf("seams %d, %d", ec.hooks.indexMaxLag, newEngineConfig(cfg).hooks.indexMaxLag)
	}
	if err := validate(DefaultConfig()); err == nil {
		t.Fatal("no store named, accepted")
	}
	if n := storeName(Config{StoreURL: "postgres://u:pw@h/db", StoreDir: "/d"}); n != "postgres://u:xxxxx@h/db" {
		t.Fatalf("store name %q", n)
	}
}
