package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/term"

	"github.com/lossless-engine/contextengine/bridge"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/progress"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/inspect"
)

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
	// exitPartial: the command did its work but left some input out
	// (import skipped malformed lines); what it printed says which.
	exitPartial = 3
)

// errPartial is returned by a command that printed its result but left
// some input out: exit code exitPartial.
var errPartial = errors.New("partial")

// stdio holds the command's streams.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// isTerminal reports whether w is a terminal (for the progress bar).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// usageError is a bad invocation: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// command is one subcommand.
type command struct {
	name    string
	args    string // synopsis of the arguments
	summary string
	run     func(ctx context.Context, c *cmdEnv, args []string) error
	flags   func(fs *flag.FlagSet, c *cmdEnv)
}

// cmdEnv is what every subcommand gets: the streams and the common flags.
type cmdEnv struct {
	io        *stdio
	store     string
	storeSet  bool
	agent     string
	agentSet  bool
	json      bool
	tokenizer string
	fs        *flag.FlagSet
}

func commands() []*command {
	return []*command{
		cmdImport(), cmdSessions(), cmdStats(), cmdAssemble(), cmdCompact(),
		cmdGrep(), cmdDescribe(), cmdExpand(), cmdExport(), cmdRetain(), cmdDoctor(), cmdServe(), cmdUI(), cmdTools(), cmdMigrate(),
	}
}

func topUsage(w io.Writer) {
	fmt.Fprintf(w, `lossless — the lossless context engine's command

Usage:
  lossless <command> [flags] [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Every command takes --store DIR-or-URL (default %s;
a postgres:// or postgresql:// URL selects a PostgreSQL store),
--json for machine-readable output and --help. lossless --version prints the version.
Exit codes: 0 ok, 1 runtime error (doctor: a problem found), 2 usage error,
3 partial (import skipped malformed lines; it printed each).
Commands that only read (sessions, stats, export, grep, describe, expand,
doctor) open the store read-only and answer on a full disk, with a note.
`, defaultStoreHelp())
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, io *stdio) int {
	if len(args) == 0 {
		topUsage(io.err)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return run(ctx, []string{args[1], "--help"}, io)
		}
		topUsage(io.out)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintf(io.out, "lossless %s (store format %d, protocol %d, %s)\n", binaryVersion(), lossless.FormatVersion, bridge.ProtocolVersion, runtime.Version())
		return exitOK
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(io.err, "lossless: unknown command %q\n\n", args[0])
		topUsage(io.err)
		return exitUsage
	}
	env := &cmdEnv{io: io}
	fs := flag.NewFlagSet("lossless "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.err)
	env.fs = fs
	fs.StringVar(&env.store, "store", "", "the store: a directory, or a PostgreSQL URL (postgres://user:password@host/database) (default "+defaultStoreHelp()+")")
	fs.StringVar(&env.agent, "agent", config.DefaultAgentID, "the agent id")
	fs.BoolVar(&env.json, "json", false, "machine-readable JSON output")
	fs.StringVar(&env.tokenizer, "tokenizer", os.Getenv("LOSSLESS_TOKENIZER"),
		"the token counter: o200k_base (default), cl100k_base or chars4 (OpenClaw's chars/4, fast to start); use the one the store was written with (default $LOSSLESS_TOKENIZER)")
	if cmd.flags != nil {
		cmd.flags(fs, env)
	}
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: lossless %s [flags] %s\n\n%s\n\nFlags:\n", cmd.name, cmd.args, cmd.summary)
		fs.PrintDefaults()
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(io.out) // asked-for help goes to stdout, once
		}
	}
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return exitOK // the flag package printed the usage
	}
	if err != nil {
		// The flag package already printed the error and the usage.
		return exitUsage
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "store":
			env.storeSet = true
		case "agent":
			env.agentSet = true
		}
	})
	switch env.tokenizer {
	case "", core.EncodingO200k, core.EncodingCL100k, core.CounterChars4:
	default:
		fmt.Fprintf(io.err, "lossless %s: unknown --tokenizer %q (want o200k_base, cl100k_base or chars4)\n", cmd.name, env.tokenizer)
		return exitUsage
	}
	if env.store == "" {
		env.store, err = defaultStore()
		if err != nil {
			fmt.Fprintf(io.err, "lossless: %v\n", err)
			return exitRuntime
		}
	}
	err = cmd.run(ctx, env, pos)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(io.err, "lossless %s: %v\n", cmd.name, err)
		fmt.Fprintf(io.err, "Run 'lossless %s --help' for usage.\n", cmd.name)
		return exitUsage
	case errors.Is(err, errProblems):
		return exitRuntime // doctor already printed its findings
	case errors.Is(err, errPartial):
		return exitPartial // the command printed what it left out
	default:
		fmt.Fprintf(io.err, "lossless %s: %v\n", cmd.name, err)
		return exitRuntime
	}
}

// parseInterleaved parses flags that may come after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse stops at the first non-flag (or after "--").
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// defaultStore returns the documented per-user store directory:
// $LOSSLESS_STORE, else $XDG_DATA_HOME/lossless, else
// ~/.local/share/lossless.
func defaultStore() (string, error) {
	if s := os.Getenv("LOSSLESS_STORE"); s != "" {
		return s, nil
	}
	return config.DefaultStoreDir("")
}

func defaultStoreHelp() string {
	return "$LOSSLESS_STORE, else $XDG_DATA_HOME/lossless, else ~/.local/share/lossless"
}

