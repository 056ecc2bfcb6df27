package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	contextengine "github.com/lossless-engine/contextengine"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/diskusage"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// pluginOwner is the owner the OpenClaw plugin registers "lossless" as.
const pluginOwner = "lossless-plugin"

// doctorReport is doctor's --json output.
type doctorReport struct {
	Config struct {
		Path  string `json:"path"`
		Found bool   `json:"found"`
		Error string `json:"error,omitempty"`
	} `json:"config"`
	Resolution  contextengine.Resolution         `json:"resolution"`
	Engine      string                           `json:"engine"`
	Quarantines []contextengine.QuarantineRecord `json:"quarantines"`
	HostChecks  []hostCheck                      `json:"hostRequirements"`
	Store       storeReport                      `json:"store"`
	// Explorer is the memory explorer an engine process serves for the
	// store (the plugin's uiAddr): the URL it recorded, token included.
	Explorer *explorerReport `json:"explorer,omitempty"`
	// Summarizer is the summarizer the plugin's engine uses (absent when
	// the config is refused).
	Summarizer *summarizerReport `json:"summarizer,omitempty"`
	// NotChecked is what doctor could not check, and why (the store in
	// use by a running engine).
	NotChecked []string `json:"notChecked,omitempty"`
	Problems   []string `json:"problems"`
	Warnings   []string `json:"warnings"`
}

// storeHolder is the process that holds a Badger store for writing: a
// running engine (`lossless serve` under OpenClaw's gateway, an import, ...).
type storeHolder struct {
	// PID is the pid its LOCK file names (0: the file names none).
	PID int `json:"pid,omitempty"`
	// Running: a process with that pid is visible from here (not when the
	// holder runs in another pid namespace, a container).
	Running bool `json:"running"`
	// Command is its command line when this system shows it.
	Command string `json:"command,omitempty"`
}

// explorerReport is what doctor knows of the memory explorer of the store.
type explorerReport struct {
	// UIAddr is plugins.entries.lossless.config.uiAddr ("" when unset).
	UIAddr string `json:"uiAddr,omitempty"`
	// URL is the URL the last engine process serving the explorer wrote
	// (explorerURLFile), "" when none did; File is where it is read from.
	URL  string `json:"url,omitempty"`
	File string `json:"file"`
	// Listening tells whether something accepts connections at URL now.
	Listening bool `json:"listening"`
}

type hostCheck struct {
	Host      string `json:"host"`
	Operation string `json:"operation"`
	OK        bool   `json:"ok"`
	Error     string `json:"error,omitempty"`
}

type storeReport struct {
	Dir           string `json:"dir"`
	Source        string `json:"source"`
	Exists        bool   `json:"exists"`
	Format        int    `json:"format,omitempty"`
	BuildFormat   int    `json:"buildFormat"`
	DiskBytes     int64  `json:"diskBytes,omitempty"`
	Conversations int64  `json:"conversations,omitempty"`
	Messages      int64  `json:"messages,omitempty"`
	Summaries     int64  `json:"summaries,omitempty"`
	// RefusedSummaries counts the stored summaries the extractive
	// summarizer wrote because the model's answer was refused (method
	// "refused": lossless.AgentStats.RefusedSummaries).
	RefusedSummaries int64  `json:"refusedSummaries"`
	Error            string `json:"error,omitempty"`
	// Recall is what doctor can tell of the recall index without opening
	// it (opening it may rebuild it, which writes).
	Recall *recallReport `json:"recall,omitempty"`
	// Check is what the store's check read and found (lossless.Check):
	// the summary DAG of every conversation, and with --deep every record.
	Check *inspect.CheckResult `json:"check,omitempty"`
	// HeldBy is the process holding the store for writing: doctor then
	// does not open it (Badger admits no other process beside it) and
	// reports only what it sees from outside (DiskBytes).
	HeldBy *storeHolder `json:"heldBy,omitempty"`
	// StaleLockPID is the pid of a LOCK file left behind by a process that
	// stopped without closing the store (no process holds it now).
	StaleLockPID int `json:"staleLockPid,omitempty"`
	// NeedsRepair: the last process left the store without closing it,
	// and it cannot be read before Badger replays its log (which writes).
	NeedsRepair bool `json:"needsRepair,omitempty"`
	// MemLogs are the memtable logs with bytes after the end of what an
	// open reads (checkMemLogs).
	MemLogs []memLogFinding `json:"memLogs,omitempty"`
}

