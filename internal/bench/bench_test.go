package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

func tinyConfig(t *testing.T) Config {
	return Config{
		Messages: 300, Sizes: []int{100, 300}, Budget: 8000, AssembleRuns: 5, OneByOne: 100,
		TempDir: t.TempDir(), Engine: fakeTarget(nil), Legacy: fakeLegacyTarget(core.Chars4{}), LegacyExact: fakeLegacyTarget(wordCounter{}),
		Recall: wordRecall, Identifiers: idents,
	}
}

func TestRunAllSuites(t *testing.T) {
	rep, err := Run(context.Background(), tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v", rep.Errors)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	num := func(suite, key string) float64 {
		t.Helper()
		v, ok := doc[suite][key].(float64)
		if !ok {
			t.Fatalf("%s.%s missing or not a number: %v", suite, key, doc[suite][key])
		}
		return v
	}
	obj := func(suite, key string) map[string]any {
		t.Helper()
		v, ok := doc[suite][key].(map[string]any)
		if !ok || len(v) == 0 {
			t.Fatalf("%s.%s missing or empty: %v", suite, key, doc[suite][key])
		}
		return v
	}
	if v := num("ingest", "batched_msgs_per_s"); v <= 0 {
		t.Errorf("batched_msgs_per_s = %v", v)
	}
	for _, k := range []string{"raw_badger_msgs_per_s", "raw_bleve_msgs_per_s", "bootstrap_msgs_per_s", "one_by_one_msgs_per_s"} {
		if v := num("ingest", k); v <= 0 {
			t.Errorf("ingest.%s = %v", k, v)
		}
	}
	p99 := obj("assemble", "p99_ms")
	for _, size := range []string{"100", "300"} {
		if v, _ := p99[size].(float64); v <= 0 {
			t.Errorf("assemble.p99_ms[%s] = %v", size, p99[size])
		}
	}
	if v := num("assemble", "p99_ratio_largest_smallest"); v <= 0 {
		t.Errorf("p99 ratio = %v", v)
	}
	// The legacy baseline: the chars/4 row and the exact row, each at both
	// sizes, labelled with its counter, passed the whole history.
	if c := doc["assemble"]["legacy_counter"]; c != core.CounterChars4 {
		t.Errorf("assemble.legacy_counter = %v, want chars4", c)
	}
	if c := doc["assemble"]["legacy_exact_counter"]; c != "words" {
		t.Errorf("assemble.legacy_exact_counter = %v, want the exact row's counter", c)
	}
	history, _, err := synthMessages(1, 300)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []struct {
		prefix string
		tc     core.TokenCounter
	}{{"legacy_", core.Chars4{}}, {"legacy_exact_", wordCounter{}}} {
		for _, key := range []string{"p50_ms", "p99_ms", "samples", "tokens"} {
			m := obj("assemble", row.prefix+key)
			if len(m) != 2 || m["100"] == nil || m["300"] == nil {
				t.Errorf("assemble.%s%s = %v, want sizes 100 and 300", row.prefix, key, m)
			}
		}
		if got, want := obj("assemble", row.prefix+"tokens")["300"], float64(core.CountMessages(row.tc, history)); got != want {
			t.Errorf("assemble.%stokens[300] = %v, want %v (the whole history counted with %s)", row.prefix, got, want, row.tc.Name())
		}
	}
	if v := num("compact", "wall_s"); v <= 0 {
		t.Errorf("compact.wall_s = %v", v)
	}
	before, after := num("compact", "tokens_before"), num("compact", "tokens_after")
	if before <= 0 || after <= 0 || after >= before || after > 8000 {
		t.Errorf("compact tokens %v -> %v, want under the 8000 budget", before, after)
	}
	if rep.Compact.Rounds < 2 || rep.Compact.Identifiers == 0 {
		t.Errorf("compact rounds %d, identifiers %d", rep.Compact.Rounds, rep.Compact.Identifiers)
	}
	for _, l := range []*LegacyCompact{rep.Compact.Legacy, rep.Compact.LegacyExact} {
		if l == nil || l.Error != "" || l.TokensAfter >= l.TokensBefore || l.IdentifierRetentionPct <= 0 {
			t.Errorf("legacy compaction %+v", l)
		}
	}
	if c := obj("compact", "legacy")["counter"]; c != core.CounterChars4 {
		t.Errorf("compact.legacy.counter = %v, want chars4", c)
	}
	if c := obj("compact", "legacy_exact")["counter"]; c != "words" {
		t.Errorf("compact.legacy_exact.counter = %v, want words", c)
	}
	for _, key := range []string{"recall_at", "recall_at_no_speaker"} {
		m := obj("recall", key)
		for _, k := range []string{"5", "8", "10", "25", "50"} {
			if f, ok := m[k].(float64); !ok || f < 0 || f > 100 {
				t.Errorf("recall.%s[%s] = %v", key, k, m[k])
			}
		}
	}
	if rep.Recall.Questions == 0 || rep.Recall.RecallAt["50"] < rep.Recall.RecallAt["5"] {
		t.Errorf("recall %+v", rep.Recall)
	}
	if v := num("lossless", "lost_or_altered"); v != 0 {
		t.Errorf("lost_or_altered = %v", v)
	}
	if rep.Lossless.Expanded != 375 || rep.Lossless.Messages != 375 || rep.Lossless.Rotations == 0 {
		t.Errorf("lossless %+v: want 300 imported + 75 after rotation expanded after at least one rotation", rep.Lossless)
	}
	if v := num("footprint", "rss_mb"); v <= 0 {
		t.Errorf("rss_mb = %v", v)
	}
	if v := num("footprint", "disk_ratio"); v <= 0 {
		t.Errorf("disk_ratio = %v", v)
	}
	if f := rep.Footprint; runtime.GOOS == "linux" && (f.RSSAnonMB <= 0 || f.RSSAnonMB > f.RSSMB || f.HeapMB <= 0) {
		t.Errorf("footprint %+v: want 0 < anonymous RSS <= RSS and a heap", f)
	}
	checkOutputs(t, rep)
}