// storeURL reports whether the command's store is a PostgreSQL URL.
func (c *cmdEnv) storeURL() bool { return config.IsStoreURL(c.store) }

// storeName names the command's store in output: a directory made
// absolute, a URL without its password.
func (c *cmdEnv) storeName() string {
	if c.storeURL() {
		return config.RedactURL(c.store)
	}
	return absPath(c.store)
}

// errNoStore is returned when a command that reads the store finds none.
var errNoStore = errors.New("no store")

// errStoreBusy is wrapped by openEngine's error when another process holds
// the Badger store.
var errStoreBusy = errors.New("another process holds the store")

// openEngine opens the store. create is false for commands that only read:
// a missing store is then an error rather than a new empty store.
func openEngine(ctx context.Context, c *cmdEnv, create bool, tweak func(*config.Config)) (*lossless.Engine, error) {
	if !create && !c.storeURL() {
		// A command that only reads never makes a store: the directory must
		// hold one already (Badger's MANIFEST), not be empty or someone
		// else's.
		if _, err := os.Stat(c.store); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist (import a session first, or pass --store)", errNoStore, c.store)
		} else if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(c.store, "MANIFEST")); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no store here: %s holds no lossless store (import a session first, or pass --store)", errNoStore, c.store)
		} else if err != nil {
			return nil, err
		}
	}
	cfg := config.Default()
	if c.storeURL() {
		// A database: a read-only open of one never migrated says so
		// (pgstore's ErrSchemaTooOld), as a missing directory does here.
		cfg.StoreURL = c.store
	} else {
		cfg.StoreDir = c.store
	}
	cfg.AgentID = c.agent
	if c.tokenizer != "" {
		cfg.Tokenizer = c.tokenizer
	}
	if tweak != nil {
		tweak(&cfg)
	}
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") || strings.Contains(err.Error(), "resource temporarily unavailable") {
			return nil, fmt.Errorf("%w (is `lossless serve` or OpenClaw using this store?): %w", err, errStoreBusy)
		}
		return nil, err
	}
	return e, nil
}

// openReader opens the store for a command that only reads: read-only,
// so that it changes nothing and works on a full disk (a store the last
// process left without closing included: the patched Badger reads its
// memtable log without repairing it). Should Badger still ask for a
// repair, the store is opened as usual, which makes it; on a full disk
// that open fails and the read-only open's error is returned with its
// own. When the disk is too full for writes, a note on stderr says so:
// the command answers, and the next write will be refused.
func openReader(ctx context.Context, c *cmdEnv) (*lossless.Engine, error) {
	e, err := openEngine(ctx, c, false, func(cfg *config.Config) { cfg.ReadOnly = true })
	if err != nil && strings.Contains(err.Error(), "Log truncate required") {
		we, werr := openEngine(ctx, c, false, nil)
		if werr != nil {
			return nil, fmt.Errorf("%w; opening it for writing to repair it: %w", err, werr)
		}
		e = we
	} else if err != nil {
		return nil, err
	}
	if serr := e.CheckSpace(); serr != nil {
		fmt.Fprintf(c.io.err, "lossless: note: %v; this command only reads: it answers from the store as it is\n", serr)
	}
	return e, nil
}

// openWriterOrReader opens the store for a command that reads but uses
// what only an open for writing has (the recall index: assemble, ui).
// On a disk too full for an open for writing (lossless.ErrDiskFull) it
// opens the store read-only instead (openReader: with a note that the
// disk is full), notes what the command does without (without), and
// answers from the store as it is, writing nothing; readOnly is true when it did.
func openWriterOrReader(ctx context.Context, c *cmdEnv, name, without string) (e *lossless.Engine, readOnly bool, err error) {
	e, err = openEngine(ctx, c, false, nil)
	if err == nil || !errors.Is(err, lossless.ErrDiskFull) {
		return e, false, err
	}
	r, rerr := openReader(ctx, c)
	if rerr != nil {
		return nil, false, fmt.Errorf("%w; opening it read-only: %w", err, rerr)
	}
	fmt.Fprintf(c.io.err, "lossless %s: note: the disk is full: the store is open read-only, %s\n", name, without)
	return r, true, nil
}

// readOnlyRecall is the recall report's reason of an assemble on a store
// openWriterOrReader opened read-only.
const readOnlyRecall = "the disk is full: the store is open read-only, and the recall index opens only for writing"

// findSession resolves the agent of sessionID: --agent when given,
// otherwise the agent whose conversation has that session id (any agent).
// It fails with core.ErrUnknownSession when no conversation has it.
func findSession(ctx context.Context, e *lossless.Engine, c *cmdEnv, sessionID string) (agent string, info inspect.SessionInfo, err error) {
	scope := ""
	if c.agentSet {
		scope = c.agent
	}
	infos, err := e.Sessions(ctx, scope)
	if err != nil {
		return "", inspect.SessionInfo{}, err
	}
	for _, in := range infos {
		for _, id := range in.SessionIDs {
			if id == sessionID || in.ID == sessionID {
				return in.Agent, in, nil
			}
		}
	}
	where := "any agent"
	if scope != "" {
		where = "agent " + scope
	}
	return "", inspect.SessionInfo{}, fmt.Errorf("session %q in %s: %w (see `lossless sessions`)", sessionID, where, core.ErrUnknownSession)
}

// printJSON writes v as indented JSON without HTML escaping.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// humanBytes formats n bytes.
func humanBytes(n int64) string { return progress.Bytes(n) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// absPath returns p made absolute (for messages).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