// recallReport is the recall index as doctor sees it: the config's switch
// and the index directory. Doctor does not open the index: the engine checks
// its format and generation, and rebuilds it when needed, when it opens the
// store for writing.
type recallReport struct {
	Enabled   bool   `json:"enabled"`
	Dir       string `json:"dir"`
	Exists    bool   `json:"exists"`
	DiskBytes int64  `json:"diskBytes,omitempty"`
}

// errNeedsRepair marks a store that cannot be opened read-only because the
// last process left it without closing (Badger must replay its log first).
var errNeedsRepair = errors.New("the store needs Badger's log repair")

// openReadOnly opens the store at storeDir with the engine config raw
// (plugins.entries.lossless.config) for reading only: doctor writes
// nothing, rebuilds no index and starts no retention pass.
func openReadOnly(ctx context.Context, raw []byte, storeDir string) (*lossless.Engine, error) {
	url := config.IsStoreURL(storeDir)
	if _, err := os.Stat(storeDir); err != nil && !url {
		return nil, fmt.Errorf("store %s: %w", storeDir, err)
	}
	engRaw, _, err := splitPluginConfig(raw)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(engRaw)
	if err != nil {
		return nil, err
	}
	if url {
		cfg.StoreURL, cfg.StoreDir = storeDir, ""
	} else {
		cfg.StoreDir, cfg.StoreURL = storeDir, ""
	}
	cfg.ReadOnly = true
	e, err := lossless.Open(ctx, cfg)
	if err != nil && strings.Contains(err.Error(), "Log truncate required") {
		return nil, fmt.Errorf("%w: %v", errNeedsRepair, err)
	}
	return e, err
}

func defaultOpenClawConfig() string {
	if p := os.Getenv("OPENCLAW_CONFIG_PATH"); p != "" {
		return p
	}
	if d := os.Getenv("OPENCLAW_STATE_DIR"); d != "" {
		return filepath.Join(d, "openclaw.json")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".openclaw", "openclaw.json")
}

func cmdDoctor() *command {
	var configPath string
	var deep bool
	return &command{
		name: "doctor", args: "",
		summary: "Check an OpenClaw setup: which engine the contextEngine slot resolves to and why, host requirements, quarantines, the store's format and health. Reads only: it changes nothing in the store (no index rebuild, no retention). Exits 1 on a problem.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.BoolVar(&deep, "deep", false, "also read and verify every stored message record (reads the whole store)")
			fs.StringVar(&configPath, "config", "", "the openclaw.json (default $OPENCLAW_CONFIG_PATH, else $OPENCLAW_STATE_DIR/openclaw.json, else ~/.openclaw/openclaw.json)")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("doctor takes no arguments")
			}
			explicit := configPath != ""
			if !explicit {
				configPath = defaultOpenClawConfig()
			}
			rep := runDoctor(ctx, c, configPath, explicit, deep)
			if c.json {
				if err := printJSON(c.io.out, rep); err != nil {
					return err
				}
			} else {
				printDoctor(c.io.out, rep)
			}
			if len(rep.Problems) > 0 {
				return errProblems
			}
			return nil
		},
	}
}

