package faultsuite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

var (
	flagFlips    = flag.Int("flips", 40, "how many single-byte flips TestFaultInjection runs")
	flagSeed     = flag.Uint64("seed", 1, "the seed of TestFaultInjection's flips (files, offsets, values)")
	flagManifest = flag.Bool("manifest", true, "also flip the length, the checksum and the first data byte of each change set of the store's MANIFEST")
	flagKeep     = flag.String("keep", "", "a directory where TestFaultInjection keeps the undamaged store, the transcripts and each failing flip's damaged store, to look at")
)

const (
	// transcriptSeed and transcriptMessages make the store's transcript.
	transcriptSeed     = 37
	transcriptMessages = 300
	// compactBudget is the budget the store is compacted to: small enough
	// that compaction writes leaf summaries and a condensed one over them.
	compactBudget = "8000"
	// commandTimeout bounds one command: past it, it hangs.
	commandTimeout = 60 * time.Second
	// grepWord is a word of the transcript that grep finds.
	grepWord = "error"
)

// explicitFlag reports whether name was set on the command line.
func explicitFlag(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// run is one command's outcome.
type run struct {
	code     int // exit code; -1 when it was killed after commandTimeout
	stdout   string
	stderr   string
	timedOut bool
}

// panicked reports whether the command died of a Go panic or a fatal
// runtime error (a non-zero exit with a goroutine dump; a panic a library
// recovered and the command logged is not one).
func (r run) panicked() bool {
	return r.code != 0 && (strings.Contains(r.stderr, "panic: ") || strings.Contains(r.stderr, "fatal error: ")) &&
		strings.Contains(r.stderr, "\ngoroutine ")
}

// suite is the state of one TestFaultInjection.
type suite struct {
	t       *testing.T
	bin     string
	home    string
	root    string
	store   string // the work copy every command runs on (a fixed path: outputs name it)
	session string
	file    string // the transcript, at a fixed path (imports check it by path)
	orig    []byte // the transcript as first imported
	extra   []byte // the transcript with one message more (the write)
	newMsg  []byte // that message's raw JSON
}

// cmd runs the binary with args on the work store.
func (s *suite) cmd(args ...string) run {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	full := append([]string{args[0], "--store", s.store}, args[1:]...)
	c := exec.CommandContext(ctx, s.bin, full...)
	c.Env = []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH"), "LOSSLESS_TOKENIZER=chars4", "TMPDIR=" + os.TempDir()}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.code, r.timedOut = -1, true
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		s.t.Fatalf("run lossless %v: %v", full, err)
	}
	return r
}

// readCommand is one read command of the suite.
type readCommand struct {
	name string
	args []string
	// readOnly: the command opens the store read-only, so it must change
	// no file of it, damaged or not.
	readOnly bool
}

// readCommands are the read commands, in the order they run: those that
// open the store read-only, then assemble (which opens it for writing).
func readCommands(session, summary string) []readCommand {
	return []readCommand{
		{"sessions", []string{"sessions"}, true},
		{"stats", []string{"stats"}, true},
		{"export", []string{"export", "--session", session}, true},
		{"grep", []string{"grep", grepWord}, true},
		{"describe", []string{"describe", summary}, true},
		{"expand", []string{"expand", "--max-tokens", "100000000", summary}, true},
		{"doctor", []string{"doctor"}, true},
		{"doctor --deep", []string{"doctor", "--deep"}, true},
		{"assemble", []string{"assemble", "--session", session, "--json"}, false},
	}
}

// recordReaders are the commands doctor --deep vouches for when it exits
// 0: those that read the store's records (assemble also opens the recall
// index, which doctor says it does not open).
var recordReaders = []string{"sessions", "stats", "export", "grep", "describe", "expand"}

