package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitExplorerURL waits for the explorer URL a `serve --ui` child prints
// on stderr.
func waitExplorerURL(t *testing.T, c *rpcChild) string {
	t.Helper()
	var url string
	for deadline := time.Now().Add(60 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no explorer URL on stderr:\n%s", c.errText())
		}
		url = explorerURL.FindString(c.errText())
	}
	return url
}

// stopServe ends a serve child (its stdin closed: a normal shutdown) and
// waits for it.
func stopServe(t *testing.T, c *rpcChild) {
	t.Helper()
	c.stdin.Close()
	select {
	case <-c.dead:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop:\n%s", c.errText())
	}
	_ = c.cmd.Wait()
}

// serveExplorerOnce starts `serve --stdio --ui addr` on store, initializes
// it, and returns the child and the URL it printed.
func serveExplorerOnce(t *testing.T, name, store, addr string) (*rpcChild, string) {
	t.Helper()
	c := startServe(t, name, "--ui", addr, "--store", store)
	if err := c.call("initialize", map[string]any{"config": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	return c, waitExplorerURL(t, c)
}

// wantOwnerOnly fails the test unless path exists with mode 0600.
func wantOwnerOnly(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", path, st.Mode().Perm())
	}
}

// TestServeUIStableURL: the explorer an engine process serves (serve --ui,
// the plugin's uiAddr) has a URL usable from outside the process and the
// same across restarts: it is written, token included, to the store's
// ui-url file (0600); the token is kept in ui-token (0600) and reused; the
// port of the last start is reused when 127.0.0.1:0 asks for any and it is
// free; `lossless ui --url` prints it (and says when nothing listens);
// `doctor` shows it; `lossless ui --rotate-token` replaces the token for
// the next start.
func TestServeUIStableURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	writeSession(t, filepath.Join(dir, "s.jsonl"), "stable", 2)
	runCLI(t, "", nil, "import", "--store", store, filepath.Join(dir, "s.jsonl")).want(t, 0)

	// No engine process has served it yet: a clear error.
	runCLI(t, "", nil, "ui", "--url", "--store", store).want(t, 1, "no engine process has served the memory explorer", "uiAddr")

	c1, url1 := serveExplorerOnce(t, "serve-ui-1", store, "127.0.0.1:0")
	urlFile, tokenFile := filepath.Join(store, explorerURLFile), filepath.Join(store, explorerTokenFile)
	wantOwnerOnly(t, urlFile)
	wantOwnerOnly(t, tokenFile)
	if b, _ := os.ReadFile(urlFile); strings.TrimSpace(string(b)) != url1 {
		t.Fatalf("%s holds %q, the process printed %q", urlFile, b, url1)
	}
	tok, _ := os.ReadFile(tokenFile)
	if !strings.HasSuffix(url1, "?token="+strings.TrimSpace(string(tok))) {
		t.Fatalf("the URL %s does not carry the kept token %q", url1, tok)
	}
	if !strings.Contains(c1.errText(), urlFile) {
		t.Fatalf("the process does not say where the URL is kept:\n%s", c1.errText())
	}
	runCLI(t, "", nil, "ui", "--url", "--store", store).want(t, 0, url1)
	if code, _ := apiGet(t, url1, "/api/sessions"); code != http.StatusOK {
		t.Fatalf("the URL from the file: %d", code)
	}
	// doctor shows it (the store is held by the serve child: doctor reads
	// only the files).
	cfg := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(cfg, []byte(`{"plugins":{"slots":{"contextEngine":"lossless"},"entries":{"lossless":{"config":{"storeDir":`+jsonString(store)+`,"uiAddr":"127.0.0.1:0"}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", nil, "doctor", "--config", cfg); !strings.Contains(r.stdout, "explorer   "+url1+" (from "+urlFile+")\n") {
		t.Fatalf("doctor does not show the explorer's URL:\n%s%s", r.stdout, r.stderr)
	}
	stopServe(t, c1)

	// Stopped: --url still prints it, and says nothing listens.
	r := runCLI(t, "", nil, "ui", "--url", "--store", store)
	r.want(t, 0, url1, "nothing listens")

	// A restart: the same port and token, the same URL.
	c2, url2 := serveExplorerOnce(t, "serve-ui-2", store, "127.0.0.1:0")
	if url2 != url1 {
		t.Fatalf("the URL changed across a restart: %s, then %s", url1, url2)
	}
	stopServe(t, c2)

	// The last port taken by someone else: another port, the same token.
	ln, err := net.Listen("tcp", strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(url1, "/?", 2)[0], "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	c3, url3 := serveExplorerOnce(t, "serve-ui-3", store, "127.0.0.1:0")
	ln.Close()
	if url3 == url1 || !strings.HasSuffix(url3, "?token="+strings.TrimSpace(string(tok))) {
		t.Fatalf("with the last port busy: %s (last %s)", url3, url1)
	}
	stopServe(t, c3)

	// Rotation: a new token at the next start; the old URL's token is gone.
	runCLI(t, "", nil, "ui", "--rotate-token", "--store", store).want(t, 0, "next start")
	wantOwnerOnly(t, tokenFile)
	tok2, _ := os.ReadFile(tokenFile)
	if string(tok2) == string(tok) {
		t.Fatal("--rotate-token kept the token")
	}
	c4, url4 := serveExplorerOnce(t, "serve-ui-4", store, "127.0.0.1:0")
	if !strings.HasSuffix(url4, "?token="+strings.TrimSpace(string(tok2))) {
		t.Fatalf("after rotation the URL is %s, the token file holds %q", url4, tok2)
	}
	if code, _ := apiGet(t, strings.SplitN(url4, "?", 2)[0]+"?token="+strings.TrimSpace(string(tok)), "/api/sessions"); code != http.StatusForbidden {
		t.Fatalf("the old token after rotation: %d, want 403", code)
	}
	stopServe(t, c4)
}

// TestExplorerStateDir: a Badger store keeps the explorer's files in its
// directory; a PostgreSQL store (no directory) in
// $XDG_STATE_HOME/lossless/ui-<hash>, the same for URLs that differ only in
// password or parameters, different for another database.
func TestExplorerStateDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	if d, err := explorerStateDir("/data/store"); err != nil || d != "/data/store" {
		t.Fatalf("badger: %q %v", d, err)
	}
	a, err := explorerStateDir("postgres://u:one@db:5432/lossless?pool_max_conns=4")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := explorerStateDir("postgres://u:two@db:5432/lossless")
	c, _ := explorerStateDir("postgres://u:one@db:5432/other")
	if a != b || a == c || !strings.HasPrefix(a, "/state/lossless/ui-") {
		t.Fatalf("postgres dirs %q %q %q", a, b, c)
	}
}

// TestExplorerTokenFile: the token file is made 0600, reused, made
// owner-only again when found wider, and replaced when it holds no token.
func TestExplorerTokenFile(t *testing.T) {
	dir := t.TempDir()
	tok, err := explorerToken(dir)
	if err != nil || !validToken(tok) {
		t.Fatalf("%q %v", tok, err)
	}
	path := filepath.Join(dir, explorerTokenFile)
	wantOwnerOnly(t, path)
	if again, _ := explorerToken(dir); again != tok {
		t.Fatalf("the token changed: %s, then %s", tok, again)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if again, _ := explorerToken(dir); again != tok {
		t.Fatal("the token changed on a chmod")
	}
	wantOwnerOnly(t, path)
	if err := os.WriteFile(path, []byte("not a token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again, _ := explorerToken(dir); again == tok || !validToken(again) {
		t.Fatalf("a damaged token file gave %q", again)
	}
}
