package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

// binDir is the temporary directory TestMain makes for the binary; the
// binary is built into it on first use (so fuzz workers, which run no
// command, do not build it).
var (
	binDir    string
	buildOnce sync.Once
	bin       string
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lossless-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary builds the command into binDir once and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		bin = filepath.Join(binDir, "lossless")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build lossless: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

type result struct {
	stdout, stderr string
	code           int
}

// realTokenizer runs a command with the default tokenizer (o200k_base)
// rather than the tests' chars4.
var realTokenizer = []string{"LOSSLESS_TOKENIZER="}

// runCLI runs the binary with args; env entries are added to a clean
// environment (HOME points into the test's temp dir). Commands count tokens
// with chars4 unless env has realTokenizer: building the o200k tables costs
// ~0.2 s of CPU per process, most of these tests' time.
func runCLI(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	home := t.TempDir()
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LOSSLESS_TOKENIZER=chars4"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

func (r result) want(t *testing.T, code int, contains ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	all := r.stdout + r.stderr
	for _, c := range contains {
		if !strings.Contains(all, c) {
			t.Fatalf("output lacks %q\nstdout:\n%s\nstderr:\n%s", c, r.stdout, r.stderr)
		}
	}
}

// messageObjects returns the raw bytes of every "message" entry's message
// object in a session file, read independently of the engine.
func messageObjects(t *testing.T, path string) (header string, msgs [][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var probe map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &probe) != nil {
			continue
		}
		var typ string
		_ = json.Unmarshal(probe["type"], &typ)
		switch typ {
		case "session":
			_ = json.Unmarshal(probe["id"], &header)
		case "message":
			msgs = append(msgs, append([]byte(nil), probe["message"]...))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return header, msgs
}

// writeSession writes a small session file with n user/assistant pairs and
// the given extra raw lines appended.
func writeSession(t *testing.T, path, id string, n int, extra ...string) [][]byte {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"session","version":4,"id":%q,"timestamp":"2026-11-30T20:00:00.000Z","cwd":"/w"}`+"\n", id)
	var msgs [][]byte
	parent := "null"
	for i := 0; i < n; i++ {
		for j, m := range []string{
			fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"question %d <about> & \u00e9 file%d.go"}],"timestamp":%d}`, i, i, 1000+2*i),
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"answer %d: file%d.go has %d lines"}],"stopReason":"stop","timestamp":%d,"x-extra":{"keep":true}}`, i, i, i*10, 1001+2*i),
		} {
			eid := fmt.Sprintf(`"%08x"`, 2*i+j+1)
			fmt.Fprintf(&b, `{"type":"message","id":%s,"parentId":%s,"timestamp":"2026-11-30T20:00:01.000Z","message":%s}`+"\n", eid, parent, m)
			parent = eid
			msgs = append(msgs, []byte(m))
		}
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestImportStatsCompactExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s1.jsonl")
	sid := "11111111-2222-3333-4444-555555555555"
	msgs := writeSession(t, file, sid, 20)

	runCLI(t, "", nil, "import", "--store", store, "--agent", "alice", file).
		want(t, 0, "session "+sid, "40 imported", "0 malformed")

	// Import again: nothing new (incremental, idempotent).
	runCLI(t, "", nil, "import", "--store", store, "--agent", "alice", file).want(t, 0, "0 imported")

	var st struct {
		Format int   `json:"format"`
		Disk   int64 `json:"diskBytes"`
		Index  int64 `json:"indexBytes"`
		Agents map[string]struct {
			Conversations, Messages, Tokens int64
		} `json:"agents"`
	}
	r := runCLI(t, "", nil, "stats", "--store", store, "--json")
	r.want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, r.stdout)
	}
	if a := st.Agents["alice"]; a.Conversations != 1 || a.Messages != 40 || a.Tokens <= 0 || st.Format < 1 || st.Disk <= 0 || st.Index <= 0 {
		t.Fatalf("stats = %+v", st)
	}
	runCLI(t, "", nil, "stats", "--store", store).want(t, 0, "alice", "40", "recall index")

	r = runCLI(t, "", nil, "sessions", "--store", store, "--json")
	r.want(t, 0, sid)
	runCLI(t, "", nil, "sessions", "--store", store).want(t, 0, "AGENT", "alice", sid)

	// assemble: within the budget, the newest message last.
	r = runCLI(t, "", nil, "assemble", "--store", store, "--session", sid, "--budget", "150", "--json")
	r.want(t, 0)
	var asm struct {
		EstimatedTokens int `json:"estimatedTokens"`
		Messages        []struct {
			Tokens  int             `json:"tokens"`
			Message json.RawMessage `json:"message"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &asm); err != nil {
		t.Fatal(err)
	}
	if asm.EstimatedTokens > 150 || len(asm.Messages) == 0 || len(asm.Messages) >= 40 {
		t.Fatalf("assemble: %d tokens, %d messages", asm.EstimatedTokens, len(asm.Messages))
	}
	var got bytes.Buffer
	json.Compact(&got, asm.Messages[len(asm.Messages)-1].Message)
	if !bytes.Equal(got.Bytes(), msgs[len(msgs)-1]) {
		t.Fatalf("last assembled message\n%s\nwant\n%s", got.Bytes(), msgs[len(msgs)-1])
	}
	runCLI(t, "", nil, "assemble", "--store", store, "--session", sid, "--budget", "150").
		want(t, 0, "estimated tokens", "[0] ", "assistant (")
	// With a prompt, assemble says what recall did (AssembleWithDetails).
	r = runCLI(t, "", nil, "assemble", "--store", store, "--session", sid, "--budget", "150", "--prompt", "question", "--json")
	r.want(t, 0)
	var asmRecall struct {
		Recall struct{ Status string } `json:"recall"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &asmRecall); err != nil || asmRecall.Recall.Status == "" {
		t.Fatalf("assemble --json without its recall report: %v\n%s", err, r.stdout)
	}
	runCLI(t, "", nil, "assemble", "--store", store, "--session", sid, "--budget", "150", "--prompt", "question").
		want(t, 0, "recall: "+asmRecall.Recall.Status)

	// compact, then expand the new summary back to the raw messages.
	r = runCLI(t, "", nil, "compact", "--store", store, "--session", sid, "--budget", "300", "--force", "--json")
	var cres struct {
		OK        bool   `json:"ok"`
		Compacted bool   `json:"compacted"`
		Reason    string `json:"reason"`
		Result    *struct {
			TokensBefore int `json:"tokensBefore"`
			TokensAfter  int `json:"tokensAfter"`
			Details      struct {
				NewSummaryIDs []string `json:"newSummaryIds"`
			} `json:"details"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cres); err != nil {
		t.Fatalf("compact --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	r.want(t, 0)
	if !cres.OK || cres.Result == nil || len(cres.Result.Details.NewSummaryIDs) == 0 {
		t.Fatalf("compaction made no summary: %s", r.stdout)
	}
	if cres.Compacted && cres.Result.TokensAfter >= cres.Result.TokensBefore {
		t.Fatalf("compacted without freeing tokens: %+v", cres.Result)
	}
	sumID := cres.Result.Details.NewSummaryIDs[0]
	runCLI(t, "", nil, "describe", "--store", store, sumID).want(t, 0, "summary   "+sumID, "session   "+sid)
	r = runCLI(t, "", nil, "expand", "--store", store, sumID)
	r.want(t, 0)
	exp := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(exp) == 0 || len(exp) >= len(msgs) {
		t.Fatalf("summary %s expands to %d messages", sumID, len(exp))
	}
	for i, l := range exp {
		if l != string(msgs[i]) {
			t.Fatalf("expanded message %d\n%s\nwant\n%s", i, l, msgs[i])
		}
	}
	// The assembled context now starts with that summary.
	runCLI(t, "", nil, "assemble", "--store", store, "--session", sid, "--budget", "100000").want(t, 0, sumID)
	// A budget the fresh tail cannot fit: the context is at its floor,
	// nothing more to compact (no failure), and the reason says so.
	runCLI(t, "", nil, "compact", "--store", store, "--session", sid, "--budget", "5", "--force").
		want(t, 0, "nothing to compact: the context is at its floor", "fresh tail")

	// export: every message object, in order, byte for byte.
	r = runCLI(t, "", nil, "export", "--store", store, "--session", sid)
	r.want(t, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(msgs) {
		t.Fatalf("export: %d lines, want %d", len(lines), len(msgs))
	}
	for i := range msgs {
		if lines[i] != string(msgs[i]) {
			t.Fatalf("export line %d\n%s\nwant\n%s", i, lines[i], msgs[i])
		}
	}
	// --agent scopes the lookup.
	runCLI(t, "", nil, "export", "--store", store, "--session", sid, "--agent", "bob").want(t, 1, "unknown session")
}

func TestExportPiMonoByteIdentical(t *testing.T) {
	t.Parallel()
	files := testutil.PiMono(t)
	store := t.TempDir()
	for _, f := range files {
		header, want := messageObjects(t, f)
		if header == "" || len(want) == 0 {
			t.Fatalf("%s: no header id or no messages", f)
		}
		runCLI(t, "", realTokenizer, "import", "--store", store, f).want(t, 0, "session "+header)
		r := runCLI(t, "", realTokenizer, "export", "--store", store, "--session", header)
		r.want(t, 0)
		got := bytes.Split(bytes.TrimSuffix([]byte(r.stdout), []byte("\n")), []byte("\n"))
		if len(got) != len(want) {
			t.Fatalf("%s: exported %d messages, the file has %d", filepath.Base(f), len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: message %d differs\n got %.300s\nwant %.300s", filepath.Base(f), i, got[i], want[i])
			}
		}
	}
}

func TestIncrementalImport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-inc", 3)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "6 imported")
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `{"type":"message","id":"aaaa0001","parentId":"00000006","timestamp":"2026-11-30T20:00:09.000Z","message":{"role":"user","content":"appended"}}`)
	f.Close()
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "1 imported", "(resumed)")
	r := runCLI(t, "", nil, "export", "--store", store, "--session", "sess-inc")
	r.want(t, 0)
	if !strings.HasSuffix(r.stdout, `{"role":"user","content":"appended"}`+"\n") || strings.Count(r.stdout, "\n") != 7 {
		t.Fatalf("export after append:\n%s", r.stdout)
	}
}

