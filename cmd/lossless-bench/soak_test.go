package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/internal/bench"
)

// TestCommandSoak runs the soak suite of the real command in-process for
// 20 s (the real engine on a temporary Badger store, default config,
// recall on) and fails when the live heap grows beyond the suite's
// tolerance from the middle third of the run to the last, or when the
// workload did not do what a gateway does: sessions arriving and going
// idle, imports, assembles with recall blocks, subagents ended and rolled
// back, compactions. Under the race detector (tenfold slower, so the
// caches are still filling at the end) it runs 10 s and checks the
// workload only. Skipped with -short.
func TestCommandSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs for 20 s; skipped with -short")
	}
	duration, sample := "20s", "250ms"
	if raceEnabled {
		duration = "10s"
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "soak.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--suite", "soak", "--soak-duration", duration, "--soak-sample", sample,
		"--json", jsonPath, "--gobench"}, &stdout, &stderr, false, nil, tiny(t))
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Soak *bench.SoakReport `json:"soak"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Soak
	if s == nil {
		t.Fatalf("no soak key in the JSON: %s", raw)
	}
	if s.Error != "" && !strings.Contains(s.Error, bench.ErrNotFlat.Error()) && !strings.Contains(s.Error, bench.ErrTooFewSamples.Error()) {
		t.Fatalf("soak failed: %s", s.Error)
	}
	// The workload: what a long-lived gateway does.
	for _, c := range []struct {
		name string
		n    int
	}{{"sessions", s.Sessions}, {"imported", s.Imported}, {"turns", s.Turns}, {"assembles", s.Assembles},
		{"recall_blocks", s.RecallBlocks}, {"subagents", s.Subagents}, {"summaries", s.Summaries}} {
		if c.n <= 0 {
			t.Errorf("soak.%s = %d, want > 0", c.name, c.n)
		}
	}
	if !raceEnabled && (s.Idle <= 0 || s.Rollbacks <= 0) {
		t.Errorf("soak: %d sessions gone idle, %d spawns rolled back; want both > 0", s.Idle, s.Rollbacks)
	}
	// Each sample forces a collection: under the race detector on a
	// loaded machine a 10 s run took 6 (every 2 s); the verdict is not
	// checked there, only that the sampler ran.
	wantSamples := 10
	if raceEnabled {
		wantSamples = 3
	}
	if len(s.Samples) < wantSamples {
		t.Fatalf("soak: %d heap samples, want ≥ %d", len(s.Samples), wantSamples)
	}
	for _, x := range s.Samples {
		if x.LiveMB <= 0 || x.AllocMB < x.LiveMB/2 || x.InuseMB <= 0 {
			t.Fatalf("soak: implausible heap sample %+v", x)
		}
	}
	if !strings.Contains(stdout.String(), "SOAK ") || !strings.Contains(stdout.String(), "BenchmarkSoak") {
		t.Errorf("output lacks the SOAK rows or the BenchmarkSoak line")
	}
	if raceEnabled {
		return
	}
	// The heap: flat within the documented tolerance.
	if !s.Flat || code != 0 {
		t.Fatalf("live heap not flat (exit code %d): middle third %.1f MB, last third %.1f MB (%+.1f), slope %.2f MB/min (%+.1f MB over the second half), tolerance %.1f MB",
			code, s.HeapMiddleMB, s.HeapLastMB, s.GrowthMB, s.SlopeMBPerMin, s.SlopeRiseMB, s.ToleranceMB)
	}
}

// TestSoakFlatness checks the soak suite's verdict on made-up samples: a
// steady heap with noise passes, one that grows by 1 MB a second fails.
func TestSoakFlatness(t *testing.T) {
	mk := func(f func(t float64) float64) *bench.SoakReport {
		r := &bench.SoakReport{}
		for i := 0; i < 60; i++ {
			ts := float64(i)
			r.Samples = append(r.Samples, bench.HeapSample{T: ts, LiveMB: f(ts)})
		}
		return r
	}
	steady := mk(func(ts float64) float64 { return 40 + float64(int(ts)%5) })
	if steady.Judge(60); !steady.Flat {
		t.Errorf("steady heap judged not flat: %+v", steady)
	}
	leak := mk(func(ts float64) float64 { return 40 + ts })
	if leak.Judge(60); leak.Flat {
		t.Errorf("a heap growing 60 MB/min judged flat: growth %.1f MB, slope %.1f MB/min", leak.GrowthMB, leak.SlopeMBPerMin)
	}
	// One sample (a sampler starved by the machine's load): no verdict,
	// not a growth from an empty middle third.
	starved := &bench.SoakReport{Samples: []bench.HeapSample{{T: 3.9, LiveMB: 37}}}
	if starved.Judge(4); starved.Flat || starved.MiddleSamples != 0 || starved.LastSamples != 1 {
		t.Errorf("one sample judged: flat %v, %d and %d samples", starved.Flat, starved.MiddleSamples, starved.LastSamples)
	}
}

// TestCommandSoakHeapProfiles runs a short soak with --heap-profile and
// --soak-profile-every and checks that it writes the profiles it
// documents (FILE.middle, FILE, FILE.flushed and the numbered ones), each
// a gzipped pprof profile; --soak-profile-every without --heap-profile is
// a usage error.
func TestCommandSoakHeapProfiles(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--suite", "soak", "--soak-profile-every", "1s"}, &stdout, &stderr, false, nil, tiny(t)); code != 2 ||
		!strings.Contains(stderr.String(), "--heap-profile") {
		t.Errorf("--soak-profile-every without --heap-profile: exit %d, stderr %q; want 2 naming --heap-profile", code, stderr.String())
	}
	if testing.Short() {
		t.Skip("the soak runs for 3 s; skipped with -short")
	}
	rate := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = rate })
	dir := t.TempDir()
	prof := filepath.Join(dir, "heap.pprof")
	stdout.Reset()
	stderr.Reset()
	run(context.Background(), []string{"--suite", "soak", "--soak-duration", "3s", "--soak-sample", "200ms",
		"--heap-profile", prof, "--soak-profile-every", "1s"}, &stdout, &stderr, false, nil, tiny(t))
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	names := []string{prof + ".middle", prof, prof + ".flushed", prof + ".000", prof + ".001"}
	if raceEnabled {
		// Each sample forces a collection and a profile at 4 KiB sampling:
		// under the race detector on a loaded machine the 3 s soak may
		// sample once, so one numbered profile is all it can write.
		names = names[:4]
	}
	for _, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("profile: %v", err)
			continue
		}
		if len(raw) < 100 || raw[0] != 0x1f || raw[1] != 0x8b {
			t.Errorf("%s: %d bytes, not a gzipped profile", name, len(raw))
		}
	}
}
