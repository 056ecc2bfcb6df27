// Package ui is the memory explorer: a web page served on 127.0.0.1 that
// shows what a lossless store holds and what the engine would do with it —
// sessions and their figures, a session's next context as assemble would
// build it, the summary DAG down to the raw bytes, grep and the recall
// ranking explained, and the store's health.
//
// A Server reads the engine its Source returns: `lossless ui` opens a
// store itself; `lossless serve --stdio --ui ADDR` serves the engine the
// bridge opens (a Badger store admits one process, so the explorer of a
// store OpenClaw is using runs in OpenClaw's engine process). Every request
// needs a random token (in the page URL, then a cookie), and a Host header
// naming a loopback address: another local user, or a page of another
// site in the browser, cannot read the store. The page (HTML, JS and CSS,
// under 200 KB) is embedded; nothing is fetched from the network; all its
// URLs are relative, so a proxy may serve it under a path of its own.
//
// The same page is OpenClaw's Memory tab: the plugin's gateway-auth route
// proxies it into the Control UI's sandboxed frame with the token in
// TokenHeader and EmbedHeader set (framing by its own origin, CORS for the
// frame's opaque origin on the API), and a key of its own in PageKeyMeta.
//
// The JSON API (one file per view: api_*.go) answers GET requests; its
// lists are paged. See the spec in README.md ("Seeing the memory").
package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
)

// Source returns the engine the explorer reads; (nil, ErrNotOpen) while a
// serving process has not opened it yet (the page then says so).
type Source func(ctx context.Context) (*lossless.Engine, error)

// ErrNotOpen is what a Source returns while there is no engine to read:
// the API answers 503 and the page says the engine is not open yet.
var ErrNotOpen = errors.New("ui: the engine is not open yet")

// Options configure a Server.
type Options struct {
	// Token is the access token; "" makes a random 256-bit one
	// (crypto/rand, hex).
	Token string
	// Logf logs what goes wrong serving (nil: no logging).
	Logf func(format string, args ...any)
	// LastAssemble, when set, returns the last assemble the serving
	// process answered for a session (by its key or id); the context view
	// then shows it and explains it by assembling again with its budget
	// and prompt. `lossless serve --ui` records them (LastAssembles).
	LastAssemble func(session string) (LastAssemble, bool)
}

// LastAssemble is what a serving process recorded of an assemble it
// answered: the call's budget and prompt, and what it returned.
type LastAssemble struct {
	// At is when it was answered (Unix ms).
	At         int64  `json:"at"`
	SessionID  string `json:"sessionId"`
	SessionKey string `json:"sessionKey,omitempty"`
	// Budget is the call's tokenBudget (0: none given, the engine's
	// default); Prompt the call's prompt.
	Budget          int               `json:"budget"`
	Prompt          string            `json:"prompt"`
	Messages        int               `json:"messages"`
	EstimatedTokens int               `json:"estimatedTokens"`
	Cut             *core.AssembleCut `json:"cut,omitempty"`
}

// LastAssembles records the last assemble answered per session, by key and
// by id: its Record is a bridge.Options.OnAssemble, its Get an
// Options.LastAssemble. Only assembles carrying a prompt are kept (a
// turn's first assemble, where recall runs; OpenClaw's later assembles of
// the turn, one per model call, carry none). The zero value is ready.
type LastAssembles struct {
	mu sync.Mutex
	m  map[string]LastAssemble
}

// maxLastAssembles bounds the sessions LastAssembles keeps (the oldest
// record is dropped beyond it).
const maxLastAssembles = 4096