// TestRetain: --dry-run lists the conversations over the cap and deletes
// nothing; without it they are deleted and the most recent one is kept.
func TestRetain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	for i, id := range []string{"sess-old", "sess-new"} {
		file := filepath.Join(dir, id+".jsonl")
		writeSession(t, file, id, 3+i)
		runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "imported")
		time.Sleep(5 * time.Millisecond) // sess-old is the least recently updated
	}
	runCLI(t, "", nil, "retain", "--store", store, "--max-bytes-per-agent", "1", "--dry-run").
		want(t, 0, "would delete 1 conversation, 6 messages", "size", "sess-old") // named by its session, not only its id
	runCLI(t, "", nil, "sessions", "--store", store).want(t, 0, "sess-old", "sess-new")
	r := runCLI(t, "", nil, "retain", "--store", store, "--max-bytes-per-agent", "1", "--json")
	r.want(t, 0, `"reason": "size"`, `"messages": 6`, `"dryRun": false`, `"session": "sess-old"`)
	r = runCLI(t, "", nil, "sessions", "--store", store)
	r.want(t, 0, "sess-new")
	if strings.Contains(r.stdout, "sess-old") {
		t.Fatalf("sess-old kept after retain:\n%s", r.stdout)
	}
	runCLI(t, "", nil, "retain", "--store", store, "--max-age-days", "-3").want(t, 2, "must be 0 (no limit) or positive")
}

func TestMalformedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "bad.jsonl")
	writeSession(t, file, "sess-bad", 2, `this is not json`, `{"type":"message","message":{"role":"user","content":"ok after garbage"}}`, `{"broken":`)
	r := runCLI(t, "", nil, "import", "--store", store, file)
	// Lines skipped: everything else stored, exit code 3 (not 0).
	r.want(t, 3, "5 imported", "2 malformed lines", "malformed line 6", "malformed line 8")
	// Imported again: nothing new read, nothing skipped, exit 0.
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "0 imported", "0 malformed lines")
	r = runCLI(t, "", nil, "import", "--store", filepath.Join(dir, "store2"), "--json", file)
	r.want(t, 3)
	var res struct {
		Malformed int `json:"malformed"`
		Files     []struct {
			Malformed []struct {
				Line  int    `json:"line"`
				Error string `json:"error"`
			} `json:"malformed"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Malformed != 2 || len(res.Files) != 1 || len(res.Files[0].Malformed) != 2 ||
		res.Files[0].Malformed[0].Line != 6 || res.Files[0].Malformed[0].Error == "" {
		t.Fatalf("import --json malformed lines: %s", r.stdout)
	}
	// A file that is not a session at all: every line malformed, nothing stored.
	junk := filepath.Join(dir, "junk.jsonl")
	os.WriteFile(junk, []byte("\x00\x01binary\n<html>\n"), 0o644)
	runCLI(t, "", nil, "import", "--store", store, junk).want(t, 3, "0 imported", "2 malformed lines")
	// Standard input: refused with a usage error that says why.
	runCLI(t, "", nil, "import", "--store", store, "-").want(t, 2, "not standard input")
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-x", 1)
	missing := filepath.Join(dir, "no-store")
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", nil, 2, "Usage"},
		{"unknown command", []string{"frob"}, 2, `unknown command "frob"`},
		{"bad flag", []string{"stats", "--bogus"}, 2, "flag provided but not defined"},
		{"bad flag value", []string{"assemble", "--store", store, "--session", "x", "--budget", "lots"}, 2, "invalid value"},
		{"missing session flag", []string{"export", "--store", store}, 2, "--session is required"},
		{"import without files", []string{"import", "--store", store}, 2, "at least one session file"},
		{"import missing file", []string{"import", "--store", store, filepath.Join(dir, "nope.jsonl")}, 1, "no such file"},
		{"import a directory", []string{"import", "--store", store, dir}, 1, "is a directory"},
		{"missing store", []string{"stats", "--store", missing}, 1, "does not exist"},
		{"missing store export", []string{"export", "--store", missing, "--session", "x"}, 1, "does not exist"},
		{"unknown summarizer", []string{"compact", "--store", store, "--session", "sess-x", "--summarizer", "magic"}, 2, "unknown --summarizer"},
		{"model summarizer without model", []string{"compact", "--store", store, "--session", "sess-x", "--summarizer", "openai"}, 2, "needs --model"},
		{"serve without --stdio", []string{"serve", "--store", store}, 2, "needs --stdio"},
		{"stray argument", []string{"stats", "--store", store, "extra"}, 2, "takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runCLI(t, "", nil, tc.args...).want(t, tc.code, tc.msg)
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("a read-only command created the missing store")
	}
	// An existing directory that holds no store (empty, or someone
	// else's files): read-only commands say so and leave it as it was.
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"stats"}, {"sessions"}, {"grep", "x", "--all"}, {"export", "--session", "x"}} {
		for _, d := range []string{t.TempDir(), foreign} {
			runCLI(t, "", nil, append(args, "--store", d)...).want(t, 1, "no store here")
			ents, _ := os.ReadDir(d)
			if len(ents) > 1 || (len(ents) == 1 && ents[0].Name() != "notes.txt") {
				t.Fatalf("%v changed %s: %v", args, d, ents)
			}
		}
	}
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0)
	for _, cmd := range []string{"export", "assemble", "compact"} {
		runCLI(t, "", nil, cmd, "--store", store, "--session", "no-such-session").want(t, 1, "unknown session")
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	// Every exit code a command uses is listed (import's 3 was not).
	runCLI(t, "", nil, "--help").want(t, 0, "import", "export", "doctor", "serve", "0 ok", "1 runtime error", "2 usage error", "3 partial")
	runCLI(t, "", nil, "import", "--help").want(t, 0, "Exits 3")
	for _, c := range commands() {
		r := runCLI(t, "", nil, c.name, "--help")
		r.want(t, 0, "Usage: lossless "+c.name, "-store", "-json")
		if n := strings.Count(r.stdout+r.stderr, "Usage: lossless "+c.name); n != 1 {
			t.Fatalf("%s --help printed its usage %d times", c.name, n)
		}
	}
	runCLI(t, "", nil, "help", "export").want(t, 0, "Usage: lossless export")
	runCLI(t, "", nil, "--version").want(t, 0, "lossless 0.", "store format")
	runCLI(t, "", nil, "stats", "--tokenizer", "nope").want(t, 2, `unknown --tokenizer "nope"`)
}

func TestDefaultStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-def", 1)
	envStore := filepath.Join(dir, "env-store")
	runCLI(t, "", []string{"LOSSLESS_STORE=" + envStore}, "import", file).want(t, 0, "2 imported")
	if _, err := os.Stat(envStore); err != nil {
		t.Fatalf("$LOSSLESS_STORE not used: %v", err)
	}
	xdg := filepath.Join(dir, "xdg")
	runCLI(t, "", []string{"XDG_DATA_HOME=" + xdg}, "import", file).want(t, 0, "2 imported")
	if _, err := os.Stat(filepath.Join(xdg, "lossless")); err != nil {
		t.Fatalf("$XDG_DATA_HOME/lossless not used: %v", err)
	}
	r := runCLI(t, "", []string{"XDG_DATA_HOME=" + xdg}, "stats", "--json")
	r.want(t, 0, filepath.Join(xdg, "lossless"))
}

func TestServeStdio(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{"storeDir":` + jsonString(store) + `}}}
{"jsonrpc":"2.0","id":2,"method":"ingest","params":{"sessionId":"srv","message":{"role":"user","content":"<hi> & é","timestamp":5}}}
not json
`
	r := runCLI(t, in, nil, "serve", "--stdio")
	r.want(t, 0, `"id":1,"result":{"protocolVersion":1,"info":{"id":"lossless"`, `"id":2,"result":{"ingested":true}`, `"code":-32700`)
	// The message is in the store, byte for byte.
	runCLI(t, "", nil, "export", "--store", store, "--session", "srv").want(t, 0, `{"role":"user","content":"<hi> & é","timestamp":5}`)
	// Without storeDir in the config the command's store is used.
	store2 := t.TempDir()
	r = runCLI(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{}}}
{"jsonrpc":"2.0","id":2,"method":"ingest","params":{"sessionId":"srv2","message":{"role":"user","content":"x"}}}
`, []string{"LOSSLESS_STORE=" + store2}, "serve", "--stdio")
	r.want(t, 0, `"ingested":true`)
	runCLI(t, "", nil, "sessions", "--store", store2).want(t, 0, "srv2")
	// A config the engine refuses is an initialize error, not a crash.
	r = runCLI(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{"noSuchOption":1}}}
`, nil, "serve", "--stdio", "--store", store2)
	r.want(t, 0, `"id":1,"error":{"code":-32000`, "noSuchOption")

	// --timing: one JSON line per request, with the time inside the engine;
	// tools/call runs a model tool bound to the session.
	timing := filepath.Join(t.TempDir(), "timing.jsonl")
	r = runCLI(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{"storeDir":`+jsonString(store)+`}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lcm_grep","arguments":{"query":"hi"},"sessionId":"srv","agentId":"main"}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lcm_grep","arguments":{"query":"hi","agentId":"other"},"sessionId":"srv","agentId":"main"}}
