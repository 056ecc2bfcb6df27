// Package browser drives a headless Chromium for the project's browser tests
// (the explorer's page, package ui): it finds the binary, opens one headless
// tab whose every step has a deadline, records what the page did wrong
// (console errors, uncaught exceptions, failed requests, responses of 400
// and above), waits on the page's data-state hooks rather than sleeping, and
// writes screenshots.
//
// Tests call Require first: without a browser they skip, saying how to run
// them, unless LOSSLESS_TEST_BROWSER_REQUIRED=1 (CI sets it), when they fail.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Environment variables the harness reads.
const (
	// RequiredEnv set to 1 makes Require fail, not skip, without a browser.
	RequiredEnv = "LOSSLESS_TEST_BROWSER_REQUIRED"
	// BinaryEnv names the browser binary to use instead of the one on PATH.
	BinaryEnv = "LOSSLESS_TEST_BROWSER"
)

// ErrNoBrowser is returned by Find when no Chromium or Chrome is found.
var ErrNoBrowser = errors.New("browser: no Chromium or Chrome found")

// candidates are the binary names Find looks for on PATH, in order.
var candidates = []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "chrome", "headless-shell"}

// Find returns the path of the browser binary: $LOSSLESS_TEST_BROWSER when
// set, else the first of chromium, chromium-browser, google-chrome… on PATH.
func Find() (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("browser: $%s=%q: %w", BinaryEnv, p, err)
		}
		return path, nil
	}
	for _, name := range candidates {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w on PATH (looked for %s)", ErrNoBrowser, strings.Join(candidates, ", "))
}

// Require returns the browser binary's path. Without one it skips the test
// with a message saying how to run it, or fails it when
// LOSSLESS_TEST_BROWSER_REQUIRED=1.
func Require(tb testing.TB) string {
	tb.Helper()
	path, err := Find()
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%v: install Debian's chromium (apt-get install chromium; .ci/run does) or set $%s to a Chrome binary", err, BinaryEnv)
	if os.Getenv(RequiredEnv) == "1" {
		tb.Fatalf("%s ($%s=1: the browser tests must run)", msg, RequiredEnv)
	}
	tb.Skip(msg)
	return ""
}

// Options configure Start. Zero fields take defaults.
type Options struct {
	// Binary is the browser's path (default: Find's).
	Binary string
	// Width and Height are the window's size in CSS pixels (default
	// 1280×800).
	Width, Height int
	// Step bounds each step (an action, a wait) (default 60 s: Chromium on
	// a loaded two-core machine under -race is slow, and a hang must still
	// end).
	Step time.Duration
}

// Tab is one headless browser with one tab. Its methods take the
// testing.TB of the (sub)test calling them, so that a failure stops the
// right test; a Tab is used by one goroutine at a time.
type Tab struct {
	ctx  context.Context
	step time.Duration

	mu       sync.Mutex
	problems []string
	urls     map[network.RequestID]string
}

// Start launches a headless browser (without the sandbox when running as
// root, which Chromium requires) and opens a tab; the test's cleanup closes
// both and waits for the browser to exit.
func Start(tb testing.TB, o Options) *Tab {
	tb.Helper()
	if o.Binary == "" {
		o.Binary = Require(tb)
	}
	if o.Width == 0 {
		o.Width, o.Height = 1280, 800
	}
	if o.Step == 0 {
		o.Step = 60 * time.Second
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(o.Binary),
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.Flag("hide-scrollbars", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t := &Tab{step: o.Step, urls: map[network.RequestID]string{}}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(func(string, ...any) {}),
		chromedp.WithListener(t.listen))
	t.ctx = ctx
	// The first action starts the browser: it must run without a deadline
	// (a deadline there would end the browser with it), so a watchdog ends
	// a start that hangs.
	watchdog := time.AfterFunc(o.Step, allocCancel)
	err := chromedp.Do(ctx)
	watchdog.Stop()
	tb.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		_ = chromedp.Cancel(cctx) // closes the browser gracefully and waits for it
		cancel()
		allocCancel()
	})
	if err != nil {
		tb.Fatalf("browser: start %s: %v", o.Binary, err)
	}
	return t
}

