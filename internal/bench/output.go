package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lossless-engine/contextengine/internal/locomo"
)

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("bench: write json: %w", err)
	}
	return nil
}

// sortedKeys returns a map's keys in numeric order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return cmp.Compare(x, y)
	})
	return keys
}

func human(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1fK", n/1e3)
	case n >= 100:
		return fmt.Sprintf("%.0f", n)
	default:
		return fmt.Sprintf("%.1f", n)
	}
}

func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// legacyLabel names a legacy row by its counter ("legacy, chars4").
func legacyLabel(name, counter string) string {
	if counter == "" {
		return name
	}
	return name + ", " + counter
}

// WriteTable writes the report as tables a person can read.
func WriteTable(w io.Writer, rep *Report) error {
	var b strings.Builder
	m := rep.Meta
	fmt.Fprintf(&b, "lossless-bench  %s  %s, %d cores, %.1f GB, %s, engine %s, seed %d, %.1fs\n",
		m.Date, m.OS, m.Cores, m.MemoryGB, m.Go, m.Engine, m.Seed, m.WallS)
	if m.Command != "" {
		fmt.Fprintf(&b, "command: %s\n", m.Command)
	}
	if m.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", m.Note)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	section := func(title string) {
		tw.Flush()
		fmt.Fprintf(&b, "\n%s\n", title)
	}
	if r := rep.Ingest; r != nil {
		section(fmt.Sprintf("INGEST  %d synthetic messages, %.1f MB of JSON", r.Batched.Messages, float64(r.Batched.Bytes)/1e6))
		fmt.Fprintln(tw, "\tmsgs/s\tMB/s\tµs/msg\tvs raw Badger\tvs raw Bleve\t")
		row := func(name string, x Rate, vs bool) {
			if x.Messages == 0 {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t\t\t\n", name)
				return
			}
			extra := "\t"
			if vs {
				extra = fmt.Sprintf("%.2fx\t%.2fx", ratio(x.MsgsPerS, r.RawBadger.MsgsPerS), ratio(x.MsgsPerS, r.RawBleve.MsgsPerS))
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%s\t\n", name, human(x.MsgsPerS), x.MBPerS, x.NsPerMsg/1e3, extra)
		}
		row("raw Badger WriteBatch", r.RawBadger, false)
		row("raw Bleve, batches of 1000 (unsafe_batch)", r.RawBleve, false)
		row(fmt.Sprintf("engine, one message per call (%d)", r.OneByOne.Messages), r.OneByOne, true)
		row("engine, one turn per call", r.Batched, true)
		row("engine, bootstrap import of the file", r.Bootstrap, true)
		for _, t := range r.Transcripts {
			if t.Error != "" {
				fmt.Fprintf(tw, "import %s\terror\t\t\t\t\t\n", filepath.Base(t.Path))
				continue
			}
			fmt.Fprintf(tw, "import %s (%d msgs)\t%s\t%.1f\t%.1f\t\t\t\n", filepath.Base(t.Path), t.Messages,
				human(t.MsgsPerS), t.MBPerS, 1e6/max(t.MsgsPerS, 1e-9))
		}
	}
	if r := rep.Assemble; r != nil && len(r.P99Ms) > 0 {
		section(fmt.Sprintf("ASSEMBLE  budget %d tokens, at least %d timed runs per size", r.Budget, r.Runs))
		fmt.Fprintln(tw, "history (msgs)\tp50 ms\tp99 ms\truns\ttokens\tmsgs out\t")
		for _, k := range sortedKeys(r.P99Ms) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t\n", k, ms(r.P50Ms[k]), ms(r.P99Ms[k]), r.Samples[k], r.Tokens[k], r.Messages[k])
		}
		tw.Flush()
		fmt.Fprintf(&b, "p99 at the largest size / p99 at the smallest: %.2f (1.00 = flat in history size)\n", r.P99RatioLargestSmallest)
		if len(r.LegacyP99Ms)+len(r.LegacyExactP99Ms) > 0 {
			fmt.Fprintf(&b, "legacy baseline (passed the whole history, which it counts on every call):\n")
			fmt.Fprintln(tw, "\thistory (msgs)\tp50 ms\tp99 ms\truns\ttokens\t")
			legacyRows := func(name, counter string, p50, p99 map[string]float64, runs, tokens map[string]int) {
				for _, k := range sortedKeys(p99) {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t\n", legacyLabel(name, counter), k, ms(p50[k]), ms(p99[k]), runs[k], tokens[k])
				}
			}
			legacyRows("legacy", r.LegacyCounter, r.LegacyP50Ms, r.LegacyP99Ms, r.LegacySamples, r.LegacyTokens)
			legacyRows("legacy", r.LegacyExactCounter, r.LegacyExactP50Ms, r.LegacyExactP99Ms, r.LegacyExactSamples, r.LegacyExactTokens)
		}
	}
	if r := rep.Compact; r != nil {
		section(fmt.Sprintf("COMPACT  %d synthetic messages to a %d-token budget", r.Messages, r.Budget))
		fmt.Fprintln(tw, "\twall s\tcalls (rounds)\tcontext tokens before\tafter\tidentifiers kept\t")
		fmt.Fprintf(tw, "engine\t%.2f\t%d (%d)\t%d\t%d\t%.1f%% of %d\t\n", r.WallS, r.Rounds, r.InternalRounds, r.TokensBefore, r.TokensAfter, r.IdentifierRetentionPct, r.Identifiers)
		for _, l := range []*LegacyCompact{r.Legacy, r.LegacyExact} {
			switch {
			case l == nil:
			case l.Error != "":
				fmt.Fprintf(tw, "%s\terror\t\t\t\t\t\n", legacyLabel("legacy", l.Counter))
			default:
				fmt.Fprintf(tw, "%s\t%.2f\t%d\t%d\t%d\t%.1f%%\t\n", legacyLabel("legacy", l.Counter), l.WallS, l.Rounds, l.TokensBefore, l.TokensAfter, l.IdentifierRetentionPct)
			}
		}
		for _, t := range r.Transcripts {
			fmt.Fprintf(tw, "%s\t%.2f\t%d\t%d\t%d\t\t\n", filepath.Base(t.Path), t.WallS, t.Rounds, t.TokensBefore, t.TokensAfter)
		}
	}
	if r := rep.Recall; r != nil {
		section(fmt.Sprintf("RECALL  LoCoMo recall@k (%% of evidence turns in the top k), %d questions, %s", r.Questions, r.Source))
		keys := sortedKeys(r.RecallAt)
		var hdr, row strings.Builder
		for _, k := range keys {
			hdr.WriteString("@" + k + "\t")
			row.WriteString(fmt.Sprintf("%.1f\t", r.RecallAt[k]))
		}
		if len(keys) > 0 {
			fmt.Fprintf(tw, "\t%s\nrecall %%\t%s\n", hdr.String(), row.String())
			if len(r.RecallAtNoSpeaker) > 0 {
				row.Reset()
				for _, k := range keys {
					if v, ok := r.RecallAtNoSpeaker[k]; ok {
						row.WriteString(fmt.Sprintf("%.1f\t", v))
					} else {
						row.WriteString("-\t")
					}
				}
				fmt.Fprintf(tw, "without the speaker prefix %%\t%s\n", row.String())
			}
			for _, set := range []string{locomo.SetTuneOn, locomo.SetHeldOut} {
				sr, ok := r.SetsNoSpeaker[set]
				if !ok {
					continue
				}
				row.Reset()
				for _, k := range keys {
					if v, ok := sr.RecallAt[k]; ok {
						row.WriteString(fmt.Sprintf("%.1f\t", v))
					} else {
						row.WriteString("-\t")
					}
				}
				fmt.Fprintf(tw, "  %s, %s (%d questions) %%\t%s\n", strings.ReplaceAll(set, "_", "-"), strings.Join(sr.Samples, " "), sr.Questions, row.String())
			}
		}
		tw.Flush()
		if r.QueryP50Ms > 0 {
			fmt.Fprintf(&b, "query p50 %s ms, p99 %s ms over %d turns (%s)\n", ms(r.QueryP50Ms), ms(r.QueryP99Ms), r.Turns, r.Path)
		}
		gate := func(title string, g *locomo.GateReport) {
			fmt.Fprintf(&b, "%s (min score %.2f): injected recall@8 %.1f (before the gate %.1f); a block for %.1f%% of questions, %.1f%% of those blocks without an evidence turn (%.1f%% before the gate); unrelated prompts given a block %.1f%% (generic %.1f%%, other conversations' questions %.1f%%; %d prompts)\n",
				title, g.MinScore, g.InjectedRecallAt8, g.UngatedRecallAt8, g.BlockShare, g.NoEvidenceShare, g.UngatedNoEvidenceShare,
				g.UnrelatedBlockShare, g.UnrelatedGenericBlockShare, g.UnrelatedCrossBlockShare, g.UnrelatedPrompts)
		}
		if r.GateReport != nil {
			gate("relevance gate", r.GateReport)
		}
		if r.GateNoSpeaker != nil {
			gate("relevance gate without the speaker prefix", r.GateNoSpeaker)
		}
	}
	tw.Flush()
	if r := rep.Lossless; r != nil {
		fmt.Fprintf(&b, "\nLOSSLESS  import %d messages, %d compaction rounds, %d rotations, expand %d: %d lost or altered, %d extra (%.1fs)\n",
			r.Messages, r.CompactRounds, r.Rotations, r.Expanded, r.LostOrAltered, r.Extra, r.WallS)
	}
	if r := rep.Footprint; r != nil {
		fmt.Fprintf(&b, "\nFOOTPRINT  after open: heap %.1f MB, RSS %.1f MB (%.1f MB before open)\n", r.HeapMBOpen, r.RSSMBOpen, r.RSSBaseline)
		fmt.Fprintf(&b, "           live heap peak %.1f MB (the history's bulk load)\n", r.HeapPeakMB)
		fmt.Fprintf(&b, "           at %d messages: heap %.1f MB, RSS %.1f MB (%.1f MB without mapped files); disk %.1f MB for %.1f MB of raw JSON (%.2fx)\n",
			r.AtMessages, r.HeapMB, r.RSSMB, r.RSSAnonMB, float64(r.DiskBytes)/1e6, float64(r.RawJSON)/1e6, r.DiskRatio)
	}
	writeSessions(&b, rep.Sessions)
	writeSoak(&b, rep.Soak)
	writeWindow(&b, rep.Window)
	if len(m.SuiteWallS) > 0 {
		b.WriteString("\nsuite wall time:")
		for _, s := range slices.Concat(Suites, ExtraSuites) {
			if v, ok := m.SuiteWallS[s]; ok {
				fmt.Fprintf(&b, " %s %.1fs", s, v)
			}
		}
		b.WriteString("\n")
	}
	if len(rep.Errors) > 0 {
		fmt.Fprintf(&b, "\nERRORS\n")
		for _, e := range rep.Errors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteGoBench writes the figures as Go benchmark lines that benchstat
// reads ("BenchmarkXxx-N  iterations  value unit  value unit ...").
func WriteGoBench(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "goos: %s\ngoarch: %s\npkg: github.com/lossless-engine/contextengine/cmd/lossless-bench\n", runtime.GOOS, runtime.GOARCH)
	procs := fmt.Sprintf("-%d", runtime.GOMAXPROCS(0))
	line := func(name string, n int, pairs ...any) {
		fmt.Fprintf(&b, "Benchmark%s%s\t%d", name, procs, max(n, 1))
		for i := 0; i+1 < len(pairs); i += 2 {
			fmt.Fprintf(&b, "\t%v %s", pairs[i], pairs[i+1])
		}
		b.WriteByte('\n')
	}
	rate := func(name string, x Rate) {
		if x.Messages > 0 {
			line(name, x.Messages, fmt.Sprintf("%.0f", x.NsPerMsg), "ns/op", fmt.Sprintf("%.2f", x.MBPerS), "MB/s",
				fmt.Sprintf("%.0f", x.MsgsPerS), "msgs/s")
		}
	}
	if r := rep.Ingest; r != nil {
		rate("Ingest/raw_badger", r.RawBadger)
		rate("Ingest/raw_bleve", r.RawBleve)
		rate("Ingest/one_by_one", r.OneByOne)
		rate("Ingest/batched", r.Batched)
		rate("Ingest/bootstrap", r.Bootstrap)
	}
	if r := rep.Assemble; r != nil {
		for _, k := range sortedKeys(r.P99Ms) {
			line("Assemble/size="+k, r.Samples[k], fmt.Sprintf("%.0f", r.P50Ms[k]*1e6), "ns/op", fmt.Sprintf("%.0f", r.P99Ms[k]*1e6), "p99-ns/op")
		}
		for _, k := range sortedKeys(r.LegacyP99Ms) {
			line("AssembleLegacy/size="+k, r.LegacySamples[k], fmt.Sprintf("%.0f", r.LegacyP50Ms[k]*1e6), "ns/op", fmt.Sprintf("%.0f", r.LegacyP99Ms[k]*1e6), "p99-ns/op")
		}
		for _, k := range sortedKeys(r.LegacyExactP99Ms) {
			line("AssembleLegacyExact/size="+k, r.LegacyExactSamples[k], fmt.Sprintf("%.0f", r.LegacyExactP50Ms[k]*1e6), "ns/op", fmt.Sprintf("%.0f", r.LegacyExactP99Ms[k]*1e6), "p99-ns/op")
		}
	}
	if r := rep.Compact; r != nil && r.Rounds > 0 {
		line("Compact", 1, fmt.Sprintf("%.0f", r.WallS*1e9), "ns/op", r.Rounds, "rounds", r.TokensBefore, "tokens-before", r.TokensAfter, "tokens-after",
			fmt.Sprintf("%.1f", r.IdentifierRetentionPct), "ident-kept-%")
		for _, c := range []struct {
			name string
			l    *LegacyCompact
		}{{"CompactLegacy", r.Legacy}, {"CompactLegacyExact", r.LegacyExact}} {
			if l := c.l; l != nil && l.Error == "" {
				line(c.name, 1, fmt.Sprintf("%.0f", l.WallS*1e9), "ns/op", l.Rounds, "rounds", l.TokensBefore, "tokens-before", l.TokensAfter, "tokens-after",
					fmt.Sprintf("%.1f", l.IdentifierRetentionPct), "ident-kept-%")
			}
		}
	}
	if r := rep.Recall; r != nil && len(r.RecallAt) > 0 {
		for _, k := range sortedKeys(r.RecallAt) {
			line("Recall/k="+k, max(r.Questions, 1), fmt.Sprintf("%.0f", r.WallS*1e9/float64(max(r.Questions, 1))), "ns/op", fmt.Sprintf("%.2f", r.RecallAt[k]), "recall-%")
		}
		for _, k := range sortedKeys(r.RecallAtNoSpeaker) {
			line("RecallNoSpeaker/k="+k, max(r.Questions, 1), fmt.Sprintf("%.0f", r.WallS*1e9/float64(max(r.Questions, 1))), "ns/op", fmt.Sprintf("%.2f", r.RecallAtNoSpeaker[k]), "recall-%")
		}
	}
	if r := rep.Lossless; r != nil && r.Error == "" {
		line("Lossless", r.Messages, fmt.Sprintf("%.0f", r.WallS*1e9/float64(max(r.Messages, 1))), "ns/op", r.LostOrAltered, "lost-or-altered")
	}
	if r := rep.Footprint; r != nil && r.AtMessages > 0 {
		line("Footprint", r.AtMessages, fmt.Sprintf("%.2f", r.RSSMB), "rss-MB", fmt.Sprintf("%.2f", r.HeapMB), "heap-MB", fmt.Sprintf("%.3f", r.DiskRatio), "disk/raw",
			fmt.Sprintf("%.2f", r.HeapPeakMB), "heap-peak-MB")
	}
	if r := rep.Sessions; r != nil && r.Assembles > 0 {
		line("Sessions", r.Conversations, goBenchSessions(r)...)
	}
	if r := rep.Soak; r != nil && len(r.Samples) > 0 {
		line("Soak", r.Turns, goBenchSoak(r)...)
	}
	goBenchWindow(rep.Window, line)
	_, err := io.WriteString(w, b.String())
	return err
}