// TestFaultInjection: see the package documentation.
func TestFaultInjection(t *testing.T) {
	if !explicitFlag("flips") && !explicitFlag("seed") && os.Getenv("LOSSLESS_TEST_FAULTS") == "" {
		t.Skip("the fault-injection suite runs in .ci/run's own stage: go test -run TestFaultInjection ./internal/faultsuite -flips 40 (or set LOSSLESS_TEST_FAULTS=1)")
	}
	if *flagFlips < 1 {
		t.Fatalf("-flips %d: want at least 1", *flagFlips)
	}
	start := time.Now()
	s := setup(t)
	pristine := filepath.Join(s.root, "pristine")

	// The golden outputs, on a fresh copy at the work path.
	s.fresh(pristine)
	assemble := s.cmd("assemble", "--session", s.session, "--json")
	if assemble.code != 0 {
		t.Fatalf("assemble on the undamaged store: exit %d\n%s", assemble.code, assemble.stderr)
	}
	summary := regexp.MustCompile(`sum_[0-9a-f]{32}`).FindString(assemble.stdout)
	if summary == "" {
		t.Fatalf("the compacted store's context shows no summary:\n%.2000s", assemble.stdout)
	}
	cmds := readCommands(s.session, summary)
	// Each pass on a fresh copy, in the order the flips run them (assemble
	// opens the store for writing, which may merge the recall index's
	// segments: what stats and doctor then say of its size changes).
	golden := map[string]run{}
	for pass := 0; pass < 2; pass++ {
		s.fresh(pristine)
		snap := snapshot(t, s.store)
		for _, c := range cmds {
			r := s.cmd(c.args...)
			if r.code != 0 || r.stdout == "" {
				t.Fatalf("%s on the undamaged store: exit %d\nstdout:\n%.2000s\nstderr:\n%.2000s", c.name, r.code, r.stdout, r.stderr)
			}
			if d := diffSnapshot(snap, snapshot(t, s.store)); c.readOnly && d != "" {
				t.Fatalf("%s, which opens the store read-only, changed the undamaged store's files: %s", c.name, d)
			}
			if pass == 0 {
				golden[c.name] = r
			} else if r.stdout != golden[c.name].stdout {
				t.Fatalf("%s prints differently on two copies of the undamaged store: the suite cannot compare it: %s", c.name, firstDiff(golden[c.name].stdout, r.stdout))
			}
		}
	}
	if !strings.Contains(golden["doctor --deep"].stdout, "no problems found") || !strings.Contains(golden["doctor"].stdout, "no problems found") {
		t.Fatalf("doctor on the undamaged store does not say it found no problems:\n%s", golden["doctor"].stdout)
	}
	exportWant := golden["export"].stdout
	if n := strings.Count(exportWant, "\n"); n != transcriptMessages {
		t.Fatalf("export of the undamaged store prints %d lines, want %d", n, transcriptMessages)
	}
	exportMore := exportWant + string(s.newMsg) + "\n"
	// The write on the undamaged store: acknowledged, and exported after.
	if w := s.write(); !w.acked || w.imported != 1 {
		t.Fatalf("the write on the undamaged store was not acknowledged as one message stored: exit %d\n%s%s", w.run.code, w.run.stdout, w.run.stderr)
	}
	if e := s.cmd("export", "--session", s.session); e.code != 0 || e.stdout != exportMore {
		t.Fatalf("export after the write on the undamaged store: exit %d, %d bytes, want %d", e.code, len(e.stdout), len(exportMore))
	}
	files := storeFiles(t, pristine)
	t.Logf("store: %d files, %d messages, summary %s; golden outputs recorded in %v", len(files), transcriptMessages, summary, time.Since(start).Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(*flagSeed, 0x6c6f73736c657373))
	order := rng.Perm(len(files))
	var table []string
	header := fmt.Sprintf("%-6s %-34s %9s %-7s", "flip", "file", "offset", "byte")
	for _, c := range cmds {
		header += fmt.Sprintf(" %s", abbrev(c.name))
	}
	header += " | write  after"
	table = append(table, header)
	var failed, refusedAll, identicalAll, acked int
	var flips []flip
	for i := 0; i < *flagFlips; i++ {
		f := files[order[i%len(files)]]
		if i%len(files) == len(files)-1 {
			order = rng.Perm(len(files))
		}
		off := rng.Int64N(f.size)
		flips = append(flips, flip{id: strconv.Itoa(i), rel: f.rel, off: off, mask: byte(1 + rng.IntN(255))})
	}
	if *flagManifest {
		flips = append(flips, manifestFlips(t, pristine)...)
	}
	failedFlips := map[string]bool{}
	for _, fl := range flips {
		s.fresh(pristine)
		old := flipByte(t, filepath.Join(s.store, fl.rel), fl.off, fl.mask)
		where := fmt.Sprintf("flip %s: %s offset %d (0x%02x -> 0x%02x)", fl.id, fl.rel, fl.off, old, old^fl.mask)
		fail := func(format string, args ...any) {
			failed++
			failedFlips[fl.id] = true
			t.Errorf("%s: %s", where, fmt.Sprintf(format, args...))
		}

		row := fmt.Sprintf("%-6s %-34s %9d %02x->%02x", fl.id, fl.rel, fl.off, old, old^fl.mask)
		outcome := map[string]string{}
		runs := map[string]run{}
		snap := snapshot(t, s.store)
		for _, c := range cmds {
			r := s.cmd(c.args...)
			runs[c.name] = r
			if c.readOnly {
				now := snapshot(t, s.store)
				if d := diffSnapshot(snap, now); d != "" {
					outcome[c.name] = wroteStore
					fail("%s, which opens the store read-only, changed its files (exit %d): %s\nstderr:\n%s", c.name, r.code, d, head(r.stderr, 600))
					snap = now
					continue
				}
			}
			switch outcome[c.name] = judgeRead(golden[c.name].stdout, r); outcome[c.name] {
			case hung:
				fail("%s hung (killed after %v)", c.name, commandTimeout)
			case crashed:
				fail("%s panicked (exit %d):\n%s", c.name, r.code, head(r.stderr, 1500))
			case differs:
				fail("%s exited 0 but printed other output than on the undamaged store: %s\nstderr:\n%s", c.name, firstDiff(golden[c.name].stdout, r.stdout), head(r.stderr, 600))
			}
		}
		// doctor's exit 0 is a claim about the store: checked against what
		// the other commands read.
		for _, d := range []string{"doctor --deep", "doctor"} {
			if c, ok := judgeDoctor(d, outcome); !ok {
				outcome[d] = missed
				fail("%s exited 0 saying no problems, but %s did not read the store back (exit %d, %s):\n%s", d, c, runs[c].code, outcome[c], head(runs[c].stderr, 600))
			}
		}
		for _, c := range cmds {
			row += fmt.Sprintf(" %*s", len(abbrev(c.name)), outcome[c.name])
		}
		all := func(want string) bool {
			for _, c := range cmds {
				if outcome[c.name] != want {
					return false
				}
			}
			return true
		}
		if all(refused) {
			refusedAll++
		}
		if all(same) {
			identicalAll++
		}

		// The write, and what export says after it.
		w := s.write()
		wcol := "refuse"
		switch {
		case w.run.timedOut:
			wcol = "hang"
			fail("the write hung (killed after %v)", commandTimeout)
		case w.run.panicked():
			wcol = "panic"
			fail("the write panicked (exit %d):\n%s", w.run.code, head(w.run.stderr, 1500))
		case w.acked:
			wcol = "ack"
			if w.imported != 1 {
				// More than the one new message: it stored some again
				// (export then shows them twice, and fails the flip).
				wcol = fmt.Sprintf("ack%d", w.imported)
			}
			acked++
		case w.run.code == 0:
			wcol = "exit0"
		}
		after := s.cmd("export", "--session", s.session)
		acol := judgeAfter(exportWant, exportMore, w.acked, after)
		switch acol {
		case hung:
			fail("export after the write hung")
		case crashed:
			fail("export after the write panicked:\n%s", head(after.stderr, 1500))
		case lost:
			if w.acked {
				fail("export after an acknowledged write exited 0 without every original message and the new one byte for byte: %s\nthe write (exit %d) printed:\n%s%s", firstDiff(exportMore, after.stdout), w.run.code, head(w.run.stdout, 600), head(w.run.stderr, 600))
			} else {
				fail("export after a write not acknowledged exited 0 with other output than the original messages (with or without the new one): %s\nthe write (exit %d) printed:\n%s%s", firstDiff(exportWant, after.stdout), w.run.code, head(w.run.stdout, 600), head(w.run.stderr, 600))
			}
		}
		row += fmt.Sprintf(" | %-6s %s", wcol, acol)
		if failedFlips[fl.id] && *flagKeep != "" {
			s.keep(pristine, "flip-"+fl.id, fl.rel, fl.off, fl.mask)
		}
		if failedFlips[fl.id] {
			row += "  FAIL"
		}
		table = append(table, row)
	}
	legend := "legend: = exit 0, same output; E non-zero exit; X exit 0, other output (FAIL); M doctor exit 0 while a command it vouches for failed (FAIL); W a read-only command changed the store's files (FAIL); P panic, T hang (FAIL); " +
		"write: ack (exit 0, 1 imported), ackN (exit 0, N imported), refuse (non-zero), exit0 (exit 0, nothing imported); after (export): =+1 originals and the new message, = originals only (write not acknowledged), E non-zero, LOST (FAIL)"
	t.Logf("fault injection, seed %d, %d random flips over %d files and %d flips of the MANIFEST's change sets (m<set>.len, .crc, .data):\n%s\n%s",
		*flagSeed, *flagFlips, len(files), len(flips)-*flagFlips, strings.Join(table, "\n"), legend)
	t.Logf("summary: %d flips, %d failing (%d failures), %d read identically by every command, %d refused by every command, %d writes acknowledged; %v (go test -run TestFaultInjection ./internal/faultsuite -flips %d -seed %d)",
		len(flips), len(failedFlips), failed, identicalAll, refusedAll, acked, time.Since(start).Round(time.Second), *flagFlips, *flagSeed)
}

