package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorShowsSummarizer: `doctor --config` says which summarizer the
// plugin's engine uses and what it may spend: OpenClaw's model by default
// with the default hourly cap and the extractive fallback, the configured
// cap when one is set without a kind, the extractive summarizer (no cap)
// when configured so.
func TestDoctorShowsSummarizer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	writeSession(t, filepath.Join(dir, "s.jsonl"), "sum", 2)
	runCLI(t, "", nil, "import", "--store", store, filepath.Join(dir, "s.jsonl")).want(t, 0)
	for _, tc := range []struct {
		name, summarizer string
		want             summarizerReport
		line             string
	}{
		{"default", "", summarizerReport{Kind: "host", Default: true, Fallback: "extractive", MaxCallsPerHour: 120, MaxTokensPerHour: 1_000_000},
			"summarizer host (OpenClaw's model for the session, the plugin's default): at most 120 calls and 1000000 tokens an hour per engine process, the extractive summarizer beyond that"},
		{"cap", `"summarizer": {"maxCallsPerHour": -1, "maxTokensPerHour": 50000},`, summarizerReport{Kind: "host", Default: true, Fallback: "extractive", MaxCallsPerHour: -1, MaxTokensPerHour: 50_000},
			"at most unlimited calls and 50000 tokens an hour"},
		{"extractive", `"summarizer": {"kind": "extractive"},`, summarizerReport{Kind: "extractive"},
			"summarizer extractive (offline, no model calls)\n"},
	} {
		p := filepath.Join(dir, tc.name+".json")
		body := `{"plugins":{"slots":{"contextEngine":"lossless"},"entries":{"lossless":{"config":{` + tc.summarizer + `"storeDir":` + jsonString(store) + `}}}}}`
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "", nil, "doctor", "--config", p)
		if !strings.Contains(r.stdout, tc.line) {
			t.Errorf("%s: doctor does not say %q:\n%s", tc.name, tc.line, r.stdout)
		}
		r = runCLI(t, "", nil, "doctor", "--config", p, "--json")
		var rep doctorReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, r.stdout)
		}
		if rep.Summarizer == nil || *rep.Summarizer != tc.want {
			t.Errorf("%s: summarizer %+v, want %+v", tc.name, rep.Summarizer, tc.want)
		}
	}
}
