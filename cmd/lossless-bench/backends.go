package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/bench"
	"github.com/lossless-engine/contextengine/lossless"
	_ "github.com/lossless-engine/contextengine/lossless/badger" // --store DIR
	"github.com/lossless-engine/contextengine/lossless/config"
	_ "github.com/lossless-engine/contextengine/lossless/postgres" // --store postgres://…
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// The backends comparison (--store postgres://…): the same workload on the
// Badger default and on PostgreSQL, in one run. Per backend: batched ingest
// (batches of backendBatch short chat messages into a fresh store),
// assemble p50/p99 (warm, the run's budget) without a prompt (recall does
// not run) and with one (recall runs: the path of every OpenClaw assemble),
// and the recall query's p50/p99 alone, at each history size, the wall time of a compaction of
// the largest history to the budget, the store's bytes per message, and
// ingest by 1, 2 and 4 writer processes at once (PostgreSQL only: a Badger
// store admits one process).

const backendBatch = 1000

// historyPad is the padding of the histories' tool results (chatMessages).
const historyPad = 5000

// backendFigures are one backend's figures.
type backendFigures struct {
	Backend string `json:"backend"`
	// IngestMsgsPerS is the batched ingest rate (acknowledged: durable in
	// the store; the recall index catches up after).
	IngestMsgsPerS float64 `json:"ingest_batched_msgs_per_s"`
	// Assemble, AssembleRecall and Recall are latencies per history size
	// ("10K", "100K", …): Assemble without a prompt (recall does not run),
	// AssembleRecall with a prompt naming one turn of the history (recall
	// runs, as in every OpenClaw assemble; a different prompt each call),
	// Recall the recall query alone. RecallBlocks is how many of the
	// AssembleRecall calls carried a recall block (the others ran the
	// query and found nothing past the relevance gate).
	Assemble       bench.Latencies `json:"assemble"`
	AssembleRecall bench.Latencies `json:"assemble_recall"`
	RecallBlocks   map[string]int  `json:"assemble_recall_blocks"`
	Recall         bench.Latencies `json:"recall"`
	// CompactS is the wall time of compacting the largest history to the
	// budget; CompactTokens the context's tokens before and after.
	CompactS      float64  `json:"compact_s"`
	CompactTokens [2]int64 `json:"compact_tokens"`
	// DiskBytesPerMsg is the store's size (and the recall index's, when
	// apart) over the messages stored.
	DiskBytesPerMsg float64 `json:"disk_bytes_per_msg"`
	// WritersMsgsPerS is the total ingest rate of N writer processes at
	// once, each into its own conversation ("1", "2", "4").
	WritersMsgsPerS map[string]float64 `json:"writers_msgs_per_s"`
	// Note says what was left out.
	Note string `json:"note,omitempty"`
}

// backendsOptions configure the comparison.
type backendsOptions struct {
	ServerURL string // PostgreSQL server (each store a fresh database on it)
	Sizes     []int
	Budget    int
	Ingest    int // messages of the batched-ingest figure
	Writers   []int
	WriterN   int // messages per writer process
	Runs      int // timed assembles and recall queries per size
	TempDir   string
	Keep      bool // keep the databases (to look at them)
	// SyncWrites makes Badger's commits durable before they return
	// (Config.SyncWrites: an fsync each); off, Badger commits without
	// fsync, the engine's default. PostgreSQL commits synchronously
	// either way (the engine's default) unless AsyncCommit.
	SyncWrites bool
	// AsyncCommit lets PostgreSQL's commits return before the server
	// flushed them (Config.AsyncCommit, opt-in).
	AsyncCommit bool
	Log         io.Writer
}

// backendStore is where one engine's store lives.
type backendStore struct {
	dir   string // Badger
	url   string // PostgreSQL database
	sync  bool   // Config.SyncWrites
	async bool   // Config.AsyncCommit (PostgreSQL)
}

func (s backendStore) config(budget int) config.Config {
	cfg := config.Default()
	cfg.DefaultTokenBudget = budget
	cfg.SyncWrites = s.sync
	cfg.AsyncCommit = s.async && s.url != ""
	if s.url != "" {
		cfg.StoreURL = s.url
	} else {
		cfg.StoreDir = s.dir
	}
	return cfg
}

