package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The explorer page's view container (the explorer of package ui): data-view names
// the view, data-state is loading, ready or error; ready only once the
// view's data is shown.
const viewSel = "main[data-test=view]"

// armJS starts counting changes of the view container (its data-state or
// data-view set, or the container replaced), so that a wait after an action
// needs a change: the state the action replaces may be "ready" already.
const armJS = `(() => {
  const s = window.__browserTest || (window.__browserTest = {});
  if (s.obs) s.obs.disconnect();
  s.changes = 0;
  s.count = (r) => {
    if (r.type === "attributes" && r.target.matches && r.target.matches(%[1]q)) s.changes++;
    if (r.type === "childList") for (const n of r.addedNodes)
      if (n.nodeType === 1 && (n.matches(%[1]q) || n.querySelector(%[1]q))) s.changes++;
  };
  s.obs = new MutationObserver((rs) => rs.forEach(s.count));
  s.obs.observe(document.documentElement, {subtree: true, childList: true, attributes: true, attributeFilter: ["data-state", "data-view"]});
})()`

// readyJS is the wait's predicate: "ready" once the view is %[2]q and ready
// after a change (any state in a new document, which has no counter), an
// "error: …" string when the view shows an error, else false. The pending
// mutation records are taken synchronously, so the predicate never runs
// ahead of the counter.
const readyJS = `(() => {
  const s = window.__browserTest;
  if (s && s.obs) s.obs.takeRecords().forEach(s.count);
  const m = document.querySelector(%[1]q);
  if (!m || (s && s.obs && s.changes === 0)) return false;
  if (m.dataset.state === "error") return "error: view " + m.dataset.view + ": " + m.textContent.trim().slice(0, 500);
  if (m.dataset.view === %[2]q && m.dataset.state === "ready") {
    if (s && s.obs) { s.obs.disconnect(); s.obs = null; }
    return "ready";
  }
  return false;
})()`

// stateJS describes the view container for a failure message.
const stateJS = `(() => {
  const m = document.querySelector(%q);
  if (!m) return "no view container at " + location.href;
  const s = window.__browserTest;
  return "view " + m.dataset.view + ", state " + m.dataset.state + ", " + (s ? s.changes : "no") + " changes seen, at " + location.href;
})()`

// Load navigates to url (a new document) and waits until the view is
// ready.
func (t *Tab) Load(tb testing.TB, url, view string) {
	tb.Helper()
	t.Do(tb, "load "+url, chromedp.Navigate(url))
	t.waitReady(tb, view, "load "+url)
}

// Act runs the actions (a click, a key, a route change) and waits until
// the view container has changed and shows view, ready. It fails the test
// when the view turns to its error state.
func (t *Tab) Act(tb testing.TB, view, what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	t.Do(tb, "arm the view watch", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(armJS, viewSel)))
	t.Do(tb, what, actions...)
	t.waitReady(tb, view, what)
}

// Route sets the page's hash route (#/…) and waits until view is ready.
func (t *Tab) Route(tb testing.TB, hash, view string) {
	tb.Helper()
	t.Act(tb, view, "route "+hash, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", hash)))
}

// ClickTo clicks the first element matching sel and waits until view is
// ready.
func (t *Tab) ClickTo(tb testing.TB, sel, view string) {
	tb.Helper()
	t.Act(tb, view, "click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

func (t *Tab) waitReady(tb testing.TB, view, after string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(t.ctx, t.step)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(readyJS, viewSel, view), chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(t.step)))
	if err != nil {
		// Say where the page stands (a fresh deadline: the wait's is spent).
		sctx, scancel := context.WithTimeout(t.ctx, 10*time.Second)
		defer scancel()
		state, _ := chromedp.Run(sctx, chromedp.Evaluate[string](fmt.Sprintf(stateJS, viewSel)))
		tb.Fatalf("browser: wait for view %s ready after %s: %v; the page: %s%s", view, after, err, state, t.problemsNote())
	}
	if strings.HasPrefix(got, "error") {
		tb.Fatalf("browser: after %s the page shows %s%s", after, got, t.problemsNote())
	}
}

// WaitFor waits until a JavaScript expression is truthy (bounded by the
// step deadline), re-evaluating it on every DOM change.
func (t *Tab) WaitFor(tb testing.TB, what, expr string) {
	tb.Helper()
	Run(tb, t, "wait for "+what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(t.step)))
}