// listen records the page's problems; it runs in the tab's event loop, so
// it only appends under the lock.
func (t *Tab) listen(ev any) {
	var p string
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			p = "console." + string(ev.Type) + ": " + argsText(ev.Args)
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		p = "uncaught exception: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			p += " " + d.Exception.Description
		}
		p += fmt.Sprintf(" (%s:%d)", d.URL, d.LineNumber+1)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			p = fmt.Sprintf("browser log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		t.urls[ev.RequestID] = ev.Request.URL
	case *network.EventLoadingFailed:
		if !ev.Canceled {
			p = fmt.Sprintf("request failed: %s %s", t.urls[ev.RequestID], ev.ErrorText)
		}
	case *network.EventResponseReceived:
		if ev.Response.Status >= 400 {
			p = fmt.Sprintf("response %d: %s", ev.Response.Status, ev.Response.URL)
		}
	}
	if p != "" {
		t.problems = append(t.problems, p)
	}
}

// argsText formats a console call's arguments.
func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		switch {
		case a.Description != "":
			parts = append(parts, a.Description)
		case len(a.Value) > 0:
			var str string
			if json.Unmarshal(a.Value, &str) == nil {
				parts = append(parts, str)
			} else {
				parts = append(parts, string(a.Value))
			}
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

// Problems returns what the page did wrong so far: console errors,
// uncaught exceptions, failed requests and responses of 400 and above.
func (t *Tab) Problems() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.problems...)
}

// Do runs the actions in order, each step bounded by the step deadline;
// it fails the test on an error, naming what was being done.
func (t *Tab) Do(tb testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(t.ctx, t.step)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.Fatalf("browser: %s: %v%s", what, err, t.problemsNote())
	}
}

// Run runs one action that returns a value, bounded by the tab's step
// deadline; it fails the test on an error.
func Run[T any](tb testing.TB, t *Tab, what string, a chromedp.Action[T]) T {
	tb.Helper()
	ctx, cancel := context.WithTimeout(t.ctx, t.step)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.Fatalf("browser: %s: %v%s", what, err, t.problemsNote())
	}
	return v
}

// problemsNote is the problems recorded so far, for a failure message.
func (t *Tab) problemsNote() string {
	ps := t.Problems()
	if len(ps) == 0 {
		return ""
	}
	return "\npage problems so far:\n  " + strings.Join(ps, "\n  ")
}

// Eval evaluates a JavaScript expression and decodes its value into T.
func Eval[T any](tb testing.TB, t *Tab, expr string) T {
	tb.Helper()
	return Run(tb, t, "evaluate "+expr, chromedp.Evaluate[T](expr))
}

// Text returns the textContent of the first element matching the CSS
// selector (the raw text, not the rendered innerText).
func (t *Tab) Text(tb testing.TB, sel string) string {
	tb.Helper()
	return Eval[string](tb, t, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) throw new Error("no element matches " + %q); return e.textContent; })()`, sel, sel))
}

// Count returns how many elements match the CSS selector.
func (t *Tab) Count(tb testing.TB, sel string) int {
	tb.Helper()
	return Eval[int](tb, t, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// Click clicks the first element matching the CSS selector, once it is
// visible.
func (t *Tab) Click(tb testing.TB, sel string) {
	tb.Helper()
	t.Do(tb, "click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// Screenshot writes a PNG of the viewport to dir/name.png and returns its
// path.
func (t *Tab) Screenshot(tb testing.TB, dir, name string) string {
	tb.Helper()
	png := Run(tb, t, "screenshot "+name, chromedp.CaptureScreenshot())
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.Fatalf("browser: write screenshot: %v", err)
	}
	return path
}

// Context returns the tab's chromedp context, for actions the helpers do
// not cover (bound each with context.WithTimeout).
func (t *Tab) Context() context.Context { return t.ctx }

// Fill replaces the value of the input or textarea matching sel by typing
// text into it (key events, as a person would), after emptying it.
func (t *Tab) Fill(tb testing.TB, sel, text string) {
	tb.Helper()
	t.Do(tb, "fill "+sel,
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = ""; e.dispatchEvent(new Event("input", {bubbles: true})); })()`, sel)),
		chromedp.SendKeys(chromedp.CSS(sel), text))
}