// arg is the store as --store takes it.
func (s backendStore) arg() string {
	if s.url != "" {
		return s.url
	}
	return s.dir
}

// backend makes fresh stores of one kind and removes them.
type backend struct {
	name     string
	o        backendsOptions
	mu       sync.Mutex
	cleanups []func()
}

func (b *backend) fresh(ctx context.Context) (backendStore, error) {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	id := "lbench_" + hex.EncodeToString(rnd[:])
	if b.name == "badger" {
		dir, err := os.MkdirTemp(b.o.TempDir, id+"-")
		if err != nil {
			return backendStore{}, err
		}
		b.cleanup(func() { os.RemoveAll(dir) })
		return backendStore{dir: dir, sync: b.o.SyncWrites}, nil
	}
	if err := pgExec(ctx, b.o.ServerURL, "CREATE DATABASE "+pgx.Identifier{id}.Sanitize()); err != nil {
		return backendStore{}, fmt.Errorf("create database %s on %s: %w", id, config.RedactURL(b.o.ServerURL), err)
	}
	u, err := url.Parse(b.o.ServerURL)
	if err != nil {
		return backendStore{}, err
	}
	u.Path = "/" + id
	if !b.o.Keep {
		b.cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = pgExec(ctx, b.o.ServerURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{id}.Sanitize()+" WITH (FORCE)")
		})
	}
	return backendStore{url: u.String(), sync: b.o.SyncWrites, async: b.o.AsyncCommit}, nil
}

func (b *backend) cleanup(f func()) {
	b.mu.Lock()
	b.cleanups = append(b.cleanups, f)
	b.mu.Unlock()
}

func (b *backend) close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

func pgExec(ctx context.Context, u, sql string) error {
	conn, err := pgxConnect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// chatMessages returns n chat messages from turn start on: user questions,
// tool calls and results, answers, with words drawn from a small vocabulary
// so that recall queries match some of them. Each tool result carries pad
// more bytes of such words: 0 for short chat messages (about 14 tokens
// each), 5,000 for the histories, so that a turn's four messages average
// about 1.3 KB (~300 tokens), as real ones do (pi-mono's average 2.4 KB),
// and the budget's window holds a few hundred messages, not thousands.
func chatMessages(start, n, pad int) []core.Message {
	words := []string{"deploy", "gateway", "postgres", "badger", "token", "budget", "summary", "rotate",
		"session", "cache", "latency", "index", "compaction", "agent", "plugin", "memory", "schema",
		"migration", "backup", "replica", "vacuum", "queue", "timeout", "retry"}
	out := make([]core.Message, 0, n)
	for i := start; len(out) < n; i++ {
		ts := int64(1_700_000_000_000 + i*4000)
		w1, w2, w3 := words[i%len(words)], words[(i*7+3)%len(words)], words[(i*13+5)%len(words)]
		msgs := []core.Message{
			core.UserText(fmt.Sprintf("turn %d: how does the %s handle %s when the %s is full?", i, w1, w2, w3), ts),
			core.AssistantToolCall(fmt.Sprintf("call-%d", i), "read", map[string]string{"path": fmt.Sprintf("src/%s/%s_%d.go", w1, w2, i)}, ts+1),
			core.ToolResult(fmt.Sprintf("call-%d", i), "read", fmt.Sprintf("package %s // %s %s, case %d", w1, w2, w3, i)+padText(i, pad, words), false, ts+2),
			core.AssistantText(fmt.Sprintf("In turn %d the %s waits for the %s, then retries the %s.", i, w1, w2, w3), ts+3),
		}
		for _, m := range msgs {
			if len(out) < n {
				out = append(out, m)
			}
		}
	}
	return out
}

// recallPrompt is the i-th recall query over a history of stored messages:
// a question naming one turn of it by number (a rare term, as the names
// and identifiers of real prompts are) with two vocabulary words (common
// ones). Each differs, so nothing is answered from a cache.
func recallPrompt(i, stored int) string {
	words := []string{"gateway", "postgres", "vacuum", "timeout", "replica", "schema", "budget", "plugin"}
	turn := (i*7919 + 13) % max(1, stored/4)
	return fmt.Sprintf("what did we find in turn %d about the %s and the %s?", turn, words[i%len(words)], words[(i*3+1)%len(words)])
}

// padText is about n bytes of vocabulary words for turn i.
func padText(i, n int, words []string) string {
	var b strings.Builder
	for j := 0; b.Len() < n; j++ {
		b.WriteString(" ")
		b.WriteString(words[(i*31+j*17+j*j)%len(words)])
		if j%11 == 10 {
			fmt.Fprintf(&b, " %d.", i*100+j)
		}
	}
	return b.String()
}

// ingestChat ingests n chat messages (from turn start on, tool results
// padded by pad bytes) into session in batches; it returns the wall time.
func ingestChat(ctx context.Context, e *lossless.Engine, session string, start, n, pad int) (time.Duration, error) {
	msgs := chatMessages(start, n, pad)
	t0 := time.Now()
	for len(msgs) > 0 {
		k := min(backendBatch, len(msgs))
		r, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: session, Messages: msgs[:k]})
		if err != nil {
			return 0, err
		}
		if r.IngestedCount != k {
			return 0, fmt.Errorf("ingested %d of a batch of %d (duplicates in the generator?)", r.IngestedCount, k)
		}
		msgs = msgs[k:]
	}
	return time.Since(t0), nil
}

