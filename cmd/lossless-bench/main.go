// Command lossless-bench benchmarks the lossless context engine on long
// transcripts, with baselines in the same run.
//
// With no arguments it runs every suite on embedded defaults (temporary
// Badger and Bleve stores, the extractive summarizer, no network) on a
// long synthetic transcript, at sizes that finish in about a minute on
// 2 cores, prints a table, and exits non-zero if a suite failed:
//
//	go run ./cmd/lossless-bench
//
// Suites (--suite, repeatable or comma-separated): ingest (one by one,
// batched, bootstrap import, against raw Badger WriteBatch and raw Bleve
// batches), assemble (p50/p99 at several history sizes, against legacy),
// compact (wall time, rounds, tokens before/after, identifier retention,
// against legacy), recall (LoCoMo recall@k, with and without the speaker's
// name on each turn, and what the relevance gate lets recall inject:
// recall@8, blocks without an evidence turn, unrelated prompts given a
// block), lossless (import, compact, rotate, expand,
// compare byte for byte) and footprint (heap, its peak during the bulk
// load, RSS, disk). Only when named: sessions (one engine serving
// --sessions conversations: heap at the end, assemble p99) and soak (one
// engine driven as a long-lived gateway for --soak-duration: sessions
// arriving and going idle, turns committed after OpenClaw-like assembles
// with recall, subagents, compactions, imports; the live heap sampled,
// the run failing when it grows beyond the tolerance) and window (issue
// #28: each conversation of the --locomo file replayed through the
// engines as a host drives them, turn by turn at each of --budgets, then
// each question assembled as the prompt at that budget; per budget and
// engine, the share of evidence turns whose whole text is in the window
// (window.evidence_verbatim_pct), that have ≥ 80% of their content words
// there (evidence_covered_pct) or in its summaries alone
// (summary_covered_pct), of questions with all their evidence covered
// (questions_all_evidence_pct), and the window's tokens by part; rows
// lossless, lossless-no-recall (the same store, recall off), legacy (its
// built-in compaction, run by the host's overflow recovery) and recency
// (the newest turns that fit). See internal/locomo/window.go):
//
//	go run ./cmd/lossless-bench --suite window --locomo ../shared/data/locomo/locomo-dev3.json
//
// Flags:
//
//	--sizes 10K,100K,1M     assemble history sizes (default 1K,5K,20K with no flag;
//	                        the full run is --sizes 10K,100K,1M)
//	--messages N            synthetic transcript length (default 5000)
//	--sessions N            conversations of the sessions suite (default 10K)
//	--soak-duration D       how long the soak suite runs (default 60s)
//	--soak-sample D         the soak suite's heap sampling period (default 2s)
//	--transcripts FILE...   real session files to import and compact as well
//	--locomo FILE           LoCoMo JSON for recall (default: a small built-in fixture);
//	                        required by the window suite
//	--budgets 2000,4000,8000  the window suite's token budgets
//	--questions N           window suite: only the first N questions of each conversation
//	--window-speaker        window suite: each turn with "Speaker: " before it (default without)
//	--window-detail FILE    window suite: one JSON line per question and row (evidence ids,
//	                        those verbatim, covered and covered by summaries, each one's
//	                        share of content words, the window's tokens by part)
//	--budget N              token budget (default 128000)
//	--k 5,8,10,25,50        recall cut-offs (8: the items assemble's recall renders)
//	--recall-min-score X    relevance gate threshold of the recall suite (0: the engine's default)
//	--seed N                synthetic transcript seed (default 1)
//	--tokenizer NAME        o200k_base (default), cl100k_base or chars4: the engine's
//	                        counter (the legacy baseline counts with chars4, as OpenClaw's
//	                        legacy engine does, and with this one, or o200k_base, in a second row)
//	--legacy-exact=false    skip the legacy row with the exact counter
//	--engine-recall=false   run the engine without its Bleve recall index
//	--store postgres://…    instead of the suites, the backends comparison: the same
//	                        workload on Badger and on this PostgreSQL server (a fresh
//	                        database per store), in one run: batched ingest, assemble
//	                        and recall p50/p99 at --sizes (default 10K,100K), compaction,
//	                        disk per message, and ingest by --writers processes
//	--writers 1,2,4         writer processes of the backends comparison
//	--writer-messages N     messages each writer process ingests (default 20000)
//	--sync-writes           backends comparison with every commit durable before it
//	                        returns (Badger's fsync, PostgreSQL's synchronous commit)
//	--markdown FILE         write the figures as Markdown (docs/BENCHMARKS.md is this
//	                        output: commit, machine, load average and command in its
//	                        header, a table per suite captioned with the suite)
//	--json FILE             write the figures as JSON
//	--plot FILE.svg         write an SVG chart (assemble latency vs history size, recall@k vs k)
//	--gobench               also print benchstat-readable lines
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/bench"
	"github.com/lossless-engine/contextengine/internal/progress"
)