func TestLosslessSuiteCountsLoss(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mod        func(*fakeEngine)
		lost, more int
	}{
		{"dropped", func(f *fakeEngine) { f.drop = 2 }, 2, 0},
		{"altered", func(f *fakeEngine) { f.alter = true }, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(t)
			cfg.Suites = []string{SuiteLossless}
			cfg.Engine = fakeTarget(tc.mod)
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Lossless.LostOrAltered != tc.lost || rep.Lossless.Extra != tc.more {
				t.Fatalf("lost %d extra %d, want %d and %d", rep.Lossless.LostOrAltered, rep.Lossless.Extra, tc.lost, tc.more)
			}
			if len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "lost or altered") {
				t.Fatalf("errors %v, want the loss reported", rep.Errors)
			}
		})
	}
}

func TestLosslessForcesRotation(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Suites = []string{SuiteLossless}
	cfg.Engine = fakeTarget(func(f *fakeEngine) { f.noRotate = true })
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 || rep.Lossless.Rotations != 1 || rep.Lossless.Expanded != 375 || rep.Lossless.LostOrAltered != 0 {
		t.Fatalf("lossless %+v, errors %v: want one forced rotation and nothing lost", rep.Lossless, rep.Errors)
	}
}

func TestAssembleOverBudgetIsAnError(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Suites = []string{SuiteAssemble}
	cfg.Engine = fakeTarget(func(f *fakeEngine) { f.overflow = true })
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) == 0 || !strings.Contains(rep.Errors[0], "over the budget") {
		t.Fatalf("errors %v, want over-budget reported", rep.Errors)
	}
	if rep.Footprint != nil {
		t.Fatal("footprint reported without the footprint suite")
	}
}

func TestSuiteSelectionAndMissingOperations(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Suites = []string{SuiteRecall, SuiteLossless, SuiteFootprint}
	cfg.Recall = nil
	cfg.Engine.Expand = nil
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ingest != nil || rep.Assemble != nil || rep.Compact != nil {
		t.Fatal("unselected suites ran")
	}
	if rep.Footprint == nil || rep.Footprint.AtMessages != 300 || rep.Footprint.DiskBytes == 0 {
		t.Fatalf("footprint %+v, want measured at the largest size", rep.Footprint)
	}
	if len(rep.Errors) != 2 {
		t.Fatalf("errors %v, want recall and lossless unsupported", rep.Errors)
	}
	for _, e := range rep.Errors {
		if !strings.Contains(e, ErrUnsupported.Error()) {
			t.Errorf("error %q does not say unsupported", e)
		}
	}
	if rep.Lossless.LostOrAltered != -1 {
		t.Errorf("lost_or_altered %d for an unmeasured suite, want -1", rep.Lossless.LostOrAltered)
	}
}

func TestValidate(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Suites = []string{"ingest", "nope"}
	if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrUnknownSuite) {
		t.Fatalf("err %v, want ErrUnknownSuite", err)
	}
	cfg = tinyConfig(t)
	cfg.Engine.Open = nil
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("no error without an engine")
	}
	cfg = tinyConfig(t)
	cfg.Sizes = []int{10, -1}
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("no error for a negative size")
	}
}

func TestCancelledRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, tinyConfig(t)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestCompareRaw(t *testing.T) {
	b := func(ss ...string) [][]byte {
		var out [][]byte
		for _, s := range ss {
			out = append(out, []byte(s))
		}
		return out
	}
	for _, tc := range []struct {
		name              string
		want, got         [][]byte
		lost, extra, diff int
	}{
		{"equal", b("a", "b", "c"), b("a", "b", "c"), 0, 0, 0},
		{"missing", b("a", "b", "c"), b("a", "c"), 1, 0, 2},
		{"altered", b("a", "b", "c"), b("a", "B", "c"), 1, 1, 2},
		{"reordered", b("a", "b"), b("b", "a"), 0, 0, 1},
		{"duplicate kept twice", b("a", "a"), b("a"), 1, 0, 2},
		{"extra", b("a"), b("a", "z"), 0, 1, 2},
		{"empty", b("a"), nil, 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost, extra, diff := compareRaw(tc.want, tc.got)
			if lost != tc.lost || extra != tc.extra || diff != tc.diff {
				t.Fatalf("got lost %d extra %d first %d, want %d %d %d", lost, extra, diff, tc.lost, tc.extra, tc.diff)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100..1, unsorted
	}
	for _, tc := range []struct{ q, want float64 }{{50, 50}, {99, 99}, {100, 100}, {1, 1}} {
		if got := percentile(xs, tc.q); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.q, got, tc.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
	if got := percentile([]float64{3, 1, 2}, 99); got != 3 {
		t.Errorf("p99 of 3 samples = %v, want the max", got)
	}
}

func TestTurns(t *testing.T) {
	msgs, _, err := synthMessages(2, 500)
	if err != nil {
		t.Fatal(err)
	}
	ts := turns(msgs)
	n := 0
	for i, tu := range ts {
		n += len(tu)
		for j, m := range tu {
			if (j == 0) != (m.Role() == "user") && !(i == 0 && j == 0) {
				t.Fatalf("turn %d message %d has role %s", i, j, m.Role())
			}
		}
	}
	if n != 500 || len(ts) < 20 {
		t.Fatalf("%d turns holding %d messages", len(ts), n)
	}
}

var benchLine = regexp.MustCompile(`^Benchmark[^\s]+-\d+\t\d+(\t[-+0-9.e]+ [^\s]+)+$`)

// checkOutputs checks the table, the benchstat lines and the SVG of a
// report of every suite.
func checkOutputs(t *testing.T, rep *Report) {
	t.Helper()
	var table bytes.Buffer
	if err := WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INGEST", "raw Badger WriteBatch", "ASSEMBLE", "p99 at the largest size", "COMPACT", "legacy, chars4", "legacy, words",
		"RECALL", "@8", "without the speaker prefix", "LOSSLESS", "0 lost or altered", "FOOTPRINT"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var gb bytes.Buffer
	if err := WriteGoBench(&gb, rep); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(gb.String()), "\n") {
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		if !benchLine.MatchString(line) {
			t.Errorf("not a benchstat line: %q", line)
		}
		names[strings.SplitN(line, "-", 2)[0]] = true
	}
	for _, n := range []string{"BenchmarkIngest/batched", "BenchmarkAssemble/size=300", "BenchmarkAssembleLegacy/size=100",
		"BenchmarkAssembleLegacyExact/size=100", "BenchmarkCompact", "BenchmarkCompactLegacy", "BenchmarkCompactLegacyExact",
		"BenchmarkRecall/k=8", "BenchmarkRecallNoSpeaker/k=8", "BenchmarkLossless", "BenchmarkFootprint"} {
		if !names[n] {
			t.Errorf("no %s line in\n%s", n, gb.String())
		}
	}
	var svg bytes.Buffer
	if err := WriteSVG(&svg, rep); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	polylines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != 7 { // engine p50/p99, legacy p50/p99, exact legacy p50, recall with and without the speaker prefix
		t.Fatalf("%d lines in the chart, want 7", polylines)
	}
}

func ExampleRun() {
	rep, err := Run(context.Background(), Config{
		Suites:   []string{SuiteLossless},
		Messages: 300,
		Budget:   4000,
		Engine:   fakeTarget(nil),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("messages:", rep.Lossless.Messages, "lost or altered:", rep.Lossless.LostOrAltered)
	// Output: messages: 375 lost or altered: 0
}