// ms returns durations in milliseconds.
func ms(d []time.Duration) []float64 {
	out := make([]float64, len(d))
	for i, x := range d {
		out[i] = float64(x.Microseconds()) / 1000
	}
	return out
}

// measureBackend runs the workload on one backend.
func measureBackend(ctx context.Context, b *backend, logf func(string, ...any)) (backendFigures, error) {
	o := b.o
	f := backendFigures{Backend: b.name, Assemble: bench.NewLatencies(), AssembleRecall: bench.NewLatencies(), RecallBlocks: map[string]int{},
		Recall: bench.NewLatencies(), WritersMsgsPerS: map[string]float64{}}

	// Batched ingest into a fresh store.
	st, err := b.fresh(ctx)
	if err != nil {
		return f, err
	}
	e, err := lossless.Open(ctx, st.config(o.Budget))
	if err != nil {
		return f, fmt.Errorf("open: %w", err)
	}
	logf("%s: batched ingest of %d messages", b.name, o.Ingest)
	el, err := ingestChat(ctx, e, "ingest", 0, o.Ingest, 0)
	if err != nil {
		e.Close()
		return f, fmt.Errorf("ingest: %w", err)
	}
	f.IngestMsgsPerS = float64(o.Ingest) / el.Seconds()
	if err := e.WaitRecallIndex(ctx); err != nil {
		e.Close()
		return f, err
	}

	// A growing history in the same store: assemble and recall at each size.
	stored := 0
	for _, size := range o.Sizes {
		logf("%s: history of %d messages", b.name, size)
		if _, err := ingestChat(ctx, e, "hist", stored/4, size-stored, historyPad); err != nil {
			e.Close()
			return f, fmt.Errorf("history: %w", err)
		}
		stored = size
		if err := e.WaitRecallIndex(ctx); err != nil {
			e.Close()
			return f, err
		}
		p := core.AssembleParams{SessionID: "hist", TokenBudget: o.Budget}
		if _, err := e.Assemble(ctx, p); err != nil { // warm
			e.Close()
			return f, fmt.Errorf("assemble: %w", err)
		}
		lat := make([]time.Duration, 0, o.Runs)
		for range o.Runs {
			t0 := time.Now()
			if _, err := e.Assemble(ctx, p); err != nil {
				e.Close()
				return f, fmt.Errorf("assemble: %w", err)
			}
			lat = append(lat, time.Since(t0))
		}
		name := sizeName(size)
		f.Assemble.Add(name, ms(lat))
		lat = lat[:0]
		// With a prompt: the recall query over the history outside the
		// window, the gate, the block. Checked once that recall ran.
		rp := core.AssembleParams{SessionID: "hist", TokenBudget: o.Budget, Prompt: recallPrompt(o.Runs, stored)}
		if _, d, err := e.AssembleWithDetails(ctx, rp); err != nil { // warm
			e.Close()
			return f, fmt.Errorf("assemble with recall: %w", err)
		} else if st := d.Recall.Status; (st != recalled.Injected && st != recalled.None) || d.Recall.Partial {
			e.Close()
			return f, fmt.Errorf("assemble with recall: recall did not run: %+v", d.Recall)
		}
		for i := range o.Runs {
			rp.Prompt = recallPrompt(i, stored)
			t0 := time.Now()
			res, err := e.Assemble(ctx, rp)
			if err != nil {
				e.Close()
				return f, fmt.Errorf("assemble with recall: %w", err)
			}
			lat = append(lat, time.Since(t0))
			if n := len(res.Messages); n > 0 && lossless.IsRecallMessage(res.Messages[n-1]) {
				f.RecallBlocks[name]++
			}
		}
		f.AssembleRecall.Add(name, ms(lat))
		lat = lat[:0]
		for i := range o.Runs {
			rp := core.AssembleParams{SessionID: "ingest", TokenBudget: o.Budget, Prompt: recallPrompt(i, stored)}
			t0 := time.Now()
			if _, err := e.Recall(ctx, rp, 8); err != nil {
				e.Close()
				return f, fmt.Errorf("recall: %w", err)
			}
			lat = append(lat, time.Since(t0))
		}
		f.Recall.Add(name, ms(lat))
	}

	// Compaction of the largest history to the budget.
	logf("%s: compaction of %d messages", b.name, stored)
	t0 := time.Now()
	cr, err := e.Compact(ctx, core.CompactParams{SessionID: "hist", TokenBudget: o.Budget, Force: true})
	if err != nil {
		e.Close()
		return f, fmt.Errorf("compact: %w", err)
	}
	f.CompactS = time.Since(t0).Seconds()
	if cr.Result != nil {
		f.CompactTokens = [2]int64{int64(cr.Result.TokensBefore), int64(cr.Result.TokensAfter)}
	}
	if err := e.WaitRecallIndex(ctx); err != nil {
		e.Close()
		return f, err
	}
	stats, err := e.Stats(ctx)
	if err != nil {
		e.Close()
		return f, err
	}
	if err := e.Close(); err != nil {
		return f, err
	}
	if b.name == "badger" {
		// After Close, as the README's disk figures (Badger's files settle).
		if stats.DiskBytes, err = dirSize(st.dir); err != nil {
			return f, err
		}
		stats.IndexBytes = 0 // the index lives inside the store directory
	}
	f.DiskBytesPerMsg = float64(stats.DiskBytes+stats.IndexBytes) / float64(o.Ingest+stored)

	// Writer processes.
	for _, n := range o.Writers {
		if n > 1 && b.name == "badger" {
			continue // one process per Badger store
		}
		logf("%s: %d writer processes × %d messages", b.name, n, o.WriterN)
		rate, err := runWriters(ctx, b, n, o.WriterN, o.Budget)
		if err != nil {
			return f, fmt.Errorf("%d writers: %w", n, err)
		}
		f.WritersMsgsPerS[strconv.Itoa(n)] = rate
	}
	if b.name == "badger" {
		f.Note = "one writer process only: a Badger store admits one process"
	}
	return f, nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := walkFiles(dir, func(size int64) { n += size })
	return n, err
}

