package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// manifestSchema is the part of openclaw-plugin/openclaw.plugin.json's
// configSchema the tests read.
type manifestSchema struct {
	Type        string                     `json:"type"`
	Enum        []any                      `json:"enum"`
	Pattern     string                     `json:"pattern"`
	Minimum     *float64                   `json:"minimum"`
	Maximum     *float64                   `json:"maximum"`
	Description string                     `json:"description"`
	Properties  map[string]*manifestSchema `json:"properties"`
}

// manifestConfigSchema reads the plugin manifest's configSchema.
func manifestConfigSchema(t *testing.T) *manifestSchema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "openclaw-plugin", "openclaw.plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ConfigSchema *manifestSchema `json:"configSchema"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.ConfigSchema == nil || len(m.ConfigSchema.Properties) == 0 {
		t.Fatal("the manifest has no configSchema.properties")
	}
	return m.ConfigSchema
}

// manifestSample returns a valid value for the option at path of schema s:
// the value in fixed when there is one there (strings with a pattern or a
// meaning, numbers whose range the engine narrows), else the first enum
// value, a number inside its range, true, or an object of samples of every
// property. It fails the test for a string with a pattern and no fixed
// value, so a new constrained option needs a sample here.
func manifestSample(t *testing.T, path string, s *manifestSchema, fixed map[string]any) any {
	t.Helper()
	if v, ok := fixed[path]; ok {
		return v
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch s.Type {
	case "object":
		obj := map[string]any{}
		for k, p := range s.Properties {
			obj[k] = manifestSample(t, path+"."+k, p, fixed)
		}
		return obj
	case "string":
		if s.Pattern != "" {
			t.Fatalf("manifest option %s has a pattern (%s) and no sample value in the test", path, s.Pattern)
		}
		return "sample"
	case "boolean":
		return true
	case "integer", "number":
		v := 1.0
		if s.Minimum != nil && *s.Minimum > v {
			v = *s.Minimum
		}
		if s.Maximum != nil && *s.Maximum < v {
			v = *s.Maximum
		}
		if s.Type == "number" && (s.Maximum == nil || *s.Maximum > 0.5) {
			v = 0.5
		}
		return v
	case "array":
		return []any{}
	}
	t.Fatalf("manifest option %s: no sample for type %q", path, s.Type)
	return nil
}

// TestDoctorAcceptsManifestOptions: `doctor --config` accepts every option
// the plugin's manifest documents (configSchema.properties, nested ones
// included), each with a valid value: no config problem, no quarantine,
// the plugin-only options (uiAddr, bridge) kept out of the engine's config.
// With every option but storeUrl the store opens and doctor finds nothing;
// with storeUrl too (an unreachable database) the only problem is the
// store's, never the config.
func TestDoctorAcceptsManifestOptions(t *testing.T) {
	t.Parallel()
	schema := manifestConfigSchema(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	writeSession(t, filepath.Join(dir, "s.jsonl"), "opts", 2)
	runCLI(t, "", nil, "import", "--store", store, filepath.Join(dir, "s.jsonl")).want(t, 0)

	// Options whose valid values the schema alone does not give.
	fixed := map[string]any{
		"storeDir":           store,
		"storeUrl":           "postgres://lossless:secret@127.0.0.1:1/none?connect_timeout=1",
		"uiAddr":             "127.0.0.1:0",
		"asyncCommit":        false, // with syncWrites true: both true is refused, by design
		"agentId":            "main",
		"largeContentTokens": 25000,
		"maxMessageBytes":    1 << 20,
		"defaultTokenBudget": 128000,
		"freshTailMessages":  8,
		"leafChunkTokens":    20000, "leafTargetTokens": 2400, "condensedTargetTokens": 2000, "minFanIn": 8,
		"rotateBytes": 2 << 20, "assembleCacheBytes": 32 << 20, "maintainMinTokens": 2000,
		"summarizer.model": "m", "summarizer.baseUrl": "http://127.0.0.1:1/v1", "summarizer.apiKeyEnv": "LOSSLESS_TEST_NO_KEY",
		"summarizer.timeoutMs": 30000, "summarizer.maxRetries": 1, "summarizer.maxOutputTokens": 1000,
		"summarizer.maxCallsPerWindow": 10, "summarizer.windowMs": 60000, "summarizer.breakerFailures": 3, "summarizer.breakerCooldownMs": 60000,
		"recall.minScore":           0.65,
		"retention.intervalMinutes": -1,
		"badger":                    map[string]any{},
		"bridge.command":            "/usr/local/bin/lossless",
		"bridge.args":               []string{"serve", "--stdio"},
		"bridge.env":                map[string]string{"LOSSLESS_LOG": "info"},
		"bridge.maxRestarts":        5, "bridge.startTimeoutMs": 60000,
	}
	all := map[string]any{}
	for k, p := range schema.Properties {
		all[k] = manifestSample(t, k, p, fixed)
	}
	// Every top-level option is named (the sample mirrors the schema).
	var names []string
	for k := range schema.Properties {
		names = append(names, k)
		if _, ok := all[k]; !ok {
			t.Fatalf("no sample for %s", k)
		}
	}
	for _, k := range pluginOnlyOptions {
		if !slices.Contains(names, k) {
			t.Fatalf("plugin-only option %s is not in the manifest's schema", k)
		}
		if d := schema.Properties[k].Description; !strings.Contains(strings.ToLower(d), "not passed to the engine") {
			t.Fatalf("the manifest does not say %s is not passed to the engine: %q", k, d)
		}
	}

	doctor := func(name string, cfg map[string]any) doctorReport {
		t.Helper()
		b, err := json.Marshal(map[string]any{"plugins": map[string]any{
			"slots": map[string]any{"contextEngine": "lossless"}, "entries": map[string]any{"lossless": map[string]any{"enabled": true, "config": cfg}}}})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "", nil, "doctor", "--config", p, "--json")
		var rep doctorReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("doctor --json: %v\n%s\n%s", err, r.stdout, r.stderr)
		}
		for _, p := range rep.Problems {
			if strings.Contains(p, "plugins.entries.lossless.config") || strings.Contains(p, "unknown field") {
				t.Fatalf("%s: a config problem for options the manifest documents: %s\nconfig %s", name, p, b)
			}
		}
		return rep
	}

	// Every option (storeUrl: a database that does not answer).
	rep := doctor("all.json", all)
	if len(rep.Problems) == 0 || !strings.Contains(strings.Join(rep.Problems, "\n"), "127.0.0.1:1") {
		t.Fatalf("with storeUrl, doctor should report the unreachable database: %v", rep.Problems)
	}
	// Every option but storeUrl: nothing to report.
	noURL := map[string]any{}
	for k, v := range all {
		if k != "storeUrl" {
			noURL[k] = v
		}
	}
	rep = doctor("no-url.json", noURL)
	if len(rep.Problems) != 0 || len(rep.Quarantines) != 0 || rep.Engine != "lossless" || rep.Store.Messages != 4 {
		t.Fatalf("every option but storeUrl: engine %q, %d messages, problems %v, quarantines %v", rep.Engine, rep.Store.Messages, rep.Problems, rep.Quarantines)
	}
	if rep.Explorer == nil || rep.Explorer.UIAddr != "127.0.0.1:0" {
		t.Fatalf("the explorer report does not show uiAddr: %+v", rep.Explorer)
	}
}