// The outcomes of a command on a damaged store, as the table shows them.
const (
	same       = "="    // exit 0, the undamaged store's output
	refused    = "E"    // a non-zero exit
	differs    = "X"    // exit 0 with other output: a failure
	missed     = "M"    // doctor's exit 0 while a command it vouches for did not read the store back: a failure
	crashed    = "P"    // a Go panic: a failure
	hung       = "T"    // killed after commandTimeout: a failure
	wroteStore = "W"    // a read-only command changed the store's files: a failure
	added      = "=+1"  // export after the write: the original messages and the new one
	lost       = "LOST" // export after the write: exit 0 with anything else (or without the new one after an acknowledged write): a failure
)

// judgeRead is the outcome of read command r whose output on the undamaged
// store is golden.
func judgeRead(golden string, r run) string {
	switch {
	case r.timedOut:
		return hung
	case r.panicked():
		return crashed
	case r.code != 0:
		return refused
	case r.stdout == golden:
		return same
	}
	return differs
}

// vouches names, for each doctor command, the commands whose reads its
// exit 0 vouches for: doctor --deep reads every record (recordReaders);
// doctor every record but the messages, which stats alone reads no more
// than.
var vouches = map[string][]string{
	"doctor --deep": recordReaders,
	"doctor":        {"stats"},
}

