package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/bench"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// tiny shrinks a run further than the flags can, for tests.
func tiny(t *testing.T) func(*bench.Config) {
	return func(c *bench.Config) {
		c.AssembleRuns, c.OneByOne, c.TempDir = 5, 100, t.TempDir()
	}
}

// TestCommandAllSuites runs every suite of the real command at tiny sizes
// and checks the JSON keys the README and the issue promise.
func TestCommandAllSuites(t *testing.T) {
	dir := t.TempDir()
	jsonPath, svgPath, mdPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.svg"), filepath.Join(dir, "BENCHMARKS.md")
	var stdout, stderr bytes.Buffer
	// chars4 counts tokens ~50x faster than tiktoken under -race; the
	// tiktoken path is covered by TestCommandRealTranscripts.
	// The legacy row with the exact counter is covered by
	// TestCommandLegacyRows.
	code := run(context.Background(), []string{"--messages", "250", "--sizes", "100,250", "--budget", "12000", "--tokenizer", "chars4",
		"--legacy-exact=false", "--json", jsonPath, "--plot", svgPath, "--gobench", "--markdown", mdPath}, &stdout, &stderr, false, nil, tiny(t))
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if strings.Contains(stderr.String(), "\r") {
		t.Fatal("progress bar drawn although stderr is not a terminal")
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range bench.Suites {
		if doc[s] == nil {
			t.Errorf("no %q key in the JSON", s)
		}
	}
	num := func(suite, key string) float64 {
		t.Helper()
		v, ok := doc[suite][key].(float64)
		if !ok {
			t.Fatalf("%s.%s missing or not a number", suite, key)
		}
		return v
	}
	if v := num("ingest", "batched_msgs_per_s"); v <= 0 {
		t.Errorf("ingest.batched_msgs_per_s = %v", v)
	}
	p99, _ := doc["assemble"]["p99_ms"].(map[string]any)
	for _, size := range []string{"100", "250"} {
		if v, _ := p99[size].(float64); v <= 0 {
			t.Errorf("assemble.p99_ms[%q] = %v", size, p99[size])
		}
	}
	if v := num("assemble", "p99_ratio_largest_smallest"); v <= 0 {
		t.Errorf("p99 ratio %v", v)
	}
	if v := num("compact", "wall_s"); v <= 0 {
		t.Errorf("compact.wall_s = %v", v)
	}
	if b, a := num("compact", "tokens_before"), num("compact", "tokens_after"); b <= 12000 || a <= 0 || a > 12000 {
		t.Errorf("compact tokens %v -> %v, want from over to under the 12000 budget", b, a)
	}
	// recall@k at the default cut-offs (8: what assemble renders), with and
	// without the speaker's name on each turn.
	for _, key := range []string{"recall_at", "recall_at_no_speaker"} {
		rec, _ := doc["recall"][key].(map[string]any)
		if len(rec) != 5 {
			t.Errorf("recall.%s = %v, want 5 cut-offs", key, rec)
		}
		for _, k := range []string{"5", "8", "10", "25", "50"} {
			if f, ok := rec[k].(float64); !ok || f < 0 || f > 100 {
				t.Errorf("recall.%s[%s] = %v", key, k, rec[k])
			}
		}
	}
	if g, _ := doc["recall"]["gate_no_speaker"].(map[string]any); g["injected_recall_at_8"] == nil || g["unrelated_block_share"] == nil {
		t.Errorf("recall.gate_no_speaker = %v", g)
	}
	if !strings.Contains(stdout.String(), "without the speaker prefix") {
		t.Error("the table has no row without the speaker prefix")
	}
	// The legacy baseline counts with chars4 (the exact row is off here).
	if c := doc["assemble"]["legacy_counter"]; c != "chars4" {
		t.Errorf("assemble.legacy_counter = %v, want chars4", c)
	}
	if l, _ := doc["compact"]["legacy"].(map[string]any); l["counter"] != "chars4" || l["wall_s"] == nil {
		t.Errorf("compact.legacy = %v, want a compaction counted with chars4", l)
	}
	if doc["compact"]["legacy_exact"] != nil || doc["assemble"]["legacy_exact_p99_ms"] != nil {
		t.Errorf("--legacy-exact=false: exact rows %v %v", doc["compact"]["legacy_exact"], doc["assemble"]["legacy_exact_p99_ms"])
	}
	// The relevance gate's figures sit beside recall_at.
	for _, key := range []string{"injected_recall_at_8", "block_share", "no_evidence_share", "unrelated_block_share",
		"unrelated_generic_block_share", "unrelated_cross_block_share"} {
		if v := num("recall", key); v < 0 || v > 100 {
			t.Errorf("recall.%s = %v", key, v)
		}
	}
	if v := num("recall", "unrelated_prompts"); v <= 0 {
		t.Errorf("recall.unrelated_prompts = %v", v)
	}
	if !strings.Contains(stdout.String(), "relevance gate (min score") {
		t.Error("the table has no relevance gate line")
	}
	if v := num("lossless", "lost_or_altered"); v != 0 {
		t.Errorf("lossless.lost_or_altered = %v", v)
	}
	if v := num("footprint", "rss_mb"); v <= 0 {
		t.Errorf("footprint.rss_mb = %v", v)
	}
	if v := num("footprint", "disk_ratio"); v <= 0 {
		t.Errorf("footprint.disk_ratio = %v", v)
	}
	if !strings.Contains(stdout.String(), "BenchmarkAssemble/size=250") {
		t.Error("--gobench printed no assemble line")
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil || !bytes.HasPrefix(svg, []byte("<svg")) {
		t.Fatalf("plot: %v %.40q", err, svg)
	}
	// --markdown: the document docs/BENCHMARKS.md is, from this run: its
	// header names the command, the commit, the machine and the load; a
	// captioned section per suite, with this run's figures in it.
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	checkBenchmarksDoc(t, string(md), bench.Suites)
	for _, want := range []string{"--markdown " + mdPath, "GOMAXPROCS", "| lossless | 250 |",
		fmt.Sprintf("| %.0f | %.0f |", num("compact", "tokens_before"), num("compact", "tokens_after"))} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the Markdown lacks %q", want)
		}
	}
}