`, nil, "serve", "--stdio", "--timing", timing)
	r.want(t, 0, `"id":2,"result":{"text":"{\"hits\":[{`, `user: <hi> & é`, `"id":3,"error"`, `tools read agent \"main\" only`)
	b, err := os.ReadFile(timing)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	// The two tools/call requests run at once: their lines come in the
	// order they finish.
	if len(lines) == 3 && strings.Contains(lines[1], `"ok":false`) {
		lines[1], lines[2] = lines[2], lines[1]
	}
	if len(lines) != 3 || !strings.Contains(lines[0], `"method":"initialize"`) || !strings.Contains(lines[1], `"method":"tools/call"`) ||
		!strings.Contains(lines[1], `"ok":true`) || !strings.Contains(lines[2], `"method":"tools/call"`) || !strings.Contains(lines[2], `"ok":false`) {
		t.Fatalf("timing file:\n%s", b)
	}
	var line struct {
		Method  string
		StartMs int64
		Ms      float64
	}
	if err := json.Unmarshal([]byte(lines[1]), &line); err != nil || line.StartMs <= 0 || line.Ms < 0 {
		t.Fatalf("timing line %q: %v", lines[1], err)
	}
}

func TestToolsCommand(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "", nil, "tools", "--json")
	r.want(t, 0)
	var defs []struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &defs); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, r.stdout)
	}
	if len(defs) != 3 || defs[0].Name != "lcm_grep" || defs[1].Name != "lcm_describe" || defs[2].Name != "lcm_expand" || !json.Valid(defs[2].Parameters) {
		t.Fatalf("tools: %s", r.stdout)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-doc", 2)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0)

	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{
  // JSON5, as OpenClaw writes it
  plugins: {
    slots: { contextEngine: "lossless" },
    entries: { lossless: { config: { storeDir: `+jsonString(store)+`, }, }, },
  },
}`)
	r := runCLI(t, "", nil, "doctor", "--config", good, "--json")
	r.want(t, 0)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if rep.Engine != "lossless" || rep.Resolution.Reason != "configured" || !rep.Store.Exists ||
		rep.Store.Format != rep.Store.BuildFormat || rep.Store.Messages != 4 || len(rep.Problems) != 0 || len(rep.HostChecks) != 9 {
		t.Fatalf("doctor report %+v", rep)
	}
	runCLI(t, "", nil, "doctor", "--config", good).want(t, 0, "engine     lossless (configured)", "recall     ", "no problems found")
	r = runCLI(t, "", nil, "doctor", "--config", good, "--deep", "--json")
	r.want(t, 0, `"deep": true`, `"messages": 4`)
	runCLI(t, "", nil, "doctor", "--config", good, "--deep").want(t, 0, "check      every message record, the summary DAG and the other records: 1 conversations, 4 messages, ", "0 problem(s)")

	// The plugin's own config as the README gives it: its bridge section
	// is accepted, and the store is the config's storeDir (not the
	// command's default store).
	plugin := write("plugin.json", `{plugins: {slots: {contextEngine: "lossless"}, entries: {lossless: {enabled: true,
  config: {storeDir: `+jsonString(store)+`, bridge: {command: "/usr/local/bin/lossless", maxRestarts: 3}}}}}}`)
	r = runCLI(t, "", []string{"LOSSLESS_STORE=" + filepath.Join(dir, "elsewhere")}, "doctor", "--config", plugin, "--json")
	r.want(t, 0)
	rep = doctorReport{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if rep.Store.Dir != store || rep.Store.Messages != 4 || len(rep.Problems) != 0 {
		t.Fatalf("doctor on the plugin's config: store %q (want %q), %d messages, problems %v", rep.Store.Dir, store, rep.Store.Messages, rep.Problems)
	}

	// With recall on, doctor reports the index the import built, without
	// opening it (TestDoctorReadOnly: doctor changes nothing).
	recall := write("recall.json", `{"plugins":{"slots":{"contextEngine":"lossless"},"entries":{"lossless":{"config":{"storeDir":`+jsonString(store)+`,"recall":{"enabled":true}}}}}}`)
	r = runCLI(t, "", nil, "doctor", "--config", recall, "--json")
	r.want(t, 0, `"enabled": true`, `"exists": true`)
	runCLI(t, "", nil, "doctor", "--config", recall).want(t, 0, "recall     index at ")

	disabled := write("disabled.json", `{"plugins":{"slots":{"contextEngine":"lossless"},"entries":{"lossless":{"enabled":false}}}}`)
	runCLI(t, "", nil, "doctor", "--config", disabled, "--store", store).want(t, 0, "engine     legacy (entry-disabled)")

	badCfg := write("badcfg.json", `{"plugins":{"slots":{"contextEngine":"lossless"},"entries":{"lossless":{"config":{"storeDir":`+jsonString(store)+`,"contextThreshold":7}}}}}`)
	r = runCLI(t, "", nil, "doctor", "--config", badCfg)
	r.want(t, 1, "PROBLEM    plugins.entries.lossless.config: ", "contextThreshold", "quarantine none")

	runCLI(t, "", nil, "doctor", "--config", write("broken.json", `{plugins: {`)).want(t, 1, "PROBLEM", "cannot be read")
	runCLI(t, "", nil, "doctor", "--config", filepath.Join(dir, "absent.json")).want(t, 1, "does not exist")
	// No config at the default path is fine (legacy by default).
	runCLI(t, "", nil, "doctor", "--store", store).want(t, 0, "engine     legacy (default)")
}

// Summary ids in the assembled context (RenderSummary's <lcm_summary id="...">).
var summaryIDRe = regexp.MustCompile(`<lcm_summary id="([^"]+)"`)

func TestDescribeExpandPiMono(t *testing.T) {
	t.Parallel()
	file := testutil.SharedFile(t, "data/pi-mono/before-compaction.jsonl")
	header, want := messageObjects(t, file)
	store := t.TempDir()
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "2 summaries")

	r := runCLI(t, "", nil, "assemble", "--store", store, "--session", header, "--budget", "400000", "--json")
	r.want(t, 0)
	var asm struct {
		Messages []struct {
			Message struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &asm); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range asm.Messages {
		for _, b := range m.Message.Content {
			for _, sm := range summaryIDRe.FindAllStringSubmatch(b.Text, -1) {
				ids = append(ids, sm[1])
			}
		}
	}
	if len(ids) != 2 {
		t.Fatalf("want the 2 imported compactions as summaries in the context, found %v", ids)
	}

	indexOf := func(line []byte) int {
		for i, w := range want {
			if bytes.Equal(w, line) {
				return i
			}
		}
		return -1
	}
	runCLI(t, "", nil, "describe", "--store", store, ids[0]).want(t, 0, "summary   "+ids[0], "covers", "method imported")
	next := 0
	for k, id := range ids {
		var d struct {
			Description struct {
				Summary struct {
					ID              string `json:"id"`
					DescendantCount int    `json:"descendantCount"`
				} `json:"summary"`
				Messages []uint64 `json:"messages"`
			} `json:"description"`
		}
		r := runCLI(t, "", nil, "describe", "--store", store, id, "--json")
		r.want(t, 0, `"method": "imported"`)
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatal(err)
		}

		// The whole expansion: a contiguous run of the file's messages,
		// byte for byte, following the previous summary's.
		r = runCLI(t, "", nil, "expand", "--store", store, id)
		r.want(t, 0)
		lines := bytes.Split(bytes.TrimSuffix([]byte(r.stdout), []byte("\n")), []byte("\n"))
		start := indexOf(lines[0])
		if start != next {
			t.Fatalf("summary %s starts at file message %d, want %d", id, start, next)
		}
		for i, l := range lines {
			if start+i >= len(want) || !bytes.Equal(l, want[start+i]) {
				t.Fatalf("summary %s: expanded message %d is not file message %d", id, i, start+i)
			}
		}
		next = start + len(lines)
		if d.Description.Summary.DescendantCount != len(lines) || len(d.Description.Messages) != len(lines) {
			t.Fatalf("describe says %d messages (%d sources), expand gave %d", d.Description.Summary.DescendantCount, len(d.Description.Messages), len(lines))
		}
		if k > 0 {
			continue
		}

		// Paged by tokens: the pages concatenate to the whole.
		var paged [][]byte
		cursor := ""
		for pages := 0; ; pages++ {
			args := []string{"expand", "--store", store, id, "--max-tokens", "50000"}
			if cursor != "" {
				args = append(args, "--cursor", cursor)
			}
			r := runCLI(t, "", nil, args...)
			r.want(t, 0)
			paged = append(paged, bytes.Split(bytes.TrimSuffix([]byte(r.stdout), []byte("\n")), []byte("\n"))...)
			m := regexp.MustCompile(`--cursor (\S+)`).FindStringSubmatch(r.stderr)
			if m == nil {
				if pages == 0 {
					t.Fatalf("summary %s fit one 50000-token page; the test needs paging", id)
				}
				break
			}
			cursor = m[1]
		}
		if len(paged) != len(lines) {
			t.Fatalf("pages hold %d messages, the expansion %d", len(paged), len(lines))
		}
		for i := range paged {
			if !bytes.Equal(paged[i], lines[i]) {
				t.Fatalf("paged message %d differs from the full expansion", i)
			}
		}
	}
	runCLI(t, "", nil, "describe", "--store", store, "sum_nope").want(t, 1, "not found")
	runCLI(t, "", nil, "expand", "--store", store, ids[0], "--cursor", "bogus").want(t, 2, "cursor")
	runCLI(t, "", nil, "expand", "--store", store).want(t, 2, "exactly one summary or message id")
}