// Record keeps p's assemble (when it carries a prompt) as its session's last.
func (l *LastAssembles) Record(p core.AssembleParams, res core.AssembleResult) {
	if p.Prompt == "" {
		return
	}
	rec := LastAssemble{At: time.Now().UnixMilli(), SessionID: p.SessionID, SessionKey: p.SessionKey, Budget: p.TokenBudget,
		Prompt: p.Prompt, Messages: len(res.Messages), EstimatedTokens: res.EstimatedTokens, Cut: res.Cut}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]LastAssemble{}
	}
	if len(l.m) >= maxLastAssembles {
		var oldest string
		for k, v := range l.m {
			if oldest == "" || v.At < l.m[oldest].At {
				oldest = k
			}
		}
		delete(l.m, oldest)
	}
	for _, k := range []string{p.SessionID, p.SessionKey} {
		if k != "" {
			l.m[k] = rec
		}
	}
}

// Get returns the last assemble recorded for a session key or id.
func (l *LastAssembles) Get(session string) (LastAssemble, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.m[session]
	return r, ok
}

// CookieName is the cookie that GET /?token=T sets, so that the page's own
// requests need not carry the token.
const CookieName = "lossless_ui"

// TokenHeader is the request header that may carry the token.
const TokenHeader = "X-Lossless-Token"

//go:embed assets
var assetFS embed.FS

// Server serves the explorer: the page and its JSON API. It is an
// http.Handler; Listen and Serve run it on 127.0.0.1.
type Server struct {
	src    Source
	last   func(session string) (LastAssemble, bool)
	token  string
	logf   func(format string, args ...any)
	mux    *http.ServeMux
	health healthJob

	mu     sync.Mutex
	ln     net.Listener
	srv    *http.Server
	closed bool
	// base is the context of background work (the health job); cancel
	// ends it at Close.
	base   context.Context
	cancel context.CancelFunc
}

// NewToken returns a random 256-bit access token, in hex (the form New
// makes when Options.Token is empty).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("ui: make a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// New returns a Server reading the engine src returns.
func New(src Source, o Options) (*Server, error) {
	if src == nil {
		return nil, errors.New("ui: nil Source")
	}
	tok := o.Token
	if tok == "" {
		var err error
		if tok, err = NewToken(); err != nil {
			return nil, err
		}
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &Server{src: src, last: o.LastAssemble, token: tok, logf: logf, mux: http.NewServeMux()}
	s.base, s.cancel = context.WithCancel(context.Background())
	assets, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, fmt.Errorf("ui: assets: %w", err)
	}
	s.routes(assets)
	return s, nil
}

// Token returns the access token.
func (s *Server) Token() string { return s.token }

// routes registers the page and the API.
func (s *Server) routes(assets fs.FS) {
	page := http.FileServerFS(assets)
	s.mux.Handle("GET /{$}", page)
	for _, f := range []string{"/app.js", "/app.css"} {
		s.mux.Handle("GET "+f, page)
	}
	s.mux.HandleFunc("GET /api/overview", s.api(s.overview))
	s.mux.HandleFunc("GET /api/health", s.api(s.healthView))
	s.mux.HandleFunc("GET /api/sessions", s.api(s.sessions))
	s.mux.HandleFunc("GET /api/context", s.api(s.contextView))
	s.mux.HandleFunc("GET /api/summaries", s.api(s.summaries))
	s.mux.HandleFunc("GET /api/summary", s.api(s.summary))
	s.mux.HandleFunc("GET /api/message", s.message)
	s.mux.HandleFunc("GET /api/grep", s.api(s.grep))
	s.mux.HandleFunc("GET /api/recall", s.api(s.recall))
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no API %s %s", r.Method, r.URL.Path))
	})
}

// EmbedHeader, sent with the token in TokenHeader by a proxy that shows the
// explorer in a sandboxed frame of its own origin (the OpenClaw plugin's
// Memory tab in the Control UI), asks for the answers such a frame needs:
// value "frame". The page may then be framed by its own origin
// (frame-ancestors 'self' instead of 'none'), its document's origin is
// opaque, so the API (never the page or its files) answers a request
// whose Origin is "null" with Access-Control-Allow-Origin: null and
// credentials allowed: the proxy, not this server, decides who may ask (the
// OpenClaw plugin puts a key in the page it serves, PageKeyMeta, and
// answers only API requests that carry it). The header is ignored on a
// request that does not carry the token in TokenHeader (a browser never
// sends it).
const EmbedHeader = "X-Lossless-Embed"