// markdownSections maps a suite to the heading WriteMarkdown gives it.
var markdownSections = map[string]string{
	bench.SuiteIngest: bench.MarkdownIngest, bench.SuiteAssemble: bench.MarkdownAssemble, bench.SuiteCompact: bench.MarkdownCompact,
	bench.SuiteRecall: bench.MarkdownRecall, bench.SuiteLossless: bench.MarkdownLossless, bench.SuiteFootprint: bench.MarkdownFootprint,
	bench.SuiteSessions: bench.MarkdownSessions, bench.SuiteSoak: bench.MarkdownSoak, bench.SuiteWindow: bench.MarkdownWindow,
}

// checkBenchmarksDoc checks a document lossless-bench --markdown wrote: the
// header's rows, and for each suite its heading followed by a caption that
// names the suite and a table.
func checkBenchmarksDoc(t *testing.T, md string, suites []string) {
	t.Helper()
	if !strings.HasPrefix(md, "# Benchmarks\n") || !strings.Contains(md, bench.MarkdownGenerated) {
		t.Errorf("not a generated benchmarks document: %.200q", md)
	}
	for _, row := range []string{"| command | `go run ./cmd/lossless-bench ", "| commit | `", "| date | ", "| machine | ", "| load average (1 / 5 / 15 min) | "} {
		if !strings.Contains(md, row) {
			t.Errorf("the header has no row %q", row)
		}
	}
	for _, s := range suites {
		h := markdownSections[s]
		i := strings.Index(md, "\n"+h+"\n")
		if i < 0 {
			t.Errorf("no section %q for suite %s", h, s)
			continue
		}
		rest := md[i+len(h)+2:]
		if next := strings.Index(rest, "\n## "); next >= 0 {
			rest = rest[:next]
		}
		if !strings.Contains(rest, "_Suite `"+s+"` of the command above") || !strings.Contains(rest, "|---|") {
			t.Errorf("section %q has no caption naming suite %s or no table:\n%s", h, s, rest)
		}
		if strings.Contains(rest, "The suite failed") {
			t.Errorf("section %q reports a failed suite:\n%s", h, rest)
		}
	}
}