// judgeDoctor checks doctor command d's outcome against the others': ok is
// false when d exited 0 with its undamaged output while culprit, a command
// it vouches for, did not read the store back.
func judgeDoctor(d string, outcome map[string]string) (culprit string, ok bool) {
	if outcome[d] != same {
		return "", true
	}
	for _, c := range vouches[d] {
		if outcome[c] != same {
			return c, false
		}
	}
	return "", true
}

// judgeAfter is the outcome of export after the write: want is the
// undamaged store's export, more want with the written message, acked
// whether the write was acknowledged.
func judgeAfter(want, more string, acked bool, after run) string {
	switch {
	case after.timedOut:
		return hung
	case after.panicked():
		return crashed
	case after.code != 0:
		return refused
	case after.stdout == more:
		return added
	case after.stdout == want && !acked:
		return same
	}
	return lost
}

// abbrev is a command's column header.
func abbrev(name string) string {
	switch name {
	case "sessions":
		return "ses"
	case "stats":
		return "sta"
	case "export":
		return "exp"
	case "grep":
		return "grp"
	case "describe":
		return "des"
	case "expand":
		return "xpd"
	case "doctor":
		return "doc"
	case "doctor --deep":
		return "deep"
	case "assemble":
		return "asm"
	}
	return name
}