// PageKeyMeta is the empty meta element of the page (index.html) that a
// proxy framing the explorer fills with a key of its own; the page then
// sends it as the query parameter PageKeyParam with every API request.
const PageKeyMeta = `<meta name="lossless-page-key" content="">`

// PageKeyParam is the query parameter carrying the proxy's page key.
const PageKeyParam = "k"

// cspStandalone and cspFramed are the Content-Security-Policy of the
// standalone page and of the framed one: scripts, styles and requests of
// the page's own origin only, no inline script or style.
const (
	cspCommon     = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
	cspStandalone = cspCommon + "frame-ancestors 'none'"
	cspFramed     = cspCommon + "frame-ancestors 'self'"
)

// ServeHTTP checks the Host and the token, then serves the page or the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", cspStandalone)
	if !loopbackHost(r.Host) {
		http.Error(w, "lossless ui: refused: the Host header must name 127.0.0.1, [::1] or localhost", http.StatusForbidden)
		return
	}
	tok, fromQuery := s.requestToken(r)
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		http.Error(w, "lossless ui: refused: open the URL `lossless ui` (or `lossless serve --ui`) printed, with its token", http.StatusForbidden)
		return
	}
	if r.Header.Get(EmbedHeader) == "frame" && r.Header.Get(TokenHeader) != "" {
		h.Del("X-Frame-Options")
		h.Set("Content-Security-Policy", cspFramed)
		h.Add("Vary", "Origin")
		if r.Header.Get("Origin") == "null" && strings.HasPrefix(r.URL.Path, "/api/") {
			h.Set("Access-Control-Allow-Origin", "null")
			h.Set("Access-Control-Allow-Credentials", "true")
		}
	} else if fromQuery && r.URL.Path == "/" {
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	s.mux.ServeHTTP(w, r)
}

// requestToken returns the token a request carries: the query's, else the
// header's, else the cookie's.
func (s *Server) requestToken(r *http.Request) (string, bool) {
	if t := r.URL.Query().Get("token"); t != "" {
		return t, true
	}
	if t := r.Header.Get(TokenHeader); t != "" {
		return t, false
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return c.Value, false
	}
	return "", false
}

// loopbackHost reports whether a Host header (with or without a port)
// names 127.0.0.1, ::1 or localhost: a page of another site that a DNS
// name of its own points at 127.0.0.1 (DNS rebinding) sends its own name.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	switch strings.ToLower(h) {
	case "127.0.0.1", "::1", "localhost":
		return true
	}
	return false
}

// CheckAddr reports whether addr is an address Listen accepts: host:port
// with a loopback host (127.0.0.1, [::1], localhost).
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("ui: address %q: %w (want 127.0.0.1:PORT)", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("ui: address %q is not a loopback address: the explorer serves 127.0.0.1 (or [::1]) only", addr)
	}
	return nil
}

// Listen binds addr ("" or "127.0.0.1:0": a free port on 127.0.0.1; a
// non-loopback host is refused with a clear error) and returns the page
// URL "http://127.0.0.1:PORT/?token=TOKEN".
func (s *Server) Listen(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := CheckAddr(addr); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errors.New("ui: server closed")
	}
	if s.ln != nil {
		return "", errors.New("ui: already listening")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("ui: listen on %s: %w", addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return s.base }}
	return "http://" + ln.Addr().String() + "/?token=" + s.token, nil
}

// Serve serves the address Listen bound until ctx ends or Close is
// called; it then returns nil.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	srv, ln := s.srv, s.ln
	s.mu.Unlock()
	if srv == nil {
		return errors.New("ui: Serve before Listen")
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and the background work. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cancel()
	if s.srv != nil {
		return s.srv.Close()
	}
	if s.ln != nil {
		return s.ln.Close()
	}
	return nil
}