// TestDoctorConfigProblemIsNotQuarantine: a config the engine refuses
// (an unknown option, a value out of range, a bad uiAddr) is reported as a
// config problem naming the option, not as a quarantine of the engine.
func TestDoctorConfigProblemIsNotQuarantine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	writeSession(t, filepath.Join(dir, "s.jsonl"), "bad", 2)
	runCLI(t, "", nil, "import", "--store", store, filepath.Join(dir, "s.jsonl")).want(t, 0)
	for name, extra := range map[string]string{
		"unknown": `"noSuchOption": 1`,
		"range":   `"contextThreshold": 7`,
		"uiAddr":  `"uiAddr": "0.0.0.0:80"`,
		"bridge":  `"bridge": "lossless"`,
		// the summarizer's settings are checked too: a misspelt cap, a
		// negative one
		"summarizerTypo":  `"summarizer": {"maxTokenPerHour": 1000}`,
		"summarizerRange": `"summarizer": {"maxTokensPerHour": -5}`,
	} {
		p := filepath.Join(dir, name+".json")
		body := `{"plugins":{"slots":{"contextEngine":"lossless"},"entries":{"lossless":{"config":{"storeDir":` + jsonString(store) + `,` + extra + `}}}}}`
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "", nil, "doctor", "--config", p)
		r.want(t, 1, "PROBLEM    plugins.entries.lossless.config: ", strings.SplitN(strings.Trim(extra, `"`), `"`, 2)[0])
		if strings.Contains(r.stdout, "quarantine") && !strings.Contains(r.stdout, "quarantine none") {
			t.Fatalf("%s: a config problem reported as a quarantine:\n%s", name, r.stdout)
		}
		// The store is still checked, with the default config.
		if !strings.Contains(r.stdout, "1 conversations, 4 messages") {
			t.Fatalf("%s: the store was not checked:\n%s", name, r.stdout)
		}
	}
}