// importedRe finds the number of messages import stored in its output.
var importedRe = regexp.MustCompile(`: (\d+) imported,`)

// wrote is the write's outcome.
type wrote struct {
	run run
	// imported is the number of messages the import says it stored.
	imported int
	// acked: the import exited 0 saying it stored messages.
	acked bool
}

// write imports the transcript with one message more than the store holds
// (the file at its path grown by one line, as a host appends to it).
func (s *suite) write() wrote {
	s.t.Helper()
	if err := os.WriteFile(s.file, s.extra, 0o644); err != nil {
		s.t.Fatal(err)
	}
	r := s.cmd("import", s.file)
	w := wrote{run: r}
	if m := importedRe.FindStringSubmatch(r.stdout); m != nil {
		w.imported, _ = strconv.Atoi(m[1])
	}
	w.acked = r.code == 0 && w.imported > 0
	return w
}

// keep copies the undamaged store and the transcripts to the -keep
// directory (once), and the store damaged as flip name damaged it to
// name/store there.
func (s *suite) keep(pristine, name, rel string, off int64, mask byte) {
	s.t.Helper()
	dir := *flagKeep
	if _, err := os.Stat(filepath.Join(dir, "pristine")); errors.Is(err, fs.ErrNotExist) {
		copyDir(s.t, pristine, filepath.Join(dir, "pristine"))
		for file, b := range map[string][]byte{"session.jsonl": s.orig, "session-plus-one.jsonl": s.extra} {
			if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	to := filepath.Join(dir, name, "store")
	if err := os.RemoveAll(to); err != nil {
		s.t.Fatal(err)
	}
	copyDir(s.t, pristine, to)
	flipByte(s.t, filepath.Join(to, rel), off, mask)
	s.t.Logf("%s: the damaged store is kept in %s (the transcript the store imported was %s; import it from there again at that path to repeat the write)", name, to, s.file)
}

// fresh replaces the work store by a copy of the store in dir.
func (s *suite) fresh(dir string) {
	s.t.Helper()
	if err := os.RemoveAll(s.store); err != nil {
		s.t.Fatal(err)
	}
	copyDir(s.t, dir, s.store)
	if err := os.WriteFile(s.file, s.orig, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// setup builds the binary and the compacted store (left in root/pristine).
func setup(t *testing.T) *suite {
	t.Helper()
	root := t.TempDir()
	s := &suite{t: t, root: root, home: filepath.Join(root, "home"), store: filepath.Join(root, "work", "store")}
	if err := os.MkdirAll(s.home, 0o755); err != nil {
		t.Fatal(err)
	}
	s.bin = filepath.Join(root, "lossless")
	build := exec.Command("go", "build", "-o", s.bin, "./cmd/lossless")
	build.Dir = testutil.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/lossless: %v\n%s", err, out)
	}

	if err := os.MkdirAll(filepath.Join(root, "transcript"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.file = filepath.Join(root, "transcript", "session.jsonl")
	info, err := synth.WriteSessionFile(s.file, transcriptSeed, transcriptMessages)
	if err != nil {
		t.Fatal(err)
	}
	s.session = info.ID
	if s.orig, err = os.ReadFile(s.file); err != nil {
		t.Fatal(err)
	}
	s.extra, s.newMsg = appendMessage(t, s.orig)

	// The store is made at the work path, then kept aside as the pristine
	// copy.
	if r := s.cmd("import", s.file); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf(": %d imported,", transcriptMessages)) {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := s.cmd("compact", "--session", s.session, "--force", "--budget", compactBudget); r.code != 0 {
		t.Fatalf("compact: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := os.Rename(s.store, filepath.Join(root, "pristine")); err != nil {
		t.Fatal(err)
	}
	return s
}

// appendMessage returns the transcript with one more message entry after
// its last, and that message's raw JSON.
func appendMessage(t *testing.T, transcript []byte) (grown, msg []byte) {
	t.Helper()
	lines := bytes.Split(bytes.TrimRight(transcript, "\n"), []byte("\n"))
	var last struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil || last.ID == "" {
		t.Fatalf("the transcript's last entry has no id: %v", err)
	}
	msg = []byte(`{"role":"user","content":"fault injection: a message written after the flip","timestamp":1767700000000}`)
	entry := fmt.Sprintf(`{"type":"message","id":"fa017000","parentId":%q,"timestamp":"2026-01-06T12:00:00.000Z","message":%s}`+"\n", last.ID, msg)
	return append(slices.Clone(transcript), entry...), msg
}

// flip is one byte flipped: id names it in the table ("17": the 18th
// random flip; "m2.len": a flip of the MANIFEST's third change set's
// length), rel is the file in the store, mask what the byte is XORed with.
type flip struct {
	id   string
	rel  string
	off  int64
	mask byte
}

// manifestFlips are flips of every change set of the Badger MANIFEST in
// store dir: the low byte of its length, a byte of its checksum and its
// first data byte. (Badger replays the MANIFEST as a header, "Bdgr" and a
// version, then change sets of a 4-byte big-endian length, a 4-byte CRC and
// the change set's bytes; a change set that does not check is where its
// replay stops.)
func manifestFlips(t *testing.T, dir string) []flip {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 || string(b[:4]) != "Bdgr" {
		t.Fatalf("the store's MANIFEST does not start with Badger's header: % x", b[:min(len(b), 8)])
	}
	var out []flip
	for pos, set := 8, 0; pos+8 <= len(b); set++ {
		n := int(b[pos])<<24 | int(b[pos+1])<<16 | int(b[pos+2])<<8 | int(b[pos+3])
		out = append(out,
			flip{id: fmt.Sprintf("m%d.len", set), rel: "MANIFEST", off: int64(pos + 3), mask: 0x21},
			flip{id: fmt.Sprintf("m%d.crc", set), rel: "MANIFEST", off: int64(pos + 4), mask: 0x01})
		if n > 0 && pos+8 < len(b) {
			out = append(out, flip{id: fmt.Sprintf("m%d.data", set), rel: "MANIFEST", off: int64(pos + 8), mask: 0x01})
		}
		pos += 8 + n
	}
	return out
}

// snapshot is the SHA-256 of every file under dir, by path.
func snapshot(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot the store: %v", err)
	}
	return out
}

// diffSnapshot says which files differ between snapshots a and b ("" when
// none): deleted, added or changed.
func diffSnapshot(a, b map[string][32]byte) string {
	var d []string
	for f, h := range a {
		if g, ok := b[f]; !ok {
			d = append(d, f+" deleted")
		} else if g != h {
			d = append(d, f+" changed")
		}
	}
	for f := range b {
		if _, ok := a[f]; !ok {
			d = append(d, f+" added")
		}
	}
	slices.Sort(d)
	return strings.Join(d, ", ")
}

// storeFile is a file of the store: its path in the store and its size.
type storeFile struct {
	rel  string
	size int64
}

// storeFiles lists every non-empty file under dir, sorted by path.
func storeFiles(t *testing.T, dir string) []storeFile {
	t.Helper()
	var out []storeFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		if st.Size() == 0 {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, storeFile{rel, st.Size()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("the store %s holds no files", dir)
	}
	return out
}

// flipByte XORs the byte at off of file path with mask and returns what it
// was.
func flipByte(t *testing.T, path string, off int64, mask byte) byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	old := b[0]
	b[0] ^= mask
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return old
}

// copyDir copies the files under src to dst (created).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy the store: %v", err)
	}
}

// head is s cut to n bytes.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes more)", len(s)-n)
}

// firstDiff says where got first differs from want: the line, and both
// versions of it.
func firstDiff(want, got string) string {
	wl, gl := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("%d lines, want %d; first difference at line %d:\n  want %q\n   got %q", len(gl), len(wl), i+1, head(w, 300), head(g, 300))
		}
	}
	return "identical"
}
