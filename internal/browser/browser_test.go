package browser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// page is a stand-in for the explorer: the view turns ready once a fetch
// answers; "again" re-runs it (loading, then ready); "bad" logs a console
// error, throws and fetches a missing path.
const page = `<!doctype html><html><head><link rel="icon" href="data:,"></head><body>
<main data-test="view" data-view="demo" data-state="loading"></main>
<button id="again">again</button><button id="bad">bad</button>
<script>
const main = document.querySelector("main");
let n = 0;
async function load() {
  main.dataset.state = "loading";
  const r = await fetch("/data");
  main.textContent = (await r.text()) + " " + (++n);
  main.dataset.state = "ready";
}
document.getElementById("again").onclick = load;
document.getElementById("bad").onclick = () => {
  console.error("deliberate", 42);
  fetch("/missing").then(() => setTimeout(() => { document.body.dataset.done = "1"; throw new Error("deliberate throw"); }));
};
load();
</script></body></html>`

func TestTab(t *testing.T) {
	Require(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, page)
		case "/data":
			fmt.Fprint(w, "data")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tab := Start(t, Options{Width: 640, Height: 400})

	tab.Load(t, srv.URL+"/", "demo")
	if got := tab.Text(t, "main"); got != "data 1" {
		t.Fatalf("after Load the view holds %q, want the first fetch's %q", got, "data 1")
	}
	// Act waits for the state to change and come back: without the change
	// counter it would return at once, on the previous "ready".
	tab.ClickTo(t, "#again", "demo")
	if got := tab.Text(t, "main"); got != "data 2" {
		t.Fatalf("after ClickTo the view holds %q, want %q", got, "data 2")
	}
	if ps := tab.Problems(); len(ps) != 0 {
		t.Fatalf("a clean page has problems: %q", ps)
	}
	dir := t.TempDir()
	path := tab.Screenshot(t, dir, "demo")
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Fatalf("screenshot %s: %v, %d bytes", path, err, len(b))
	}

	tab.Click(t, "#bad")
	want := []string{"console.error: deliberate 42", "response 404: " + srv.URL + "/missing", "uncaught exception"}
	// The events reach the tab before the answer to the wait's last poll.
	tab.WaitFor(t, "the throw", `document.body.dataset.done === "1"`)
	for _, w := range want {
		found := false
		for _, p := range tab.Problems() {
			found = found || strings.Contains(p, w)
		}
		if !found {
			t.Errorf("problems lack %q: %q", w, tab.Problems())
		}
	}
}

func TestRequireSkipsOrFails(t *testing.T) {
	t.Setenv(BinaryEnv, "/nonexistent/chromium")
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "/nonexistent/chromium") {
		t.Fatalf("Find with a missing $%s: %v", BinaryEnv, err)
	}
	t.Setenv(RequiredEnv, "")
	var sub *testing.T
	t.Run("skip", func(t *testing.T) { sub = t; Require(t) })
	if !sub.Skipped() {
		t.Fatal("Require without a browser did not skip")
	}
}
