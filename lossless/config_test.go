package lossless

import (
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/lossless/config"
)

// TestConfigReexported: the engine's defaults are package config's, and
// the seams a test opens an engine with reach it (Open's engine runs with
// none).
func TestConfigReexported(t *testing.T) {
	if DefaultMaxMessageBytes != config.DefaultMaxMessageBytes || config.Default().MaxMessageBytes != DefaultMaxMessageBytes {
		t.Fatalf("DefaultMaxMessageBytes %d, config's %d", DefaultMaxMessageBytes, config.DefaultMaxMessageBytes)
	}
	if e := openTest(t); e.cfg.hooks.indexMaxLag != 0 || e.cfg.hooks.rebuild != nil {
		t.Fatalf("seams without a test: %+v", e.cfg.hooks)
	}
	if e := openTestHooked(t, testHooks{indexMaxLag: 7, retentionFirst: time.Second}); e.cfg.hooks.indexMaxLag != 7 || e.cfg.hooks.retentionFirst != time.Second {
		t.Fatalf("seams %+v", e.cfg.hooks)
	}
	if err := validate(config.Default()); err == nil {
		t.Fatal("no store named, accepted")
	}
	if n := storeName(config.Config{StoreURL: "postgres://u:pw@h/db", StoreDir: "/d"}); n != "postgres://u:xxxxx@h/db" {
		t.Fatalf("store name %q", n)
	}
}