func walkFiles(dir string, fn func(int64)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := walkFiles(dir+"/"+e.Name(), fn); err != nil {
				return err
			}
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		fn(info.Size())
	}
	return nil
}

func sizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "K"
	}
	return strconv.Itoa(n)
}

// writerResult is what a writer process prints: its ingest's start and end
// (Unix nanoseconds) and the messages it stored.
type writerResult struct {
	Start, End int64
	Messages   int
}

// runWriters starts n writer processes (this binary, writer-child) on one
// fresh store, each ingesting count messages into its own conversation, and
// returns their total rate: all messages over the span from the first start
// to the last end (process start-up and engine open excluded).
func runWriters(ctx context.Context, b *backend, n, count, budget int) (float64, error) {
	st, err := b.fresh(ctx)
	if err != nil {
		return 0, err
	}
	// Create the schema first, so that the writers time only their ingest.
	e, err := lossless.Open(ctx, st.config(budget))
	if err != nil {
		return 0, err
	}
	if err := e.Close(); err != nil {
		return 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	results := make([]writerResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, exe, "writer-child", "--store", st.arg(), "--session", fmt.Sprintf("writer-%d", i),
				"--messages", strconv.Itoa(count), "--budget", strconv.Itoa(budget), "--sync-writes="+strconv.FormatBool(st.sync), "--async-commit="+strconv.FormatBool(st.async))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				errs[i] = fmt.Errorf("writer %d: %w: %s", i, err, strings.TrimSpace(stderr.String()))
				return
			}
			if err := json.Unmarshal(out, &results[i]); err != nil {
				errs[i] = fmt.Errorf("writer %d: %w (output %q)", i, err, out)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	first, last, total := results[0].Start, results[0].End, 0
	for _, r := range results {
		first, last = min(first, r.Start), max(last, r.End)
		total += r.Messages
	}
	return float64(total) / (float64(last-first) / 1e9), nil
}

// writerChild is a writer process of runWriters: it ingests --messages chat
// messages into --session of --store in batches and prints a writerResult.
func writerChild(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lossless-bench writer-child", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeArg := fs.String("store", "", "store directory or postgres:// URL")
	session := fs.String("session", "", "session to write")
	count := fs.Int("messages", 10000, "messages to ingest")
	budget := fs.Int("budget", 128000, "token budget")
	syncWrites := fs.Bool("sync-writes", false, "Config.SyncWrites")
	asyncCommit := fs.Bool("async-commit", false, "Config.AsyncCommit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := config.Default()
	cfg.DefaultTokenBudget = *budget
	cfg.SyncWrites = *syncWrites
	cfg.AsyncCommit = *asyncCommit
	if config.IsStoreURL(*storeArg) {
		cfg.StoreURL = *storeArg
	} else {
		cfg.StoreDir = *storeArg
	}
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "writer-child: %v\n", err)
		return 1
	}
	defer e.Close()
	start := time.Now()
	if _, err := ingestChat(ctx, e, *session, 0, *count, 0); err != nil {
		fmt.Fprintf(stderr, "writer-child: %v\n", err)
		return 1
	}
	end := time.Now()
	return printJSON(stdout, stderr, writerResult{Start: start.UnixNano(), End: end.UnixNano(), Messages: *count})
}