func TestGrep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeSession(t, a, "sess-alice", 20)
	writeSession(t, b, "sess-bob", 3)
	runCLI(t, "", nil, "import", "--store", store, "--agent", "alice", a).want(t, 0)
	runCLI(t, "", nil, "import", "--store", store, "--agent", "bob", b).want(t, 0)

	hits := func(args ...string) []grepHit {
		t.Helper()
		r := runCLI(t, "", nil, append([]string{"grep", "--store", store, "--json"}, args...)...)
		r.want(t, 0)
		var hs []grepHit
		if err := json.Unmarshal([]byte(r.stdout), &hs); err != nil {
			t.Fatalf("grep --json: %v\n%s", err, r.stdout)
		}
		return hs
	}
	hs := hits("file2.go", "--agent", "alice")
	if len(hs) != 2 || hs[0].Agent != "alice" || hs[0].SessionID != "sess-alice" || hs[0].Kind != "message" {
		t.Fatalf("alice file2.go: %+v", hs)
	}
	if hs := hits("file2.go", "--all"); len(hs) != 4 {
		t.Fatalf("--all file2.go: %d hits, want 4 (2 per agent)", len(hs))
	}
	if hs := hits("file2.go", "--session", "sess-bob"); len(hs) != 2 || hs[0].Agent != "bob" {
		t.Fatalf("--session sess-bob: %+v", hs)
	}
	hs = hits(`file1[0-9]\.go`, "--regex", "--agent", "alice", "--limit", "200")
	if len(hs) != 20 {
		t.Fatalf("regex: %d hits, want 20 (file10..file19, question and answer)", len(hs))
	}
	hs = hits("answer", "--agent", "alice", "--sort", "recency", "--limit", "3")
	if len(hs) != 3 || hs[0].Timestamp < hs[1].Timestamp || hs[1].Timestamp < hs[2].Timestamp {
		t.Fatalf("recency: %+v", hs)
	}
	if hs := hits("question", "--agent", "alice", "--since", "2000-01-01"); len(hs) != 0 {
		t.Fatalf("--since 2000: %d hits (the messages are from 1970)", len(hs))
	}
	if hs := hits("question", "--agent", "alice", "--until", "2000-01-01", "--limit", "200"); len(hs) != 20 {
		t.Fatalf("--until 2000: %d hits, want 20", len(hs))
	}
	if hs := hits("file2.go", "--agent", "alice", "--kind", "summary"); len(hs) != 0 {
		t.Fatalf("--kind summary: %+v", hs)
	}
	runCLI(t, "", nil, "grep", "--store", store, "--agent", "alice", "file2.go").want(t, 0, "alice/sess-alice message", "file2.go")
	runCLI(t, "", nil, "grep", "--store", store, "nothing-like-this").want(t, 0, "no matches")
	runCLI(t, "", nil, "grep", "--store", store, "--regex", "(").want(t, 2, "regex")
	runCLI(t, "", nil, "grep", "--store", store, "x", "--since", "yesterday-ish").want(t, 2, "--since")
	runCLI(t, "", nil, "grep", "--store", store).want(t, 2, "exactly one QUERY")
	runCLI(t, "", nil, "grep", "--store", store, "--all", "--agent", "bob", "x").want(t, 2, "--all cannot")
	runCLI(t, "", nil, "grep", "--store", store, "--session", "nope", "x").want(t, 1, "unknown session")
}

