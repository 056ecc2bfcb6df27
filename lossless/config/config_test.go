package config

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/summarize"
)

// TestParse: nothing (or null) gives the defaults; a field set is kept and
// the others filled; an unknown field or a wrong type is refused.
func TestParse(t *testing.T) {
	for _, raw := range []string{``, `  `, `null`, `{}`} {
		c, err := Parse(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if d := Default(); c.AgentID != d.AgentID || c.Tokenizer != d.Tokenizer || c.MaxMessageBytes != DefaultMaxMessageBytes ||
			c.Recall != d.Recall || c.Badger != d.Badger || c.DefaultTokenBudget != DefaultTokenBudget {
			t.Errorf("%q: %+v, want the defaults", raw, c)
		}
	}
	c, err := Parse(json.RawMessage(`{"tokenizer":"chars4","freshTailMessages":10,"badger":{"memTableSize":4194304},"storeUrl":"postgres://u:pw@db.example/lossless"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tokenizer != core.CounterChars4 || c.FreshTailMessages != 10 || c.Badger.MemTableSize != 4<<20 ||
		c.Badger.ValueLogFileSize != 64<<20 || c.LeafChunkTokens != DefaultLeafChunkTokens || c.StoreURL != "postgres://u:pw@db.example/lossless" {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`{"storDir":"typo"}`, `{"recall":{"enabled":"yes"}}`, `{"host":"openclaw"}`, `[1]`} {
		if _, err := Parse(json.RawMessage(raw)); err == nil || !strings.HasPrefix(err.Error(), "lossless: config: ") {
			t.Errorf("%s: err %v, want a config error", raw, err)
		}
	}
}

// TestRecallEnabled: recall is on unless "enabled" is false.
func TestRecallEnabled(t *testing.T) {
	for raw, want := range map[string]bool{
		``: true, `{}`: true, `{"recall":{}}`: true, `{"recall":{"k":3}}`: true,
		`{"recall":{"enabled":true}}`: true, `{"recall":{"enabled":false}}`: false,
	} {
		c, err := Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if c.RecallEnabled() != want {
			t.Errorf("%s: recall enabled %v, want %v", raw, c.RecallEnabled(), want)
		}
	}
	if _, err := Parse([]byte(`{"recall":{"enabled":"yes"}}`)); err == nil {
		t.Error("a string for recall.enabled accepted")
	}
}

// TestWithDefaults: zero (and negative) fields take their defaults, set
// ones stay.
func TestWithDefaults(t *testing.T) {
	c := Config{AgentID: "ops", MinFanIn: -3, ContextThreshold: 0.5, Badger: BadgerConfig{NumMemtables: 5}}.WithDefaults()
	if c.AgentID != "ops" || c.MinFanIn != DefaultMinFanIn || c.ContextThreshold != 0.5 || c.Badger.NumMemtables != 5 ||
		c.Badger.MemTableSize != 8<<20 || c.RotateBytes != DefaultRotateBytes || c.Recall.K != Default().Recall.K {
		t.Fatalf("with defaults: %+v", c)
	}
	if d := Default(); d.WithDefaults().Badger != d.Badger || d.StoreDir != "" {
		t.Fatalf("Default is not its own defaults: %+v", d)
	}
}

// TestValidate: each check refuses what it names, with the package's
// prefix and without the store URL's password.
func TestValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for want, mutate := range map[string]func(*Config){
		"storeUrl":                   func(c *Config) { c.StoreURL = "mysql://u:pw@db/x" },
		"syncWrites and asyncCommit": func(c *Config) { c.SyncWrites, c.AsyncCommit = true, true },
		"contextThreshold 1.5":       func(c *Config) { c.ContextThreshold = 1.5 },
		"maxMessageBytes":            func(c *Config) { c.MaxMessageBytes = 40 << 20 },
		"recall.share 2":             func(c *Config) { c.Recall.Share = 2 },
		"recall.questionShare 0.95":  func(c *Config) { c.Recall.QuestionShare = 0.95 },
		"retention":                  func(c *Config) { c.Retention.IntervalMinutes = -2 },
		`unknown field "maxTokenPerHour"`: func(c *Config) {
			c.Summarizer = json.RawMessage(`{"maxTokenPerHour":5}`)
		},
		`contextProjection "sometimes"`: func(c *Config) { c.ContextProjection = "sometimes" },
		`unknown tokenizer "nope"`:      func(c *Config) { c.Tokenizer = "nope" },
	} {
		c := Default()
		mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "lossless: config: ") || strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: Validate %v", want, err)
		}
	}
}

// TestSummarizerConfig: the kind defaults to extractive, to the host's
// model under OpenClaw, also for an object without "kind".
func TestSummarizerConfig(t *testing.T) {
	for _, tc := range []struct {
		host, raw, kind string
		perHour         int
	}{
		{"", ``, summarize.KindExtractive, 0},
		{"", `null`, summarize.KindExtractive, 0},
		{core.HostOpenClaw, ``, summarize.KindHost, 0},
		{core.HostOpenClaw, `{"maxTokensPerHour":200000}`, summarize.KindHost, 200000},
		{core.HostOpenClaw, `{"kind":"extractive"}`, summarize.KindExtractive, 0},
	} {
		c := Default()
		c.Host, c.Summarizer = tc.host, json.RawMessage(tc.raw)
		sc, err := c.SummarizerConfig()
		if err != nil || sc.Kind != tc.kind || sc.MaxTokensPerHour != tc.perHour {
			t.Errorf("host %q, %s: %+v %v", tc.host, tc.raw, sc, err)
		}
	}
}

// TestBadgerOptions: the store's directory, sync and read-only settings
// and the Badger sizes.
func TestBadgerOptions(t *testing.T) {
	c := Default()
	c.StoreDir, c.SyncWrites, c.ReadOnly = "/s", true, true
	o := c.BadgerOptions()
	if o.Dir != "/s" || !o.SyncWrites || !o.ReadOnly || o.MemTableSize != 8<<20 || o.ValueLogFileSize != 64<<20 ||
		o.BlockCacheSize != 8<<20 || o.IndexCacheSize != 4<<20 || o.NumMemtables != 2 {
		t.Fatalf("options %+v", o)
	}
}

// TestStoreURL: RedactURL hides a password (also in a URL that does not
// parse); IsStoreURL tells a PostgreSQL URL from a directory.
func TestStoreURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h/db":      "postgres://u:xxxxx@h/db",
		"postgresql://u@h/db":       "postgresql://u@h/db",
		"postgres://u:pw@[::1/db":   "postgres://xxxxx@[::1/db",
		"/var/lib/lossless":         "/var/lib/lossless",
		"postgres:///db?host=/sock": "postgres:///db?host=/sock",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	for s, want := range map[string]bool{"postgres://h/db": true, "postgresql://h/db": true, "/tmp/postgres://": false, "": false} {
		if IsStoreURL(s) != want {
			t.Errorf("IsStoreURL(%q) = %v", s, !want)
		}
	}
}

// TestDefaultStoreDir: <agentDir>/lossless, else $XDG_DATA_HOME/lossless,
// else ~/.local/share/lossless.
func TestDefaultStoreDir(t *testing.T) {
	if d, err := DefaultStoreDir("/agents/a"); err != nil || d != filepath.Join("/agents/a", "lossless") {
		t.Fatalf("agent dir: %q %v", d, err)
	}
	t.Setenv("XDG_DATA_HOME", "/data")
	if d, err := DefaultStoreDir(""); err != nil || d != "/data/lossless" {
		t.Fatalf("XDG: %q %v", d, err)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/x")
	if d, err := DefaultStoreDir(""); err != nil || d != "/home/x/.local/share/lossless" {
		t.Fatalf("home: %q %v", d, err)
	}
}