func printJSON(stdout, stderr io.Writer, v any) int {
	w := bufio.NewWriter(stdout)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		fmt.Fprintf(stderr, "lossless-bench: %v\n", err)
		return 1
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "lossless-bench: %v\n", err)
		return 1
	}
	return 0
}

// runBackends runs the comparison on Badger and on the PostgreSQL server of
// o.ServerURL and prints the table (and the JSON to jsonPath).
func runBackends(ctx context.Context, o backendsOptions, stdout io.Writer, jsonPath string) error {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		}
	}
	var figs []backendFigures
	for _, name := range []string{"badger", "postgres"} {
		b := &backend{name: name, o: o}
		f, err := measureBackend(ctx, b, logf)
		b.close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		figs = append(figs, f)
	}
	writeBackendsTable(stdout, o, figs)
	if jsonPath != "" {
		return writeFile(jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"backends": figs, "sizes": o.Sizes, "ingest_messages": o.Ingest,
				"writer_messages": o.WriterN, "runs": o.Runs, "budget": o.Budget, "sync_writes": o.SyncWrites, "async_commit": o.AsyncCommit})
		})
	}
	return nil
}

func writeBackendsTable(w io.Writer, o backendsOptions, figs []backendFigures) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	commits := "the engine's defaults (Badger without fsync, PostgreSQL's synchronous commits)"
	switch {
	case o.SyncWrites:
		commits = "syncWrites (Badger fsyncs, PostgreSQL's synchronous commits)"
	case o.AsyncCommit:
		commits = "asyncCommit (Badger without fsync, PostgreSQL's asynchronous commits)"
	}
	fmt.Fprintf(tw, "backends: %d short chat messages per ingest in batches of %d; assemble and recall over %d runs per size; budget %d; %s\n",
		o.Ingest, backendBatch, o.Runs, o.Budget, commits)
	fmt.Fprint(tw, "figure")
	for _, f := range figs {
		fmt.Fprintf(tw, "\t%s", f.Backend)
	}
	fmt.Fprintln(tw)
	row := func(name string, v func(f backendFigures) string) {
		fmt.Fprint(tw, name)
		for _, f := range figs {
			fmt.Fprintf(tw, "\t%s", v(f))
		}
		fmt.Fprintln(tw)
	}
	num := func(x float64, prec int) string {
		if math.IsNaN(x) {
			return "n/a"
		}
		return strconv.FormatFloat(x, 'f', prec, 64)
	}
	row("batched ingest msgs/s", func(f backendFigures) string { return num(f.IngestMsgsPerS, 0) })
	for _, s := range o.Sizes {
		n := sizeName(s)
		row("assemble p50/p99 ms at "+n+", no prompt (no recall)", func(f backendFigures) string {
			return num(f.Assemble.P50Ms[n], 2) + " / " + num(f.Assemble.P99Ms[n], 2)
		})
		row("assemble p50/p99 ms at "+n+", with a prompt (recall)", func(f backendFigures) string {
			return num(f.AssembleRecall.P50Ms[n], 2) + " / " + num(f.AssembleRecall.P99Ms[n], 2) +
				fmt.Sprintf(" (%d of %d with a block)", f.RecallBlocks[n], o.Runs)
		})
		row("recall p50/p99 ms at "+n, func(f backendFigures) string {
			return num(f.Recall.P50Ms[n], 2) + " / " + num(f.Recall.P99Ms[n], 2)
		})
	}
	row("compaction s (tokens before → after)", func(f backendFigures) string {
		return fmt.Sprintf("%s (%d → %d)", num(f.CompactS, 2), f.CompactTokens[0], f.CompactTokens[1])
	})
	row("disk bytes per message", func(f backendFigures) string { return num(f.DiskBytesPerMsg, 0) })
	for _, n := range o.Writers {
		k := strconv.Itoa(n)
		row(fmt.Sprintf("%d writer processes msgs/s", n), func(f backendFigures) string {
			v, ok := f.WritersMsgsPerS[k]
			if !ok {
				return "n/a"
			}
			return num(v, 0)
		})
	}
	tw.Flush()
	for _, f := range figs {
		if f.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", f.Backend, f.Note)
		}
	}
}