// TestCompactSessionFile: compact --session-file imports what the file
// holds beyond the store first, and prints the new summaries' ids.
func TestCompactSessionFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	sid := "sess-cf"
	writeSession(t, file, sid, 20)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0, "40 imported")
	// Two more turns in the file that never reached the store.
	writeSession(t, file, sid, 22)
	r := runCLI(t, "", nil, "compact", "--store", store, "--session", sid, "--session-file", file, "--budget", "300", "--force")
	r.want(t, 0, "compacted session "+sid, "new summaries (lossless describe/expand ID): ")
	r = runCLI(t, "", nil, "export", "--store", store, "--session", sid)
	r.want(t, 0)
	if n := strings.Count(r.stdout, "\n"); n != 44 {
		t.Fatalf("export after compact --session-file: %d messages, want 44", n)
	}
}

// TestDiskFull fills a small tmpfs (512 MiB: an open store keeps 160 MiB
// free for its next logs) holding the store: a write then fails
// with a clear error (exit 1, no runtime dump), commands that only read go
// on working, and once space is freed writes succeed and nothing is lost.
// It needs root to mount the tmpfs (CI runs as root); elsewhere it skips.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (CI runs as root)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	store := filepath.Join(mnt, "store")
	dir := t.TempDir()
	file1, file2 := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeSession(t, file1, "sess-full-a", 20)
	writeSession(t, file2, "sess-full-b", 20)
	runCLI(t, "", nil, "import", "--store", store, file1).want(t, 0, "40 imported")

	// Fill the filesystem to the last byte.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{'x'}, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	noDump := func(r result) {
		t.Helper()
		for _, bad := range []string{"goroutine ", "SIGBUS", "panic:", "fatal error"} {
			if strings.Contains(r.stderr, bad) {
				t.Fatalf("runtime dump on a full disk:\n%s", r.stderr)
			}
		}
	}
	r := runCLI(t, "", nil, "import", "--store", store, file2)
	r.want(t, 1, "disk full")
	noDump(r)
	for _, args := range [][]string{{"stats"}, {"sessions", "--all"}, {"export", "--session", "sess-full-a"}, {"grep", "question", "--all"}} {
		r := runCLI(t, "", nil, append(args, "--store", store)...)
		r.want(t, 0)
		noDump(r)
		if args[0] == "export" && strings.Count(r.stdout, "\n") != 40 {
			t.Fatalf("export on a full disk: %d messages, want 40", strings.Count(r.stdout, "\n"))
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "", nil, "import", "--store", store, file2).want(t, 0, "40 imported")
	for _, s := range []string{"sess-full-a", "sess-full-b"} {
		r := runCLI(t, "", nil, "export", "--store", store, "--session", s)
		r.want(t, 0)
		if n := strings.Count(r.stdout, "\n"); n != 40 {
			t.Fatalf("%s after space was freed: %d messages, want 40", s, n)
		}
	}
}

// TestMigrateBadger: on a Badger directory migrate has nothing to do and
// says so.
func TestMigrateBadger(t *testing.T) {
	t.Parallel()
	runCLI(t, "", nil, "migrate", "--store", t.TempDir()).want(t, 0, "nothing to migrate")
}