func runDoctor(ctx context.Context, c *cmdEnv, configPath string, explicit, deep bool) *doctorReport {
	rep := &doctorReport{Quarantines: []contextengine.QuarantineRecord{}, Problems: []string{}, Warnings: []string{}}
	problem := func(f string, a ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(f, a...)) }
	warn := func(f string, a ...any) { rep.Warnings = append(rep.Warnings, fmt.Sprintf(f, a...)) }

	// 1. The config.
	rep.Config.Path = configPath
	cfg, err := contextengine.LoadConfig(configPath)
	switch {
	case err == nil:
		rep.Config.Found = true
	case errors.Is(err, fs.ErrNotExist):
		if explicit {
			rep.Config.Error = err.Error()
			problem("config %s does not exist", configPath)
		} else {
			warn("no OpenClaw config at %s: the slot resolves to the default (legacy)", configPath)
		}
		cfg = &contextengine.Config{}
	default:
		rep.Config.Error = err.Error()
		problem("config %s cannot be read: %v", configPath, err)
		cfg = &contextengine.Config{}
	}

	// 2. The slot.
	rep.Resolution = cfg.Resolve()
	slot := rep.Resolution.Slot
	if slot != "" && slot != lossless.EngineID && rep.Resolution.Reason != contextengine.ReasonDefault {
		warn("the slot selects %q, which is not this engine; only its resolution is checked", slot)
	}

	// 3. The store the engine would use: plugins.entries.lossless.config's
	// storeDir when set, else this command's store.
	// The plugin's own options (bridge, uiAddr) are not the engine's: the
	// plugin keeps them (openclaw-plugin/lib/engine.js), so does doctor.
	// A config the engine would refuse is reported as such, and the slot is
	// then not resolved through the engine (that would report the refusal
	// as a quarantine).
	engCfg, plugOpts, cfgErr := splitPluginConfig(cfg.Plugins.Entries[lossless.EngineID].Config)
	rep.Store.Dir, rep.Store.Source = c.store, "--store / $LOSSLESS_STORE / per-user default"
	if !c.storeSet && os.Getenv("LOSSLESS_STORE") == "" {
		rep.Store.Source = "per-user default"
	}
	pc, err := config.Parse(engCfg)
	if err == nil {
		err = pc.Validate()
	}
	switch {
	case cfgErr != nil:
		problem("plugins.entries.lossless.config: %v", cfgErr)
	case err != nil:
		cfgErr = err
		problem("plugins.entries.lossless.config: %v (the engine process refuses this config: OpenClaw would fall back to legacy)", err)
	}
	if cfgErr == nil {
		rep.Summarizer, _ = pluginSummarizer(pc) // Validate checked it
	}
	if cfgErr != nil {
		// The store it names, read leniently, is still checked.
		var loose struct {
			StoreDir string `json:"storeDir"`
			StoreURL string `json:"storeUrl"`
		}
		_ = json.Unmarshal(cfg.Plugins.Entries[lossless.EngineID].Config, &loose)
		pc.StoreDir, pc.StoreURL = loose.StoreDir, loose.StoreURL
		warn("the engine was not opened with its config (see the problem): the store is checked with the default config")
	}
	if pc.StoreURL != "" {
		rep.Store.Dir, rep.Store.Source = pc.StoreURL, "plugins.entries.lossless.config.storeUrl"
	} else if pc.StoreDir != "" {
		rep.Store.Dir, rep.Store.Source = pc.StoreDir, "plugins.entries.lossless.config.storeDir"
	}
	rep.Store.BuildFormat = lossless.FormatVersion
	if config.IsStoreURL(rep.Store.Dir) {
		rep.Store.Exists = true // a database: opening it says whether it holds a store
	} else if st, err := os.Stat(rep.Store.Dir); err == nil && st.IsDir() {
		rep.Store.Exists = true
	} else {
		warn("store %s does not exist yet (it is created on first use)", rep.Store.Dir)
	}
	// A Badger store in use: the process writing it (the gateway's engine)
	// holds its directory lock, and no other process can open it, not even
	// read-only. Doctor then does not try (a failed open would look like a
	// quarantine) and says what it could not check.
	var lock storeLock
	if rep.Store.Exists && !config.IsStoreURL(rep.Store.Dir) {
		l, err := probeStoreLock(rep.Store.Dir)
		if err != nil {
			warn("%v", err)
		}
		lock = l
	}

	// 4. Resolve the slot as the host would, with the engine registered as
	// the plugin registers it; failures become quarantine records. The store
	// is opened only when it exists (doctor never creates one), and read
	// only (doctor changes nothing in it).
	reg := contextengine.NewRegistry()
	reg.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	storeDir := rep.Store.Dir
	rep.Store.Dir = config.RedactURL(storeDir) // a URL's password is not shown
	repair := false                            // the store needs Badger's log repair: nothing in it is checked
	factory := func(ctx context.Context, opts core.FactoryOptions) (core.Engine, error) {
		e, err := openReadOnly(ctx, opts.Config, storeDir)
		if errors.Is(err, errNeedsRepair) {
			repair = true
		}
		return e, err
	}
	_ = reg.Register(lossless.EngineID, factory, pluginOwner)
	// heldNow probes the lock again after a failed open: an engine may have
	// taken the store since the first probe.
	heldNow := func() bool {
		if !lock.Held && rep.Store.Exists && !config.IsStoreURL(storeDir) {
			if l, err := probeStoreLock(storeDir); err == nil && l.Held {
				lock = l
			}
		}
		return lock.Held
	}
	var eng *lossless.Engine
	if !lock.Held && slot == lossless.EngineID && rep.Resolution.EngineID == lossless.EngineID && rep.Store.Exists && cfgErr == nil {
		g, err := reg.Open(ctx, cfg)
		if err == nil {
			defer g.Close()
		}
		switch {
		case (err != nil || len(reg.Quarantines()) > 0) && heldNow():
			rep.Engine = rep.Resolution.EngineID
		case err != nil:
			problem("resolve: %v", err)
		case repair:
			// The engine's own open (for writing) replays the log first:
			// it is not refused, whatever doctor's read-only open met.
			rep.Engine = rep.Resolution.EngineID
		default:
			rep.Engine = g.Info().ID
			eng, _ = g.Engine().(*lossless.Engine)
		}
		if !repair && !lock.Held {
			rep.Quarantines = append(rep.Quarantines, reg.Quarantines()...)
		}
		for _, q := range rep.Quarantines {
			problem("engine %q (owner %q) quarantined at %s: %s", q.EngineID, q.Owner, q.Operation, q.Reason)
		}
	} else {
		rep.Engine = rep.Resolution.EngineID
	}
	if eng == nil && rep.Store.Exists && !repair && !lock.Held {
		// Open the store directly for its checks (with the default config
		// when the configured one is invalid).
		raw := engCfg
		if cfgErr != nil {
			raw = nil
		}
		e, err := openReadOnly(ctx, raw, storeDir)
		if err != nil && heldNow() {
			// Taken meanwhile: reported below as in use.
		} else if err != nil {
			rep.Store.Error = err.Error()
			if errors.Is(err, errNeedsRepair) {
				repair = true
				rep.Store.Error = ""
			} else if errors.Is(err, lossless.ErrNoFormat) {
				problem("%s", noFormatProblem(ctx, rep.Store.Dir, storeDir))
			} else if errors.Is(err, core.ErrFormatTooNew) {
				problem("store %s was written by a newer format than this build (%d): %v", rep.Store.Dir, lossless.FormatVersion, err)
			} else {
				problem("store %s cannot be opened: %v%s", rep.Store.Dir, err, unclosedNote(storeDir, lock))
			}
		} else {
			defer e.Close()
			eng = e
		}
	}
	if lock.Held || repair {
		// Not opened: its size is still seen from outside.
		if n, err := badgerstore.DirBytes(storeDir); err != nil {
			warn("%v", err)
		} else {
			rep.Store.DiskBytes = n
		}
	}
	switch {
	case lock.Held:
		rep.Store.HeldBy = &storeHolder{PID: lock.PID, Running: lock.Running, Command: lock.Command}
		if slot == lossless.EngineID && rep.Resolution.EngineID == lossless.EngineID && cfgErr == nil {
			rep.NotChecked = append(rep.NotChecked, "whether the engine opens the store (a failure would be a quarantine): the process holding the store has it open")
		}
		rep.NotChecked = append(rep.NotChecked,
			"the store's format, conversations and messages, and its invariants (the summary DAG, the records): no other process can open a Badger store while one writes it; stop that process (the gateway) and run doctor again to check them")
	case lock.PID != 0:
		rep.Store.StaleLockPID = lock.PID
		warn("store %s: its LOCK file names pid %d, which does not hold the store: that process stopped without closing it (the next process to open the store for writing replaces the file)", rep.Store.Dir, lock.PID)
	}
	if rep.Store.Exists && !lock.Held && !config.IsStoreURL(storeDir) {
		checkMemLogs(rep, storeDir, problem, warn)
	}
	if repair {
		rep.Store.NeedsRepair = true
		warn("store %s was left open by a process that stopped: Badger replays its log the next time the engine opens it for writing (OpenClaw, `lossless serve`, `import`); doctor reads only, so it checked nothing in the store", rep.Store.Dir)
	}

	// 5. Host requirements of the engine, on each known host.
	// Every lossless engine describes itself the same, store or not.
	engInfo := lossless.EngineInfo()
	if eng != nil {
		engInfo = eng.Info()
	}
	for _, h := range []contextengine.Host{contextengine.EmbeddedRuntime, contextengine.CodexAppServer, contextengine.GenericCLI} {
		for _, op := range []string{core.OpAgentRun, core.OpManualCompact, core.OpSubagentSpawn} {
			hc := hostCheck{Host: h.Label, Operation: op, OK: true}
			if err := contextengine.CheckHostRequirements(engInfo, op, h); err != nil {
				hc.OK, hc.Error = false, err.Error()
				if h.Label == contextengine.EmbeddedRuntime.Label {
					problem("%v", err)
				}
			}
			rep.HostChecks = append(rep.HostChecks, hc)
		}
	}

	// 6. The store's format and contents.
	if eng != nil {
		st, err := eng.Stats(ctx)
		if err != nil {
			rep.Store.Error = err.Error()
			problem("store %s: %v", rep.Store.Dir, err)
		} else {
			rep.Store.Format, rep.Store.DiskBytes = st.Format, st.DiskBytes
			for _, a := range st.Agents {
				rep.Store.Conversations += a.Conversations
				rep.Store.Messages += a.Messages
				rep.Store.Summaries += a.Summaries
				rep.Store.RefusedSummaries += a.RefusedSummaries
			}
			if n := rep.Store.RefusedSummaries; n > 0 {
				warn("%s: the summarizer's model answered summary requests with something else (see the explorer's Health view, `lossless ui`, for which and why)", refusedLine(n))
			}
		}
		// The store's invariants, read only (every record with --deep).
		if cr, err := eng.Check(ctx, deep); err != nil {
			problem("store check: %v", err)
		} else {
			rep.Store.Check = &cr
			for _, p := range cr.Problems {
				problem("conversation %s (agent %s, session %s): %s", p.Conversation, p.Agent, p.SessionID, p.Problem)
			}
		}
	}
	// 7. The recall index, seen from outside: opening it may rebuild it
	// (a missing or stale index is rebuilt from the store when the engine
	// opens for writing), which doctor does not do.
	if pc, err := config.Parse(engCfg); err == nil && rep.Store.Exists && !config.IsStoreURL(storeDir) {
		rr := &recallReport{Enabled: pc.RecallEnabled(), Dir: filepath.Join(storeDir, "index")}
		if st, err := os.Stat(rr.Dir); err == nil && st.IsDir() {
			rr.Exists = true
			rr.DiskBytes = dirBytes(rr.Dir)
		} else if rr.Enabled && eng != nil {
			warn("the recall index does not exist yet: the engine builds it from the store when it next opens for writing (recall is unavailable until it is done)")
		}
		rep.Store.Recall = rr
	}
	// 8. The memory explorer the engine process serves (uiAddr).
	if dir, err := explorerStateDir(storeDir); err == nil {
		er := &explorerReport{UIAddr: plugOpts.UIAddr, File: filepath.Join(dir, explorerURLFile)}
		if u, err := readExplorerURL(dir); err == nil {
			er.URL, er.Listening = u, explorerListening(u)
		} else if !errors.Is(err, errNoExplorerURL) {
			warn("memory explorer: %v", err)
		}
		if er.UIAddr != "" || er.URL != "" {
			rep.Explorer = er
		}
	}
	return rep
}