// TestBenchmarksDoc: docs/BENCHMARKS.md is a document lossless-bench
// --markdown wrote (the main suites, the LoCoMo recall and window suites,
// with the held-out conversation's figures), and every link of the README
// into it names a section it has.
func TestBenchmarksDoc(t *testing.T) {
	root := testutil.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "docs", "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	checkBenchmarksDoc(t, md, append(slices.Clone(bench.Suites), bench.SuiteWindow))
	if strings.Contains(md, "| commit | `unknown` |") || strings.Contains(md, "-dirty` |") {
		t.Error("docs/BENCHMARKS.md was not generated from a committed tree (its commit is unknown or dirty)")
	}
	for _, want := range []string{"**held out** (conv-41)", "held out: verbatim / covered %"} {
		if !strings.Contains(md, want) {
			t.Errorf("docs/BENCHMARKS.md lacks the held-out figures (%q)", want)
		}
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(md, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[githubAnchor(h)] = true
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\(docs/BENCHMARKS\.md(#[^)]*)?\)`).FindAllStringSubmatch(string(readme), -1)
	if len(links) == 0 {
		t.Fatal("the README links nowhere into docs/BENCHMARKS.md")
	}
	for _, l := range links {
		if a := strings.TrimPrefix(l[1], "#"); a != "" && !anchors[a] {
			t.Errorf("the README links to docs/BENCHMARKS.md#%s, a section it does not have", a)
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestCommandLegacyRows: the main legacy row counts the history with
// OpenClaw's chars/4 estimate, the second with the exact counter (in the
// assemble and the compact suite), and --legacy-exact=false leaves the
// second out.
func TestCommandLegacyRows(t *testing.T) {
	const n = 120
	g := synth.New(1) // the assemble suite's history: seed 1, in order
	history := make([]core.Message, n)
	for i := range history {
		m, err := core.ParseMessage(g.Next())
		if err != nil {
			t.Fatal(err)
		}
		history[i] = m
	}
	o200k, err := core.NewCounter(core.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	wantChars4, wantExact := core.EstimateChars4(history), core.CountMessages(o200k, history)
	if wantChars4 == wantExact {
		t.Fatalf("chars4 and o200k agree (%d): the test cannot tell them apart", wantChars4)
	}
	for _, exact := range []bool{true, false} {
		jsonPath := filepath.Join(t.TempDir(), "out.json")
		args := []string{"--suite", "assemble", "--messages", "120", "--sizes", "120", "--budget", "12000", "--json", jsonPath}
		if exact {
			args = append(args, "--suite", "compact")
		} else {
			args = append(args, "--legacy-exact=false")
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr, false, nil, tiny(t)); code != 0 {
			t.Fatalf("exit code %d: %s%s", code, stdout.String(), stderr.String())
		}
		raw, err := os.ReadFile(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Assemble bench.AssembleReport
			Compact  *bench.CompactReport
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		a := doc.Assemble
		if a.LegacyCounter != core.CounterChars4 || a.LegacyTokens["120"] != wantChars4 || a.LegacyP99Ms["120"] <= 0 {
			t.Errorf("legacy row: counter %q, tokens %d (want chars4, %d), p99 %v", a.LegacyCounter, a.LegacyTokens["120"], wantChars4, a.LegacyP99Ms)
		}
		if !strings.Contains(stdout.String(), "legacy, chars4") {
			t.Errorf("the table names no chars4 legacy row:\n%s", stdout.String())
		}
		if !exact {
			if a.LegacyExactCounter != "" || len(a.LegacyExactP99Ms) != 0 {
				t.Errorf("--legacy-exact=false: exact row %q %v", a.LegacyExactCounter, a.LegacyExactP99Ms)
			}
			continue
		}
		if a.LegacyExactCounter != core.EncodingO200k || a.LegacyExactTokens["120"] != wantExact || a.LegacyExactP99Ms["120"] <= 0 {
			t.Errorf("exact row: counter %q, tokens %d (want o200k_base, %d), p99 %v", a.LegacyExactCounter, a.LegacyExactTokens["120"], wantExact, a.LegacyExactP99Ms)
		}
		if !strings.Contains(stdout.String(), "legacy, o200k_base") {
			t.Errorf("the table names no o200k_base legacy row:\n%s", stdout.String())
		}
		c := doc.Compact
		if c == nil || c.Legacy == nil || c.LegacyExact == nil {
			t.Fatalf("compact: %+v, want both legacy rows", c)
		}
		if c.Legacy.Counter != core.CounterChars4 || c.Legacy.TokensBefore != wantChars4 || c.LegacyExact.Counter != core.EncodingO200k || c.LegacyExact.TokensBefore != wantExact {
			t.Errorf("compact legacy rows %+v and %+v: want tokens before %d (chars4) and %d (o200k_base)", *c.Legacy, *c.LegacyExact, wantChars4, wantExact)
		}
	}
}

// TestCommandRealTranscripts imports and compacts the real pi-mono
// transcripts given with --transcripts (skipped when absent).
func TestCommandRealTranscripts(t *testing.T) {
	files := testutil.PiMono(t)
	if raceEnabled {
		files = files[1:] // the smaller one (~1 MB); both take minutes under -race
	}
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	// Transcripts both after --transcripts and as trailing arguments.
	// Recall off: the Bleve path is covered by TestCommandAllSuites.
	args := append([]string{"--suite", "ingest", "--messages", "100", "--engine-recall=false", "--json", jsonPath, "--transcripts"}, files...)
	if len(files) == 2 {
		args = []string{"--suite", "ingest", "--messages", "100", "--engine-recall=false", "--transcripts", files[0], files[1], "--json", jsonPath}
	}
	code := run(context.Background(), args, &stdout, &stderr, false, nil, tiny(t))
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	var rep bench.Report
	raw, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Ingest == nil || len(rep.Ingest.Transcripts) != len(files) {
		t.Fatalf("ingest %+v, want %d transcripts", rep.Ingest, len(files))
	}
	for _, tr := range rep.Ingest.Transcripts {
		if tr.Error != "" || tr.Messages < 900 || tr.Imported != tr.Messages || tr.MsgsPerS <= 0 {
			t.Errorf("transcript %+v: want every message imported", tr)
		}
	}
	if rep.Assemble != nil || rep.Compact != nil {
		t.Error("--suite ingest ran other suites")
	}
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--sizes", "10,x"}, 2, "--sizes"},
		{[]string{"--messages", "-3"}, 2, "--messages"},
		{[]string{"--suite", "ingest,bogus"}, 2, "unknown suite"},
		{[]string{"--budget", "0"}, 2, "--budget"},
		{[]string{"--k", "0"}, 2, "--k"},
		{[]string{"--transcripts", "/nonexistent/x.jsonl"}, 2, "--transcripts"},
		{[]string{"--locomo", "/nonexistent/l.json"}, 2, "--locomo"},
		{[]string{"--nope"}, 2, "flag provided but not defined"},
		{[]string{"--tokenizer", "gpt2"}, 2, "--tokenizer"},
		{[]string{"--suite", "window"}, 2, "--suite window needs --locomo FILE"},
		{[]string{"--suite", "window", "--locomo", "/nonexistent/l.json"}, 2, "--locomo"},
		{[]string{"--budgets", "2000,0"}, 2, "--budgets"},
		{[]string{"--budgets", "2K,x"}, 2, "--budgets"},
		{[]string{"--questions", "-1"}, 2, "--questions"},
		{[]string{"--help"}, 0, "usage: lossless-bench"},
		{[]string{"--help"}, 0, "-window-detail"},
		{[]string{"--help"}, 0, "-budgets"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr, false, nil, nil)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

func TestParseCount(t *testing.T) {
	for in, want := range map[string]int{"10": 10, "10K": 10000, "100k": 100000, "1M": 1000000, "1_000": 1000, " 5 ": 5} {
		if got, err := parseCount(in); err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "K", "0", "-1", "1.5K", "abc", "99999999999999M"} {
		if _, err := parseCount(in); err == nil {
			t.Errorf("parseCount(%q) accepted", in)
		}
	}
	var l listFlag
	_ = l.Set("a, b,,c")
	_ = l.Set("d")
	if l.String() != "a,b,c,d" {
		t.Errorf("listFlag = %q", l.String())
	}
}

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"10", "10K", "1M", "1_000", "", "-5", "9223372036854775807", "1e6"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseCount(s)
		if err == nil && n <= 0 {
			t.Fatalf("parseCount(%q) = %d without error", s, n)
		}
	})
}

// TestProgressBar: the bench's bar (bench.Progress) draws each step's
// name and count within the terminal's width, and Clear erases it.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	var b bench.Progress = newBar(&buf, func() int { return 60 })
	b.Step("ingest: raw Badger", 10)
	for i := 0; i < 10; i++ {
		b.Add(1)
	}
	out := buf.String()
	if !strings.HasPrefix(out, "\ringest: raw Badger [") || !strings.Contains(out, "100% 10/10") {
		t.Fatalf("bar output %q", out)
	}
	for _, line := range strings.Split(out, "\r")[1:] {
		if line = strings.TrimSuffix(line, "\x1b[K"); len(line) > 59 {
			t.Fatalf("bar line %q is %d wide, over 59", line, len(line))
		}
	}
	buf.Reset()
	newBar(&buf, nil).Clear()
	if buf.Len() != 0 {
		t.Fatalf("Clear of a bar never drawn wrote %q", buf.String())
	}
	b.(interface{ Clear() }).Clear()
	if buf.String() != "\r\x1b[K" {
		t.Fatalf("Clear wrote %q", buf.String())
	}
}

// TestCommandWindow runs the window suite of the real command on the
// synthetic LoCoMo fixture and checks the JSON keys the issue names, the
// rows, the table and the detail file.
func TestCommandWindow(t *testing.T) {
	dir := t.TempDir()
	locomoPath := filepath.Join(dir, "locomo.json")
	if err := os.WriteFile(locomoPath, synth.LoCoMo(1, synth.LoCoMoOptions{Conversations: 1, Sessions: 3, Turns: 10}), 0o644); err != nil {
		t.Fatal(err)
	}
	jsonPath, detailPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "detail.jsonl")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--suite", "window", "--locomo", locomoPath, "--budgets", "300,1K",
		"--questions", "4", "--tokenizer", "chars4", "--json", jsonPath, "--window-detail", detailPath}, &stdout, &stderr, false, nil, tiny(t))
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Window struct {
			Questions int                          `json:"questions"`
			Budgets   []int                        `json:"budgets"`
			Rows      []map[string]json.RawMessage `json:"rows"`
		} `json:"window"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	w := doc.Window
	if w.Questions != 4 || len(w.Budgets) != 2 || w.Budgets[0] != 300 || w.Budgets[1] != 1000 {
		t.Fatalf("window: %d questions, budgets %v; want 4 (--questions 4, one conversation) and [300 1000]", w.Questions, w.Budgets)
	}
	var engines []string
	for _, r := range w.Rows {
		for _, k := range []string{"budget", "engine", "evidence_verbatim_pct", "evidence_covered_pct", "questions_all_evidence_pct", "summary_covered_pct", "tokens"} {
			if _, ok := r[k]; !ok {
				t.Errorf("row %v has no %q", r, k)
			}
		}
		var e string
		_ = json.Unmarshal(r["engine"], &e)
		engines = append(engines, e)
	}
	want := "lossless lossless-no-recall legacy recency lossless lossless-no-recall legacy recency"
	if got := strings.Join(engines, " "); got != want {
		t.Errorf("rows %q, want %q", got, want)
	}
	for _, s := range []string{"WINDOW", "lossless-no-recall", "recency", "summary-covered"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("table without %q", s)
		}
	}
	detail, err := os.ReadFile(detailPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(detail), "\n"); n != 4*len(w.Rows) {
		t.Errorf("%d detail lines, want %d (4 questions × %d rows)", n, 4*len(w.Rows), len(w.Rows))
	}
}
