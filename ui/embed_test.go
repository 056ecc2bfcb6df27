package ui_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/ui"
)

// TestEmbedFrame: with the token in its header and ui.EmbedHeader "frame"
// (the OpenClaw plugin's proxy), the page may be framed by its own origin
// and the API answers the frame's opaque origin with CORS; the page and its
// files never get CORS headers, and a browser (token in the query or the
// cookie, or no embed header) keeps the standalone headers.
func TestEmbedFrame(t *testing.T) {
	f := serve(t, openEngine(t))
	tok := f.srv.Token()
	get := func(path string, hdr map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, f.ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	framed := map[string]string{ui.TokenHeader: tok, ui.EmbedHeader: "frame", "Origin": "null"}

	page := get("/", framed)
	if page.StatusCode != http.StatusOK {
		t.Fatalf("framed page: %d", page.StatusCode)
	}
	csp := page.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors 'self'") || strings.Contains(csp, "'unsafe-inline'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("framed page CSP %q: want frame-ancestors 'self', scripts of its origin only", csp)
	}
	if x := page.Header.Get("X-Frame-Options"); x != "" {
		t.Errorf("framed page X-Frame-Options %q: the Control UI could not frame it", x)
	}
	for _, p := range []string{"/", "/app.js", "/app.css"} {
		if a := get(p, framed).Header.Get("Access-Control-Allow-Origin"); a != "" {
			t.Errorf("%s answers CORS %q: another site's frame could read it", p, a)
		}
	}
	api := get("/api/overview", framed)
	if api.StatusCode != http.StatusOK || api.Header.Get("Access-Control-Allow-Origin") != "null" || api.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("framed API: %d, CORS %q credentials %q; want 200 null true", api.StatusCode, api.Header.Get("Access-Control-Allow-Origin"), api.Header.Get("Access-Control-Allow-Credentials"))
	}

	for name, hdr := range map[string]map[string]string{
		"no embed header":         {ui.TokenHeader: tok, "Origin": "null"},
		"embed header, no token":  {ui.EmbedHeader: "frame", "Origin": "null"},
		"embed header, bad value": {ui.TokenHeader: tok, ui.EmbedHeader: "yes", "Origin": "null"},
	} {
		r := get("/api/overview", hdr)
		if r.Header.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(r.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || r.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: CORS %q CSP %q XFO %q; want the standalone headers", name, r.Header.Get("Access-Control-Allow-Origin"), r.Header.Get("Content-Security-Policy"), r.Header.Get("X-Frame-Options"))
		}
	}
	// The query token (a browser) does not switch to the framed headers.
	r := get("/api/overview?token="+tok, map[string]string{ui.EmbedHeader: "frame", "Origin": "null"})
	if r.Header.Get("Access-Control-Allow-Origin") != "" || r.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("query token with the embed header got the framed headers")
	}
}

// TestPageKeyElement: the page holds ui.PageKeyMeta exactly once, for the
// framing proxy to fill in, and no inline script or style (the CSP forbids
// them).
func TestPageKeyElement(t *testing.T) {
	f := serve(t, openEngine(t))
	code, body := f.get(t, "/", nil)
	if code != http.StatusOK {
		t.Fatalf("page: %d", code)
	}
	html := string(body)
	if n := strings.Count(html, ui.PageKeyMeta); n != 1 {
		t.Errorf("the page holds %s %d times, want once", ui.PageKeyMeta, n)
	}
	if strings.Contains(html, "<script>") || strings.Contains(html, "<style") || strings.Contains(html, " style=") {
		t.Errorf("inline script or style in the page")
	}
	if strings.Contains(html, `href="/`) || strings.Contains(html, `src="/`) {
		t.Errorf("the page names its files by absolute paths: they would miss the proxy's route prefix")
	}
}
