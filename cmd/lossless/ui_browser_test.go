package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/internal/browser"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/ui"
)

// screenshotsEnv names a directory that keeps the views' screenshots
// (default: the test's temporary directory, removed after it).
const screenshotsEnv = "LOSSLESS_UI_SCREENSHOTS"

var digits = regexp.MustCompile(`^[0-9]+$`)

// TestUIBrowser drives the explorer in headless Chromium over the store of
// both pi-mono transcripts, imported and compacted, and checks each view
// against the command's output for the same store (issue #18's done-when
// 3). It skips without Chromium (see internal/browser) or the shared data.
func TestUIBrowser(t *testing.T) {
	t.Parallel()
	browser.Require(t)
	f := buildUIFixture(t) // before the engine below opens the store: Badger admits one process
	ctx := context.Background()

	e := openUIEngine(t, f.store)
	t.Cleanup(func() { e.Close() })
	check, err := e.Check(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return e, nil }, ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	tab := browser.Start(t, browser.Options{Width: 1280, Height: 800})

	shots := os.Getenv(screenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := func(t *testing.T, name string) {
		t.Logf("screenshot: %s", tab.Screenshot(t, shots, name))
	}
	large := f.convs[1] // compacted into a depth-1 summary over leaves
	before := f.convs[0]
	rowOf := map[string]string{} // conversation id → its row's data-session

	t.Run("sessions", func(t *testing.T) {
		tab.Load(t, ts.URL+"/?token="+srv.Token()+"#/sessions", "sessions")
		type row struct {
			Agent   string `json:"agent"`
			Session string `json:"session"`
		}
		rows := browser.Eval[[]row](t, tab, `[...document.querySelectorAll("tr[data-test=session-row]")].map(r => ({agent: r.dataset.agent, session: r.dataset.session}))`)
		if len(rows) != len(f.convs) {
			t.Fatalf("the session list shows %d rows %v, the store has %d conversations", len(rows), rows, len(f.convs))
		}
		for _, c := range f.convs {
			for _, r := range rows {
				if r.Agent == c.Agent && c.has(r.Session) {
					rowOf[c.ID] = r.Session
				}
			}
			if rowOf[c.ID] == "" {
				t.Errorf("no row for conversation %s (agent %s, sessions %v): rows %v", c.ID, c.Agent, c.SessionIDs, rows)
			}
		}
		shot(t, "sessions")
	})

	row := func(t *testing.T, c uiConversation) string {
		if rowOf[c.ID] == "" {
			t.Skip("the session list lacks the conversation's row")
		}
		return fmt.Sprintf(`tr[data-test=session-row][data-session=%q]`, rowOf[c.ID])
	}

	var prompted uiShown // the context view's figures for uiBudget and uiPrompt
	t.Run("context", func(t *testing.T) {
		tab.ClickTo(t, row(t, large)+" a[data-test=open-context]", "context")
		// First without a budget or a prompt: no recall, the figures are
		// fixed by the store.
		if err := shownContext(t, tab).equals(f.plain); err != nil {
			t.Errorf("without a budget or a prompt: %v", err)
		}
		tab.Fill(t, "input[data-test=budget]", strconv.Itoa(uiBudget))
		tab.Fill(t, "textarea[data-test=prompt]", uiPrompt)
		tab.ClickTo(t, "button[data-test=assemble]", "context")
		prompted = shownContext(t, tab)
		if tab.Count(t, "[data-test=budget-line]") == 0 {
			t.Error("no budget line")
		}
		shot(t, "context")
	})

	t.Run("dag", func(t *testing.T) {
		tab.ClickTo(t, "a[data-test=nav-sessions]", "sessions")
		tab.ClickTo(t, row(t, large)+" a[data-test=open-dag]", "dag")
		roots := browser.Eval[[]string](t, tab, `[...document.querySelectorAll("[data-test=summary-node]")].filter(n => !n.parentElement.closest("[data-test=summary-node]")).map(n => n.dataset.id)`)
		if len(roots) == 0 {
			t.Fatal("the DAG view shows no summary")
		}
		// Expand from the first root down to a raw message: a child
		// summary while there is no message among a node's children.
		id, seq := roots[0], ""
		for depth := 0; seq == "" && depth < 8; depth++ {
			node := fmt.Sprintf(`[data-test=summary-node][data-id=%q]`, id)
			tab.Click(t, node+" button[data-test=expand]")
			own := fmt.Sprintf(`[...document.querySelector(%q).querySelectorAll("[data-test=summary-node], [data-test=raw-message]")].filter(c => c.parentElement.closest("[data-test=summary-node]") === document.querySelector(%q))`, node, node)
			tab.WaitFor(t, "the children of "+id, own+".length > 0")
			type child struct {
				ID  string `json:"id"`
				Seq string `json:"seq"`
			}
			kids := browser.Eval[[]child](t, tab, own+`.map(c => ({id: c.dataset.id || "", seq: c.dataset.test === "raw-message" ? c.dataset.seq : ""}))`)
			for _, k := range kids {
				if k.Seq != "" {
					seq = k.Seq
					break
				}
			}
			if seq == "" {
				id = kids[0].ID
			}
		}
		if seq == "" {
			t.Fatalf("expanding %s 8 levels down reached no raw message", roots[0])
		}
		n, err := strconv.Atoi(seq)
		if err != nil || n < 1 || n > len(large.export) {
			t.Fatalf("raw message data-seq %q: not a message of the %d exported", seq, len(large.export))
		}
		msg := fmt.Sprintf(`[data-test=raw-message][data-seq=%q]`, seq)
		tab.Click(t, msg+" button[data-test=show-raw]")
		tab.WaitFor(t, "message "+seq+"'s bytes", fmt.Sprintf(`document.querySelector(%q)`, msg+`[data-loaded="1"]`))
		got := tab.Text(t, msg+" pre[data-test=raw-bytes]")
		if want := string(large.export[n-1]); got != want {
			t.Errorf("message %s's raw bytes on the page differ from its line of lossless export\n got %.300s\nwant %.300s", seq, got, want)
		}
		if tab.Count(t, msg+" button[data-test=copy]") == 0 {
			t.Error("the raw message has no copy button")
		}
		// The API's bytes, without the page's UTF-16 round trip.
		body, ctype := get(t, ts.URL+"/api/message?agent="+large.Agent+"&session="+rowOf[large.ID]+"&seq="+seq, srv.Token(), "", http.StatusOK)
		if body != string(large.export[n-1]) || ctype != "application/json; charset=utf-8" {
			t.Errorf("/api/message (%s) differs from the exported line\n got %.300s\nwant %.300s", ctype, body, large.export[n-1])
		}
		shot(t, "dag")
	})

	t.Run("search", func(t *testing.T) {
		tab.ClickTo(t, "a[data-test=nav-search]", "search")
		tab.Fill(t, "input[data-test=search-query]", uiIdent)
		tab.ClickTo(t, "button[data-test=search-go]", "search")
		type hit struct {
			Session string `json:"session"`
			Seq     string `json:"seq"`
		}
		hits := browser.Eval[[]hit](t, tab, `[...document.querySelectorAll("[data-test=grep-hit]")].map(h => ({session: h.dataset.session || "", seq: h.dataset.seq || ""}))`)
		messages := 0
		for _, h := range hits {
			if !before.has(h.Session) {
				t.Errorf("grep hit %+v is not in %s, the only transcript with %q", h, before.file, uiIdent)
				continue
			}
			if h.Seq == "" {
				continue // a summary's hit
			}
			n, err := strconv.Atoi(h.Seq)
			if err != nil || n < 1 || n > len(before.export) || !strings.Contains(string(before.export[n-1]), uiIdent) {
				t.Errorf("grep hit %+v: exported message %s does not hold %q", h, h.Seq, uiIdent)
			}
			messages++
		}
		if messages == 0 {
			t.Errorf("searching %q found no message (hits %v)", uiIdent, hits)
		}
		shot(t, "search")
	})

	t.Run("health", func(t *testing.T) {
		tab.ClickTo(t, "a[data-test=nav-health]", "health")
		got := browser.Eval[string](t, tab, `document.querySelector("[data-test=health-doctor]").dataset.problems`)
		if got != strconv.Itoa(len(check.Problems)) {
			t.Errorf("health shows %s doctor findings, Engine.Check %d: %v", got, len(check.Problems), check.Problems)
		}
		shot(t, "health")
	})

	t.Run("access", func(t *testing.T) {
		api := ts.URL + "/api/overview"
		get(t, api, srv.Token(), "", http.StatusOK)
		get(t, api, "", "", http.StatusForbidden)
		get(t, ts.URL+"/", "", "", http.StatusForbidden)
		get(t, api, strings.Repeat("0", len(srv.Token())), "", http.StatusForbidden)
		get(t, api+"?token=wrong", "", "", http.StatusForbidden)
		// DNS rebinding: the right token under a name that is not loopback.
		get(t, api, srv.Token(), "attacker.example:"+strings.TrimPrefix(ts.URL, "http://127.0.0.1:"), http.StatusForbidden)
	})

	t.Run("no console errors", func(t *testing.T) {
		for _, p := range tab.Problems() {
			t.Errorf("the page: %s", p)
		}
	})

	// With a prompt, the figures depend on the recall index too: the
	// fixture merged its segments (CompactRecallIndex), so that it ranks
	// alike before, during and after the explorer ran. The page's figures
	// must be the command's, and the command's after the explorer ran the
	// same as before.
	t.Run("context with a prompt equals assemble --json", func(t *testing.T) {
		if prompted.total == "" {
			t.Skip("the context view showed no figures")
		}
		ts.Close()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := prompted.equals(f.asm); err != nil {
			t.Errorf("budget %d, prompt %q: %v", uiBudget, uiPrompt, err)
		}
		after := assembleCLI(t, f.store, large.SessionIDs[0], uiBudget, uiPrompt)
		if f.asm.EstimatedTokens != after.EstimatedTokens || partTokens(f.asm, "recall") != partTokens(after, "recall") {
			t.Errorf("assemble --json gave %d tokens before the explorer ran, %d after (recall %d, %d)",
				f.asm.EstimatedTokens, after.EstimatedTokens, partTokens(f.asm, "recall"), partTokens(after, "recall"))
		}
	})
}

// uiShown is what the context view shows: the total, the parts' tokens
// and the number of messages.
type uiShown struct {
	total    string
	parts    map[string]int
	messages int
}

// shownContext reads the context view's figures; each must be digits only,
// and the parts must add up to the total.
func shownContext(t *testing.T, tab *browser.Tab) uiShown {
	t.Helper()
	s := uiShown{total: tab.Text(t, "[data-test=context-total]"), parts: map[string]int{},
		messages: tab.Count(t, "[data-test=context-message]")}
	if !digits.MatchString(s.total) {
		t.Fatalf("context-total %q is not digits only", s.total)
	}
	type part struct {
		Part   string `json:"part"`
		Tokens string `json:"tokens"`
	}
	parts := browser.Eval[[]part](t, tab, `[...document.querySelectorAll("[data-test=part]")].map(p => ({part: p.dataset.part, tokens: (p.querySelector("[data-test=part-tokens]") || {}).textContent}))`)
	sum := 0
	for _, p := range parts {
		if !digits.MatchString(p.Tokens) {
			t.Fatalf("part %q's tokens %q are not digits only", p.Part, p.Tokens)
		}
		n, _ := strconv.Atoi(p.Tokens)
		sum += n
		s.parts[p.Part] += n
	}
	if strconv.Itoa(sum) != s.total {
		t.Errorf("the parts %v sum to %d, the total is %s", parts, sum, s.total)
	}
	return s
}

// equals reports how the shown figures differ from assemble --json's.
func (s uiShown) equals(a uiAssembled) error {
	var diffs []string
	if s.total != strconv.Itoa(a.EstimatedTokens) {
		diffs = append(diffs, fmt.Sprintf("total %s, assemble --json %d", s.total, a.EstimatedTokens))
	}
	if s.messages != len(a.Messages) {
		diffs = append(diffs, fmt.Sprintf("%d messages, assemble --json %d", s.messages, len(a.Messages)))
	}
	seen := map[string]bool{}
	for _, p := range a.Parts {
		seen[p.Part] = true
		if s.parts[p.Part] != p.Tokens {
			diffs = append(diffs, fmt.Sprintf("part %s %d tokens, assemble --json %d", p.Part, s.parts[p.Part], p.Tokens))
		}
	}
	for p := range s.parts {
		if !seen[p] {
			diffs = append(diffs, fmt.Sprintf("part %q, which assemble --json has not", p))
		}
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "; "))
	}
	return nil
}

// partTokens returns the tokens of part p in a.
func partTokens(a uiAssembled, p string) int {
	for _, x := range a.Parts {
		if x.Part == p {
			return x.Tokens
		}
	}
	return 0
}

// get requests url (with the token in X-Lossless-Token when given, and
// the Host header when given), checks the status and returns the body and
// its Content-Type.
func get(t *testing.T, url, token, host string, status int) (string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Lossless-Token", token)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Errorf("GET %s (token %t, host %q): %d %s, want %d", url, token != "", host, resp.StatusCode, strings.TrimSpace(string(body)), status)
	}
	return string(body), resp.Header.Get("Content-Type")
}