// refusedLine says that n stored summaries were written by the extractive
// summarizer because the model's answer was refused.
func refusedLine(n int64) string {
	what := "summaries were"
	if n == 1 {
		what = "summary was"
	}
	return fmt.Sprintf("%d %s written by the extractive summarizer because the model's answer was no summary, also at the stricter retry (empty, a canned reply, not shorter than its sources, or without their identifiers; method \"refused\")", n, what)
}

// dirBytes is the blocks allocated to the files under dir, as du counts
// them (0 when it cannot be read): the measure of Stats' DiskBytes and
// IndexBytes.
func dirBytes(dir string) int64 {
	n, _ := diskusage.Dir(dir)
	return n
}

func printDoctor(w io.Writer, r *doctorReport) {
	// A host check fails as a problem only on the embedded runtime (the
	// host OpenClaw runs the engine in); another host that cannot run an
	// operation is "n/a", so FAIL lines always come with problems.
	mark := func(h hostCheck) string {
		switch {
		case h.OK:
			return "ok  "
		case h.Host == contextengine.EmbeddedRuntime.Label:
			return "FAIL"
		}
		return "n/a "
	}
	fmt.Fprintf(w, "config     %s", r.Config.Path)
	switch {
	case r.Config.Error != "":
		fmt.Fprintf(w, " (error: %s)\n", r.Config.Error)
	case !r.Config.Found:
		fmt.Fprintln(w, " (not found)")
	default:
		fmt.Fprintln(w)
	}
	res := r.Resolution
	slot := res.Slot
	if !res.SlotSet {
		slot = "(unset)"
	}
	fmt.Fprintf(w, "slot       plugins.slots.contextEngine = %s\n", slot)
	fmt.Fprintf(w, "engine     %s (%s): %s\n", r.Engine, res.Reason, res.Detail)
	switch {
	case len(r.Quarantines) > 0:
	case r.Store.HeldBy != nil:
		fmt.Fprintln(w, "quarantine not tried: the store is in use by a running engine (see store)")
	default:
		fmt.Fprintln(w, "quarantine none")
	}
	for _, q := range r.Quarantines {
		fmt.Fprintf(w, "quarantine %s (owner %s) at %s, %s: %s\n", q.EngineID, q.Owner, q.Operation,
			q.FailedAt.UTC().Format("2006-01-02 15:04:05Z"), q.Reason)
	}
	for _, h := range r.HostChecks {
		fmt.Fprintf(w, "host       %s %-16s %-20s %s\n", mark(h), h.Operation, h.Host, h.Error)
	}
	s := r.Store
	fmt.Fprintf(w, "store      %s (from %s)", s.Dir, s.Source)
	switch {
	case !s.Exists:
		fmt.Fprintln(w, ": not created yet")
	case s.HeldBy != nil:
		fmt.Fprintf(w, ": in use by %s, a running engine; not opened (Badger admits no other process beside it), %s on disk (allocated, as du counts)\n",
			s.HeldBy.describe(), humanBytes(s.DiskBytes))
	case s.NeedsRepair:
		fmt.Fprintf(w, ": not opened (left open by a process that stopped: see the warning), %s on disk (allocated, as du counts)\n", humanBytes(s.DiskBytes))
	case s.Error != "":
		fmt.Fprintf(w, ": error: %s\n", s.Error)
	default:
		measure := "allocated, as du counts"
		if config.IsStoreURL(s.Dir) {
			measure = "its tables and indexes, as PostgreSQL counts them"
		}
		fmt.Fprintf(w, ": format %d (this build writes %d), %s on disk (%s), %d conversations, %d messages\n",
			s.Format, s.BuildFormat, humanBytes(s.DiskBytes), measure, s.Conversations, s.Messages)
		fmt.Fprintf(w, "summaries  %d stored, %d refused (the model's answer was no summary: the extractive summarizer wrote it)\n",
			s.Summaries, s.RefusedSummaries)
	}
	if c := s.Check; c != nil {
		what := "summary DAG and the records other than messages"
		if c.Deep {
			what = "every message record, the summary DAG and the other records"
		}
		fmt.Fprintf(w, "check      %s: %d conversations, %d messages, %d other records read, %d problem(s)\n", what, c.Conversations, c.Messages, c.Records, len(c.Problems))
		for _, n := range c.NotRead {
			fmt.Fprintf(w, "not read   %s\n", n)
		}
	}
	if r := s.Recall; r != nil {
		switch {
		case !r.Enabled:
			fmt.Fprintln(w, "recall     off (plugins.entries.lossless.config.recall.enabled)")
		case !r.Exists:
			fmt.Fprintf(w, "recall     no index yet at %s (built when the engine opens for writing)\n", r.Dir)
		default:
			fmt.Fprintf(w, "recall     index at %s, %s (not opened: the engine checks it when it opens for writing)\n", r.Dir, humanBytes(r.DiskBytes))
		}
	}
	printSummarizer(w, r.Summarizer)
	if e := r.Explorer; e != nil {
		switch {
		case e.URL == "":
			fmt.Fprintf(w, "explorer   uiAddr %s: no URL yet (%s is written when the engine process starts serving it)\n", e.UIAddr, e.File)
		case e.Listening:
			fmt.Fprintf(w, "explorer   %s (from %s)\n", e.URL, e.File)
		default:
			fmt.Fprintf(w, "explorer   %s (from %s; not listening now: the engine process that served it has stopped)\n", e.URL, e.File)
		}
	}
	for _, x := range r.NotChecked {
		fmt.Fprintf(w, "not checked %s\n", x)
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "warning    %s\n", x)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "PROBLEM    %s\n", p)
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "no problems found")
	} else {
		fmt.Fprintf(w, "%d problem(s) found\n", len(r.Problems))
	}
}

// describe names the holder for doctor's store line: its pid and command
// line, or why the pid says little.
func (h *storeHolder) describe() string {
	switch {
	case h.PID == 0:
		return "a process its LOCK file does not name"
	case !h.Running:
		return fmt.Sprintf("pid %d (per its LOCK file; no such process is visible here: another pid namespace or container?)", h.PID)
	case h.Command != "":
		return fmt.Sprintf("pid %d (%s)", h.PID, h.Command)
	}
	return fmt.Sprintf("pid %d", h.PID)
}