// Defaults of the no-argument run (sized to finish in about a minute on
// 2 cores).
var (
	defaultSizes     = []int{1000, 5000, 20000}
	defaultMessages  = 5000
	defaultLegacyMax = 5000
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	isTerm := term.IsTerminal(int(os.Stderr.Fd()))
	width := func() int {
		w, _, err := term.GetSize(int(os.Stderr.Fd()))
		if err != nil {
			return 80
		}
		return w
	}
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, isTerm, width, nil))
}

// listFlag is a repeatable, comma-separated string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// parseCount parses "20000", "20K", "1M", "1_000".
func parseCount(s string) (int, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mult, s = 1000, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1000000, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<40/mult {
		return 0, fmt.Errorf("not a positive count: %q", s)
	}
	return n * mult, nil
}

func parseCounts(vals []string) ([]int, error) {
	var out []int
	for _, v := range vals {
		n, err := parseCount(v)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// run is the command; it returns the exit code. wire, when not nil, edits
// the config before the run (tests use it to shrink sizes further).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, isTerm bool, width func() int, wire func(*bench.Config)) int {
	if len(args) > 0 && args[0] == "writer-child" { // a process of --writers
		return writerChild(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("lossless-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sizes, suites, transcripts, ks, writers, budgets listFlag
	fs.Var(&sizes, "sizes", "assemble history sizes in messages, comma-separated (e.g. 10K,100K,1M)")
	fs.Var(&suites, "suite", "suites to run (repeatable or comma-separated): "+strings.Join(bench.Suites, ", ")+"; only when named: "+strings.Join(bench.ExtraSuites, ", "))
	fs.Var(&transcripts, "transcripts", "real session JSONL files to import and compact (repeatable or comma-separated; extra arguments are added too)")
	fs.Var(&ks, "k", "recall cut-offs, comma-separated (default 5,8,10,25,50)")
	locomoPath := fs.String("locomo", "", "LoCoMo JSON file for the recall suite (default: a small built-in synthetic fixture); required by the window suite")
	fs.Var(&budgets, "budgets", "the window suite's token budgets, comma-separated (default 2000,4000,8000)")
	questions := fs.Int("questions", 0, "window suite: ask only the first `N` questions of each conversation (0: all)")
	windowSpeaker := fs.Bool("window-speaker", false, "window suite: ingest each turn with \"Speaker: \" before it (default: without, as real chat messages)")
	windowDetail := fs.String("window-detail", "", "window suite: write one JSON line per question and row to `FILE` (evidence ids, which were verbatim, covered, covered by summaries; the token split)")
	jsonPath := fs.String("json", "", "write the figures as JSON to `FILE`")
	mdPath := fs.String("markdown", "", "write the figures as a Markdown document to `FILE` (docs/BENCHMARKS.md: the commit, machine, load average and command in its header, a captioned table per suite)")
	plotPath := fs.String("plot", "", "write an SVG chart to `FILE.svg`")
	gobench := fs.Bool("gobench", false, "also print the figures as Go benchmark lines (benchstat reads them)")
	budget := fs.Int("budget", 128000, "token budget")
	messages := fs.String("messages", strconv.Itoa(defaultMessages), "synthetic transcript length in messages")
	seed := fs.Uint64("seed", 1, "seed of the synthetic transcripts")
	sessions := fs.String("sessions", strconv.Itoa(bench.DefaultSessions), "conversations the sessions suite serves")
	soakDuration := fs.Duration("soak-duration", bench.DefaultSoakDuration, "how long the soak suite drives the engine")
	soakSample := fs.Duration("soak-sample", bench.DefaultSoakSample, "the soak suite's heap sampling period")
	minScore := fs.Float64("recall-min-score", 0, "relevance gate threshold of the recall suite's gated figures (0: the engine's default; negative: no gate)")
	recall := fs.Bool("engine-recall", true, "run the lossless engine with cross-session recall on (its Bleve index is written at ingest and queried at assemble)")
	tokenizer := fs.String("tokenizer", core.EncodingO200k, "token counter of the engine and of the exact legacy row: o200k_base, cl100k_base or chars4 (OpenClaw's chars/4 estimate; the exact row then counts with o200k_base)")
	heapProfile := fs.String("heap-profile", "", "write a heap profile to `FILE` at each new live-heap peak of the footprint and sessions suites; the soak suite writes FILE.middle when its middle third starts, FILE when its workload stops (go tool pprof -base FILE.middle FILE shows what grew) and FILE.flushed after the engine's background work; allocations are then sampled every 4 KiB")
	soakProfileEvery := fs.Duration("soak-profile-every", 0, "soak suite, with --heap-profile FILE: also write FILE.000, FILE.001, … every `DURATION`")
	storeURL := fs.String("store", "", "run the backends comparison instead of the suites: Badger and the PostgreSQL server at `URL` (postgres://…; a fresh database per store)")
	fs.Var(&writers, "writers", "writer process counts of the backends comparison (default 1,2,4)")
	writerMessages := fs.String("writer-messages", "20000", "messages each writer process of the backends comparison ingests")
	keepDBs := fs.Bool("keep-databases", false, "keep the backends comparison's PostgreSQL databases")
	syncWrites := fs.Bool("sync-writes", false, "backends comparison: Badger fsyncs every commit (Config.SyncWrites); PostgreSQL commits synchronously with or without it, the engine's default")
	asyncCommit := fs.Bool("async-commit", false, "backends comparison: PostgreSQL commits asynchronously (Config.AsyncCommit, opt-in: a server crash may lose the last commits)")
	legacyExact := fs.Bool("legacy-exact", true, "also run the legacy baselines with the exact counter, a second row beside the chars/4 one (slow: legacy re-counts the whole history on every assemble)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: lossless-bench [flags] [transcript.jsonl ...]\n\n")
		fs.PrintDefaults()
	}
	// Arguments that are not flags are transcripts, wherever they are
	// (flag stops at the first one, so parse again after it).
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		transcripts = append(transcripts, rest[0])
		rest = rest[1:]
	}
	if *soakProfileEvery < 0 || (*soakProfileEvery > 0 && *heapProfile == "") {
		fmt.Fprintf(stderr, "lossless-bench: --soak-profile-every %s needs --heap-profile FILE and a positive duration\n", *soakProfileEvery)
		return 2
	}
	if *heapProfile != "" {
		// The default sampling (one allocation per 512 KiB) cannot tell a
		// few MB of growth from noise; a profile is asked for, so pay for a
		// finer one.
		runtime.MemProfileRate = 4 << 10
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "lossless-bench: %v\n", err)
		return 2
	}
	if *storeURL != "" {
		return runBackendsCommand(ctx, *storeURL, sizes, writers, *writerMessages, *messages, *budget, *keepDBs, *syncWrites, *asyncCommit, *jsonPath, stdout, stderr)
	}
	cfg := bench.Config{Suites: suites, Seed: *seed, Budget: *budget, Transcripts: transcripts,
		LoCoMo: *locomoPath, Engine: losslessTarget(*tokenizer, *recall), Legacy: legacyTarget(core.CounterChars4), Recall: recallFunc(*minScore), Identifiers: identifiers, HeapProfile: *heapProfile, SoakProfileEvery: *soakProfileEvery,
		Window:       windowFunc(windowOptions{tokenizer: *tokenizer, speaker: *windowSpeaker, questions: *questions, detail: *windowDetail}),
		SoakDuration: *soakDuration, SoakSample: *soakSample}
	if *soakDuration <= 0 || *soakSample <= 0 {
		return usage(fmt.Errorf("--soak-duration %s and --soak-sample %s must be positive", *soakDuration, *soakSample))
	}
	if *legacyExact {
		cfg.LegacyExact = legacyTarget(exactCounter(*tokenizer))
	}
	var err error
	cfg.Note = fmt.Sprintf("tokenizer %s, engine recall %v; legacy counts with chars4 as OpenClaw's does", *tokenizer, *recall)
	if *legacyExact {
		cfg.Note += fmt.Sprintf(" (and with %s in a second row)", exactCounter(*tokenizer))
	}
	if cfg.Messages, err = parseCount(*messages); err != nil {
		return usage(fmt.Errorf("--messages: %w", err))
	}
	if cfg.Sessions, err = parseCount(*sessions); err != nil {
		return usage(fmt.Errorf("--sessions: %w", err))
	}
	if len(sizes) == 0 {
		cfg.Sizes, cfg.LegacyMaxSize = defaultSizes, defaultLegacyMax
		cfg.Note += fmt.Sprintf("; reduced assemble sizes %v (legacy up to %d) to finish in about a minute; the full run is --sizes 10K,100K,1M",
			defaultSizes, defaultLegacyMax)
	} else if cfg.Sizes, err = parseCounts(sizes); err != nil {
		return usage(fmt.Errorf("--sizes: %w", err))
	}
	if len(ks) > 0 {
		if cfg.K, err = parseCounts(ks); err != nil {
			return usage(fmt.Errorf("--k: %w", err))
		}
	}
	if len(budgets) > 0 {
		if cfg.WindowBudgets, err = parseCounts(budgets); err != nil {
			return usage(fmt.Errorf("--budgets: %w", err))
		}
	}
	if *questions < 0 {
		return usage(fmt.Errorf("--questions %d is negative", *questions))
	}
	if slices.Contains(suites, bench.SuiteWindow) && *locomoPath == "" {
		return usage(errors.New("--suite window needs --locomo FILE (a LoCoMo JSON file, e.g. ../shared/data/locomo/locomo-dev3.json)"))
	}
	// Checked by name only: loading the encoding's ranks here would keep
	// them on the heap the footprint suites measure.
	if err := core.CheckCounterName(*tokenizer); err != nil {
		return usage(fmt.Errorf("--tokenizer: %w", err))
	}
	if *budget <= 0 {
		return usage(fmt.Errorf("--budget %d is not positive", *budget))
	}
	for _, p := range transcripts {
		if _, err := os.Stat(p); err != nil {
			return usage(fmt.Errorf("--transcripts: %w", err))
		}
	}
	if *locomoPath != "" {
		f, err := os.Open(*locomoPath)
		if err != nil {
			return usage(fmt.Errorf("--locomo: %w", err))
		}
		f.Close()
	}
	var pb *progress.Bar
	if isTerm {
		pb = newBar(stderr, width)
		cfg.Progress = pb
	}
	if wire != nil {
		wire(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return usage(err)
	}
	// The source's commit, taken before the run: the tree may change while
	// it runs.
	rev := commit(ctx)
	rep, err := bench.Run(ctx, cfg)
	if pb != nil {
		pb.Clear()
	}
	if err != nil && rep == nil {
		return usage(err)
	}
	rep.Meta.Command = strings.TrimSpace("lossless-bench " + strings.Join(args, " "))
	rep.Meta.Commit = rev
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "lossless-bench: %v\n", err)
		code = 1
	}
	if werr := bench.WriteTable(stdout, rep); werr != nil {
		fmt.Fprintf(stderr, "lossless-bench: %v\n", werr)
		code = 1
	}
	if *gobench {
		fmt.Fprintln(stdout)
		if werr := bench.WriteGoBench(stdout, rep); werr != nil {
			fmt.Fprintf(stderr, "lossless-bench: %v\n", werr)
			code = 1
		}
	}
	if *jsonPath != "" {
		if werr := writeFile(*jsonPath, func(w io.Writer) error { return bench.WriteJSON(w, rep) }); werr != nil {
			fmt.Fprintf(stderr, "lossless-bench: %v\n", werr)
			code = 1
		}
	}
	if *mdPath != "" {
		if werr := writeFile(*mdPath, func(w io.Writer) error { return bench.WriteMarkdown(w, rep) }); werr != nil {
			fmt.Fprintf(stderr, "lossless-bench: %v\n", werr)
			code = 1
		}
	}
	if *plotPath != "" {
		if werr := writeFile(*plotPath, func(w io.Writer) error { return bench.WriteSVG(w, rep) }); werr != nil {
			fmt.Fprintf(stderr, "lossless-bench: %v\n", werr)
			code = 1
		}
	}
	if len(rep.Errors) > 0 && code == 0 {
		code = 1
	}
	return code
}

// commit returns the source's commit: the build's VCS stamp, else git's
// HEAD in the working directory, with "-dirty" when the tree had changes;
// "" when neither tells.
func commit(ctx context.Context) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "-dirty"
			}
			return rev
		}
	}
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += "-dirty"
	}
	return rev
}

func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("lossless-bench: %w", err)
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("lossless-bench: %w", err)
	}
	return nil
}
