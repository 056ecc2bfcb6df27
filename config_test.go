package contextengine

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

func TestLoadConfigJSON5(t *testing.T) {
	c, err := LoadConfig(filepath.Join("testdata", "openclaw", "openclaw.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Plugins.Slots.ContextEngine == nil || *c.Plugins.Slots.ContextEngine != "lossless" {
		t.Fatalf("slot = %v", c.Plugins.Slots.ContextEngine)
	}
	if c.Plugins.Enabled == nil || !*c.Plugins.Enabled {
		t.Fatal("plugins.enabled not read")
	}
	if !reflect.DeepEqual(c.Plugins.Deny, []string{"evil-engine"}) {
		t.Fatalf("deny = %v", c.Plugins.Deny)
	}
	if e := c.Plugins.Entries["other-engine"]; e.Enabled == nil || *e.Enabled {
		t.Fatal("quoted entry key with enabled:false not read")
	}
	res := c.Resolve()
	if res.EngineID != "lossless" || res.Reason != ReasonConfigured {
		t.Fatalf("resolution = %+v", res)
	}
	var got, want any
	if err := json.Unmarshal(res.Options.Config, &got); err != nil {
		t.Fatalf("entry config is not JSON: %v (%s)", err, res.Options.Config)
	}
	_ = json.Unmarshal([]byte(`{"freshTailMessages":64,"store":{"path":"~/.lossless"},"ratio":0.75}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("entry config = %s", res.Options.Config)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	if _, err := LoadConfig(filepath.Join("testdata", "openclaw", "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := LoadConfig(filepath.Join("testdata", "openclaw", "invalid.json")); !errors.Is(err, ErrConfig) {
		t.Fatalf("invalid file: %v", err)
	}
	if _, err := ParseConfig([]byte(`[1,2]`)); !errors.Is(err, ErrConfig) {
		t.Fatalf("array top level: %v", err)
	}
	if _, err := ParseConfig([]byte(`{plugins: {deny: "notalist"}}`)); !errors.Is(err, ErrConfig) {
		t.Fatalf("wrong type: %v", err)
	}
}

func TestResolveSlot(t *testing.T) {
	tests := []struct {
		name   string
		json5  string
		engine string
		reason string
		slot   string
	}{
		{"absent", `{}`, LegacyID, ReasonDefault, ""},
		{"no plugins slots", `{plugins: {}}`, LegacyID, ReasonDefault, ""},
		{"empty", `{plugins: {slots: {contextEngine: ""}}}`, LegacyID, ReasonDefault, ""},
		{"legacy", `{plugins: {slots: {contextEngine: "legacy"}}}`, LegacyID, ReasonDefault, "legacy"},
		{"none", `{plugins: {slots: {contextEngine: "none"}}}`, LegacyID, ReasonDefault, "none"},
		{"custom", `{plugins: {slots: {contextEngine: "lossless"}}}`, "lossless", ReasonConfigured, "lossless"},
		{"disabled globally", `{plugins: {enabled: false, slots: {contextEngine: "lossless"}}}`, LegacyID, ReasonPluginsDisabled, "lossless"},
		{"denied", `{plugins: {deny: ["a", "lossless"], slots: {contextEngine: "lossless"}}}`, LegacyID, ReasonDenied, "lossless"},
		{"entry disabled", `{plugins: {slots: {contextEngine: "lossless"}, entries: {lossless: {enabled: false}}}}`, LegacyID, ReasonEntryDisabled, "lossless"},
		{"re-enabled", `{plugins: {enabled: true, slots: {contextEngine: "lossless"}, entries: {lossless: {enabled: true}}}}`, "lossless", ReasonConfigured, "lossless"},
		{"other entry disabled", `{plugins: {slots: {contextEngine: "lossless"}, entries: {x: {enabled: false}}}}`, "lossless", ReasonConfigured, "lossless"},
		{"deny another id", `{plugins: {deny: ["x"], slots: {contextEngine: "lossless"}}}`, "lossless", ReasonConfigured, "lossless"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.json5))
			if err != nil {
				t.Fatal(err)
			}
			res := c.Resolve()
			if res.EngineID != tc.engine || res.Reason != tc.reason || res.Slot != tc.slot {
				t.Fatalf("Resolve() = engine %q reason %q slot %q, want %q %q %q",
					res.EngineID, res.Reason, res.Slot, tc.engine, tc.reason, tc.slot)
			}
			if res.Detail == "" {
				t.Fatal("no detail for doctor")
			}
			if res.Fallback() != (tc.engine == LegacyID && tc.reason != ReasonDefault) {
				t.Fatalf("Fallback() = %v", res.Fallback())
			}
		})
	}
}

func TestReEnableRestoresEngine(t *testing.T) {
	c, err := ParseConfig([]byte(`{plugins: {enabled: false, slots: {contextEngine: "lossless"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Resolve().EngineID; got != LegacyID {
		t.Fatalf("disabled: %s", got)
	}
	c.Plugins.Enabled = boolp(true)
	if res := c.Resolve(); res.EngineID != "lossless" || res.Slot != "lossless" {
		t.Fatalf("re-enabled: %+v", res)
	}
}

func TestFactoryGetsOptions(t *testing.T) {
	r := NewRegistry()
	var got core.FactoryOptions
	if err := r.Register("lossless", func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
		got = o
		return newFake("lossless"), nil
	}, "acme"); err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig([]byte(`{plugins: {slots: {contextEngine: "lossless"}, entries: {lossless: {config: {a: [1, 2,],},},},},}`))
	if err != nil {
		t.Fatal(err)
	}
	c.AgentDir, c.WorkspaceDir = "/agents/main", "/ws"
	g, err := r.Open(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if g.Quarantined() || g.Info().ID != "lossless" {
		t.Fatalf("engine not selected: %+v", g.Resolution())
	}
	if string(got.Config) != `{"a":[1,2]}` || got.AgentDir != "/agents/main" || got.WorkspaceDir != "/ws" {
		t.Fatalf("factory options = %+v (config %s)", got, got.Config)
	}
}

func TestUninstallResetsSlot(t *testing.T) {
	c, err := ParseConfig([]byte(`{plugins: {slots: {contextEngine: "lossless"}, entries: {lossless: {config: {}}, other: {}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Uninstall("other") || c.Resolve().EngineID != "lossless" {
		t.Fatal("uninstalling another plugin touched the slot")
	}
	if !c.Uninstall("lossless") {
		t.Fatal("slot not reset")
	}
	if res := c.Resolve(); res.EngineID != LegacyID || res.Reason != ReasonDefault || res.SlotSet {
		t.Fatalf("after uninstall %+v", res)
	}
	if _, ok := c.Plugins.Entries["lossless"]; ok {
		t.Fatal("entry kept")
	}
}
