package ui_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/ui"
)

// do sends a GET with the given token placement and Host, returning the
// status.
func do(t *testing.T, c *http.Client, url, header, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if header != "" {
		req.Header.Set(ui.TokenHeader, header)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAccess(t *testing.T) {
	e := openEngine(t)
	f := serve(t, e)
	tok := f.srv.Token()
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
		t.Fatalf("token %q is not 256 random bits in hex", tok)
	}
	if other := serve(t, e).srv.Token(); other == tok {
		t.Fatal("two servers made the same token")
	}
	// wrong is tok with its last digit changed (a fixed "0" would be the
	// token itself once in 16 runs).
	wrong := tok[:63] + "0"
	if tok[63] == '0' {
		wrong = tok[:63] + "1"
	}
	api := f.ts.URL + "/api/overview"
	port := strings.TrimPrefix(f.ts.URL, "http://127.0.0.1:")
	plain := &http.Client{}
	for _, tc := range []struct {
		name, url, header, host string
		want                    int
	}{
		{"no token", api, "", "", http.StatusForbidden},
		{"no token, the page", f.ts.URL + "/", "", "", http.StatusForbidden},
		{"no token, an asset", f.ts.URL + "/app.js", "", "", http.StatusForbidden},
		{"wrong header", api, strings.Repeat("0", 64), "", http.StatusForbidden},
		{"wrong query", api + "?token=" + wrong, "", "", http.StatusForbidden},
		{"a prefix of the token", api + "?token=" + tok[:32], "", "", http.StatusForbidden},
		{"header", api, tok, "", http.StatusOK},
		{"query", api + "?token=" + tok, "", "", http.StatusOK},
		{"localhost", api, tok, "localhost:" + port, http.StatusOK},
		{"[::1]", api, tok, "[::1]:" + port, http.StatusOK},
		{"rebinding", api, tok, "attacker.example:" + port, http.StatusForbidden},
		{"rebinding without a port", api, tok, "attacker.example", http.StatusForbidden},
		{"a LAN address", api, tok, "192.168.1.5:" + port, http.StatusForbidden},
		{"a name ending in localhost", api, tok, "localhost.attacker.example:" + port, http.StatusForbidden},
	} {
		if got, body := do(t, plain, tc.url, tc.header, tc.host); got != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, got, body, tc.want)
		}
	}
	// The page URL sets the cookie; the cookie alone then opens the API
	// and the assets.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(f.ts.URL + "/?token=" + tok)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-test="view"`) {
		t.Fatalf("the page: %d %.200s", resp.StatusCode, page)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == ui.CookieName {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != tok || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Fatalf("cookie %+v", cookie)
	}
	for _, p := range []string{"/api/overview", "/app.js", "/app.css"} {
		if got, body := do(t, browser, f.ts.URL+p, "", ""); got != http.StatusOK {
			t.Errorf("%s with the cookie: %d %.200s", p, got, body)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// TestNotOpen: before the serving process opens its engine the API
// answers 503 and the page still loads (it says so).
func TestNotOpen(t *testing.T) {
	srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return nil, ui.ErrNotOpen }, ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url, err := srv.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(context.Background())
	defer srv.Close()
	if got, _ := do(t, &http.Client{}, url, "", ""); got != http.StatusOK {
		t.Fatalf("the page: %d", got)
	}
	base := strings.Split(url, "/?")[0]
	for _, p := range []string{"/api/overview", "/api/sessions", "/api/health", "/api/message?agent=a&session=s&seq=1"} {
		got, body := do(t, &http.Client{}, base+p, srv.Token(), "")
		if got != http.StatusServiceUnavailable || !strings.Contains(body, "not open yet") {
			t.Errorf("%s: %d %s", p, got, body)
		}
	}
	// A closed engine (a serving process disposed it) is not open either.
	e := openEngine(t)
	f := serve(t, e)
	e.Close()
	if msg := f.wantError(t, "/api/sessions", nil, http.StatusServiceUnavailable); !strings.Contains(msg, "not open") {
		t.Errorf("closed engine: %q", msg)
	}
}

func TestListen(t *testing.T) {
	srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return nil, ui.ErrNotOpen }, ui.Options{Token: "fixed"})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"0.0.0.0:0", "192.168.1.5:0", ":0", "example.com:80", "nonsense"} {
		if _, err := srv.Listen(bad); err == nil {
			t.Errorf("Listen(%q) accepted", bad)
		}
	}
	url, err := srv.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[1-9][0-9]*/\?token=fixed$`).MatchString(url) {
		t.Fatalf("URL %q", url)
	}
	if _, err := srv.Listen(""); err == nil {
		t.Error("a second Listen accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	if got, _ := do(t, &http.Client{}, url, "", ""); got != http.StatusOK {
		t.Fatalf("the page: %d", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when its context ended")
	}
	if _, err := http.Get(url); err == nil {
		t.Error("still serving after Serve returned")
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := ui.New(nil, ui.Options{}); err == nil {
		t.Error("New(nil) accepted")
	}
}

// TestAssetsSize: the page's own assets (HTML, JS, CSS) total under
// 200 KB, and they name nothing outside the server.
func TestAssetsSize(t *testing.T) {
	dir := "assets"
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).Find(b); m != nil {
			return errors.New(p + " loads from another origin: " + string(m))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || total >= 200_000 {
		t.Fatalf("the page's assets total %d bytes (limit 200 KB)", total)
	}
	t.Logf("assets: %d bytes", total)
	// What is embedded is what is served: the page from the binary.
	f := serve(t, openEngine(t))
	for _, name := range []string{"index.html", "app.js", "app.css"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		path := "/" + name
		if name == "index.html" {
			path = "/"
		}
		code, got := f.get(t, path, nil)
		if code != http.StatusOK || string(got) != string(want) {
			t.Errorf("%s: %d, %d bytes served, %d in assets/", path, code, len(got), len(want))
		}
	}
}

func TestUnknownAPI(t *testing.T) {
	f := serve(t, openEngine(t))
	f.wantError(t, "/api/nothing", nil, http.StatusNotFound)
	if code, _ := f.get(t, "/elsewhere.html", nil); code != http.StatusNotFound {
		t.Errorf("an unknown file: %d", code)
	}
}
