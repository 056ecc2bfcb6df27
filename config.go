package contextengine

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/titanous/json5"

	"github.com/lossless-engine/contextengine/core"
)

// Config is the part of openclaw.json the context-engine slot reads, plus
// the host's directories (not read from the file).
type Config struct {
	Plugins PluginsConfig `json:"plugins"`

	// AgentDir and WorkspaceDir are handed to the factory. The host sets
	// them; they are not part of openclaw.json.
	AgentDir     string `json:"-"`
	WorkspaceDir string `json:"-"`
}

// PluginsConfig is openclaw.json's "plugins" object.
type PluginsConfig struct {
	// Enabled false turns every plugin off (nil means true).
	Enabled *bool `json:"enabled,omitempty"`
	// Deny lists plugin ids that must not run.
	Deny []string `json:"deny,omitempty"`
	// Slots holds the exclusive slots.
	Slots SlotsConfig `json:"slots"`
	// Entries holds per-plugin settings by id.
	Entries map[string]PluginEntry `json:"entries,omitempty"`
}

// SlotsConfig is plugins.slots.
type SlotsConfig struct {
	// ContextEngine picks the engine id; nil, "", "legacy" and "none" mean
	// legacy.
	ContextEngine *string `json:"contextEngine,omitempty"`
	// Memory is the separate memory slot (not used here).
	Memory *string `json:"memory,omitempty"`
}

// PluginEntry is plugins.entries.<id>.
type PluginEntry struct {
	// Enabled false disables the plugin (nil means enabled).
	Enabled *bool `json:"enabled,omitempty"`
	// Config is the plugin's own configuration, raw JSON.
	Config json.RawMessage `json:"config,omitempty"`
}

// ParseConfig decodes openclaw.json text. JSON5 is accepted: comments,
// unquoted keys, single quotes, trailing commas.
func ParseConfig(data []byte) (*Config, error) {
	var tree any
	if err := json5.Unmarshal(data, &tree); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, fmt.Errorf("%w: top level is not an object", ErrConfig)
	}
	plain, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	var c Config
	if err := json.Unmarshal(plain, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return &c, nil
}

// LoadConfig reads and parses the openclaw.json at path. A missing file
// yields an error wrapping fs.ErrNotExist.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("contextengine: load config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Why an engine was selected (Resolution.Reason).
const (
	// ReasonDefault: the slot is absent, "", "legacy" or "none".
	ReasonDefault = "default"
	// ReasonConfigured: the slot names the engine and nothing disables it.
	ReasonConfigured = "configured"
	// ReasonPluginsDisabled: plugins.enabled is false.
	ReasonPluginsDisabled = "plugins-disabled"
	// ReasonDenied: the slot's id is in plugins.deny.
	ReasonDenied = "denied"
	// ReasonEntryDisabled: plugins.entries.<id>.enabled is false.
	ReasonEntryDisabled = "entry-disabled"
	// ReasonQuarantined: the engine failed to resolve or failed earlier in
	// this process (Open sets it; see Registry.Quarantines).
	ReasonQuarantined = "quarantined"
)

// Resolution says which engine serves runs and why.
type Resolution struct {
	// Slot is plugins.slots.contextEngine as configured ("" when absent);
	// it is kept when the engine is disabled, so re-enabling restores it.
	Slot string `json:"slot"`
	// SlotSet reports whether the slot is present in the config.
	SlotSet bool `json:"slotSet"`
	// EngineID is the engine that serves runs.
	EngineID string `json:"engineId"`
	// Reason is one of the Reason constants.
	Reason string `json:"reason"`
	// Detail is a sentence for humans (the CLI's doctor).
	Detail string `json:"detail"`
	// Options is what the factory receives.
	Options core.FactoryOptions `json:"options"`
}

// Fallback reports whether a configured engine was replaced by legacy.
func (r Resolution) Fallback() bool {
	return r.EngineID == LegacyID && r.Reason != ReasonDefault
}

// Resolve picks the engine for the contextEngine slot (CONTRACT §4). It does
// not consult a registry; Registry.Open does. A nil Config means defaults.
func (c *Config) Resolve() Resolution {
	if c == nil {
		c = &Config{}
	}
	res := Resolution{EngineID: LegacyID, Reason: ReasonDefault}
	if s := c.Plugins.Slots.ContextEngine; s != nil {
		res.Slot, res.SlotSet = *s, true
	}
	res.Options = core.FactoryOptions{AgentDir: c.AgentDir, WorkspaceDir: c.WorkspaceDir}
	switch res.Slot {
	case "", LegacyID, "none":
		res.Detail = "the contextEngine slot selects the default engine (legacy)"
		if !res.SlotSet {
			res.Detail = "no contextEngine slot is configured; using legacy"
		}
		return res
	}
	id := res.Slot
	entry := c.Plugins.Entries[id]
	switch {
	case c.Plugins.Enabled != nil && !*c.Plugins.Enabled:
		res.Reason = ReasonPluginsDisabled
		res.Detail = fmt.Sprintf("plugins.enabled is false; %q stays in the slot but legacy runs", id)
	case slices.Contains(c.Plugins.Deny, id):
		res.Reason = ReasonDenied
		res.Detail = fmt.Sprintf("%q is listed in plugins.deny; legacy runs", id)
	case entry.Enabled != nil && !*entry.Enabled:
		res.Reason = ReasonEntryDisabled
		res.Detail = fmt.Sprintf("plugins.entries.%s.enabled is false; legacy runs", id)
	default:
		res.EngineID, res.Reason = id, ReasonConfigured
		res.Detail = fmt.Sprintf("the contextEngine slot selects %q", id)
		if len(entry.Config) > 0 {
			res.Options.Config = append(json.RawMessage(nil), entry.Config...)
		}
	}
	return res
}

// Uninstall records that plugin id was uninstalled: its entry is removed
// and, when it held the contextEngine slot, the slot is reset to the default
// (CONTRACT §4). It reports whether the slot was reset.
func (c *Config) Uninstall(id string) bool {
	delete(c.Plugins.Entries, id)
	if s := c.Plugins.Slots.ContextEngine; s != nil && *s == id && id != "" {
		c.Plugins.Slots.ContextEngine = nil
		return true
	}
	return false
}
