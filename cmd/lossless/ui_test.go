package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/bridge"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/explain"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/ui"
)

var explorerURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{64}`)

// apiGet requests path of the explorer at pageURL with its token and
// returns the status and body.
func apiGet(t *testing.T, pageURL, path string) (int, string) {
	t.Helper()
	base, token, _ := strings.Cut(pageURL, "/?token=")
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(ui.TokenHeader, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startUI starts `lossless ui` with args and returns it with the URL it
// printed; the test's end kills it.
func startUI(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"ui"}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "LOSSLESS_TOKENIZER=chars4"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: stderr, mu: &sync.Mutex{}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("lossless ui ended without a URL; stderr:\n%s", stderr.String())
			}
			if url := explorerURL.FindString(l); url != "" {
				return cmd, url
			}
		case <-timeout:
			t.Fatal("lossless ui printed no URL in a minute")
		}
	}
}

// TestUICommand: `lossless ui` prints a URL that serves the page and the
// store's sessions, stops on an interrupt, and on a Badger store another
// process holds says where the explorer runs instead.
func TestUICommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	writeSession(t, filepath.Join(dir, "s.jsonl"), "ui-sess", 5)
	runCLI(t, "", nil, "import", "--store", store, filepath.Join(dir, "s.jsonl")).want(t, 0)

	cmd, url := startUI(t, "--store", store, "--addr", "127.0.0.1:0")
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "app.js") {
		t.Fatalf("the page: %d %.300s", resp.StatusCode, page)
	}
	code, body := apiGet(t, url, "/api/sessions")
	if code != http.StatusOK || !strings.Contains(body, `"session":"ui-sess"`) || !strings.Contains(body, `"messages":10`) {
		t.Fatalf("/api/sessions: %d %s", code, body)
	}
	// The store is held: another explorer cannot open it, and says where
	// the explorer of a store in use runs.
	r := runCLI(t, "", nil, "ui", "--store", store)
	r.want(t, 1, "serve --stdio --ui", "uiAddr")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("lossless ui after an interrupt: %v\n%s", err, cmd.Stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lossless ui did not stop on an interrupt")
	}
	runCLI(t, "", nil, "ui", "--store", store, "--addr", "0.0.0.0:0").want(t, 1, "not a loopback address")
}

// TestServeUI: `serve --stdio --ui` serves the explorer of the engine
// initialize opens, prints its URL on stderr once the store is known, and
// reads the live engine.
func TestServeUI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	writeSession(t, filepath.Join(dir, "s.jsonl"), "served", 3)
	runCLI(t, "", nil, "import", "--store", store, filepath.Join(dir, "s.jsonl")).want(t, 0)
	c := startServe(t, "serve-ui", "--ui", "127.0.0.1:0", "--store", store)
	if err := c.call("initialize", map[string]any{"config": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	url := waitExplorerURL(t, c)
	if code, _ := apiGet(t, url, "/"); code != http.StatusOK {
		t.Fatalf("the page: %d", code)
	}
	// The bridge's explorer method (the plugin's Memory tab proxies with
	// it): the same server, its base URL and token apart.
	var where bridge.ExplorerInfo
	if err := c.call(bridge.MethodExplorer, map[string]any{}, &where); err != nil {
		t.Fatal(err)
	}
	if where.Token == "" || where.URL+"?token="+where.Token != url {
		t.Fatalf("explorer = %+v, the served URL is %s", where, url)
	}
	code, body := apiGet(t, url, "/api/sessions")
	if code != http.StatusOK || !strings.Contains(body, `"session":"served"`) {
		t.Fatalf("after initialize: %d %s", code, body)
	}
	// What the bridge ingests, the explorer shows.
	if err := c.call("ingest", core.IngestParams{SessionID: "live", Message: core.UserText("<b>live</b> turn", 1_900_000_000_000)}, nil); err != nil {
		t.Fatal(err)
	}
	code, body = apiGet(t, url, "/api/message?agent=main&session=live&seq=1")
	if want, _ := json.Marshal(core.UserText("<b>live</b> turn", 1_900_000_000_000)); code != http.StatusOK || body != string(want) {
		t.Fatalf("the live message: %d %s, want %s", code, body, want)
	}
	if err := c.call("dispose", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if code, body = apiGet(t, url, "/api/sessions"); code != http.StatusServiceUnavailable {
		t.Fatalf("after dispose: %d %s", code, body)
	}
}

// TestUIContextMatchesAssemble: the explorer's context view reports the
// estimatedTokens, parts and per-message tokens `lossless assemble --json`
// prints, for the same store, session, budget and prompt — a synthetic
// session, and the pi-mono transcripts when the shared data is there.
func TestUIContextMatchesAssemble(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	files := []string{filepath.Join(dir, "s.jsonl")}
	writeSession(t, files[0], "synthetic", 40)
	if shared, ok := testutil.SharedDir(); ok {
		if _, err := os.Stat(filepath.Join(shared, "data", "pi-mono")); err == nil {
			files = append(files, testutil.PiMono(t)...)
		}
	} else {
		t.Log("shared data absent: the pi-mono transcripts are not compared (../shared or $LOSSLESS_SHARED)")
	}
	runCLI(t, "", nil, append([]string{"import", "--store", store}, files...)...).want(t, 0)
	var sessions []string
	for _, f := range files {
		header, _ := messageObjects(t, f)
		sessions = append(sessions, header)
		runCLI(t, "", nil, "compact", "--store", store, "--session", header, "--budget", "16000", "--force").want(t, 0)
	}
	type cliAssemble struct {
		EstimatedTokens int                   `json:"estimatedTokens"`
		Parts           []explain.ContextPart `json:"parts"`
		Messages        []struct {
			Tokens int    `json:"tokens"`
			Part   string `json:"part"`
		} `json:"messages"`
		Recall recalled.Report `json:"recall"`
	}
	type call struct {
		session, budget, prompt string
		want                    cliAssemble
	}
	var calls []call
	for _, s := range sessions {
		for _, bp := range [][2]string{{"16000", ""}, {"40000", "what did we decide about file3.go and the rpc mode?"}} {
			r := runCLI(t, "", nil, "assemble", "--store", store, "--session", s, "--budget", bp[0], "--prompt", bp[1], "--json")
			r.want(t, 0)
			c := call{session: s, budget: bp[0], prompt: bp[1]}
			if err := json.Unmarshal([]byte(r.stdout), &c.want); err != nil {
				t.Fatal(err)
			}
			calls = append(calls, c)
		}
	}
	// The explorer, in this process, on the same store (the commands have
	// ended: Badger admits one process).
	cfg := config.Default()
	cfg.StoreDir = store
	cfg.Tokenizer = core.CounterChars4 // as runCLI's commands count
	ctx := context.Background()
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return e, nil }, ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	injected := 0
	for _, c := range calls {
		path := "/api/context?agent=main&session=" + c.session + "&budget=" + c.budget + "&prompt=" + strings.ReplaceAll(c.prompt, " ", "+")
		code, body := apiGet(t, ts.URL+"/?token="+srv.Token(), path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		var got cliAssemble
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		if got.EstimatedTokens != c.want.EstimatedTokens || got.EstimatedTokens == 0 {
			t.Errorf("%s budget %s prompt %q: the explorer says %d tokens, lossless assemble --json %d", c.session, c.budget, c.prompt,
				got.EstimatedTokens, c.want.EstimatedTokens)
		}
		if len(got.Parts) != len(c.want.Parts) || len(got.Messages) != len(c.want.Messages) || got.Recall.Status != c.want.Recall.Status {
			t.Fatalf("%s: parts %+v / %d messages / recall %s; assemble %+v / %d / %s", c.session, got.Parts, len(got.Messages),
				got.Recall.Status, c.want.Parts, len(c.want.Messages), c.want.Recall.Status)
		}
		for i := range got.Parts {
			if got.Parts[i] != c.want.Parts[i] {
				t.Errorf("%s: part %+v, assemble %+v", c.session, got.Parts[i], c.want.Parts[i])
			}
		}
		for i := range got.Messages {
			if got.Messages[i] != c.want.Messages[i] {
				t.Errorf("%s: message %d %+v, assemble %+v", c.session, i, got.Messages[i], c.want.Messages[i])
			}
		}
		if got.Recall.Status == recalled.Injected {
			injected++
		}
	}
	t.Logf("%d context views compared, %d with a recall block", len(calls), injected)
}
