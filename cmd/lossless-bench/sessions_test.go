package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandSessions runs the sessions suite of the real command small
// (200 conversations) and checks its JSON figures and table rows: every
// conversation bootstrapped and visited twice, the heap and the assemble
// latencies present and plausible.
func TestCommandSessions(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--suite", "sessions", "--sessions", "200", "--budget", "16000",
		"--tokenizer", "chars4", "--json", jsonPath, "--gobench"}, &stdout, &stderr, false, nil, tiny(t))
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc["sessions"]
	if s == nil {
		t.Fatalf("no sessions key in the JSON: %s", raw)
	}
	num := func(key string) float64 {
		t.Helper()
		v, ok := s[key].(float64)
		if !ok {
			t.Fatalf("sessions.%s missing or not a number: %v", key, s[key])
		}
		return v
	}
	if n := num("conversations"); n != 200 {
		t.Errorf("sessions.conversations %v, want 200", n)
	}
	if n := num("assembles"); n != 400 {
		t.Errorf("sessions.assembles %v, want 400 (two turns of each conversation)", n)
	}
	if n := num("messages"); n != 200*(16+4) {
		t.Errorf("sessions.messages %v, want %d", n, 200*(16+4))
	}
	heap, peak := num("heap_mb"), num("heap_peak_mb")
	if heap <= 0 || heap > 1024 || peak <= 0 || peak > 4096 {
		t.Errorf("sessions.heap_mb %v, heap_peak_mb %v: not plausible", heap, peak)
	}
	p50, p99 := num("assemble_p50_ms"), num("assemble_p99_ms")
	if p50 <= 0 || p99 < p50 || p99 > 60_000 {
		t.Errorf("sessions.assemble_p50_ms %v, assemble_p99_ms %v: not plausible", p50, p99)
	}
	for _, want := range []string{"SESSIONS   200 conversations", "BenchmarkSessions"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, other := range []string{"ingest", "assemble", "footprint"} {
		if doc[other] != nil {
			t.Errorf("--suite sessions also ran %s", other)
		}
	}
}