// runBackendsCommand checks the backends comparison's flags and runs it.
func runBackendsCommand(ctx context.Context, storeURL string, sizes, writers listFlag, writerMessages, messages string,
	budget int, keep, syncWrites, asyncCommit bool, jsonPath string, stdout, stderr io.Writer) int {
	usage := func(err error) int {
		fmt.Fprintf(stderr, "lossless-bench: %v\n", err)
		return 2
	}
	if !config.IsStoreURL(storeURL) {
		return usage(fmt.Errorf("--store %q is not a PostgreSQL URL (postgres://… or postgresql://…)", config.RedactURL(storeURL)))
	}
	o := backendsOptions{ServerURL: storeURL, Sizes: []int{10_000, 100_000}, Writers: []int{1, 2, 4}, Budget: budget,
		Runs: 200, Keep: keep, SyncWrites: syncWrites, AsyncCommit: asyncCommit, Log: stderr}
	var err error
	if len(sizes) > 0 {
		if o.Sizes, err = parseCounts(sizes); err != nil {
			return usage(fmt.Errorf("--sizes: %w", err))
		}
	}
	if len(writers) > 0 {
		if o.Writers, err = parseCounts(writers); err != nil {
			return usage(fmt.Errorf("--writers: %w", err))
		}
	}
	if o.WriterN, err = parseCount(writerMessages); err != nil {
		return usage(fmt.Errorf("--writer-messages: %w", err))
	}
	o.Ingest = 20_000
	if messages != strconv.Itoa(defaultMessages) {
		if o.Ingest, err = parseCount(messages); err != nil {
			return usage(fmt.Errorf("--messages: %w", err))
		}
	}
	slices.Sort(o.Sizes)
	if err := runBackends(ctx, o, stdout, jsonPath); err != nil {
		fmt.Fprintf(stderr, "lossless-bench: %v\n", err)
		return 1
	}
	return 0
}

func pgxConnect(ctx context.Context, u string) (*pgx.Conn, error) { return pgx.Connect(ctx, u) }
