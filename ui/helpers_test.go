package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/ui"
)

// hostile is a stored message whose text is HTML and script, with odd
// spacing and an unknown field: its bytes must come back exactly.
const hostile = `{"role": "user",   "content": "<script>alert('x')</script><img src=x onerror=alert(1)> & \u003cb\u003e", "timestamp": 1700000000500, "x-extra": {"keep": [1, 2]}}`

// fixture is an engine on a synthetic store, the explorer on it, and an
// httptest server.
type fixture struct {
	e   *lossless.Engine
	srv *ui.Server
	ts  *httptest.Server
}

// openEngine opens an engine in a fresh directory (chars4 counts: fast
// and deterministic), closed when the test ends.
func openEngine(t testing.TB) *lossless.Engine {
	t.Helper()
	cfg := config.Default()
	cfg.StoreDir = t.TempDir()
	cfg.Tokenizer = core.CounterChars4
	cfg.FreshTailMessages = 6
	e, err := lossless.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// newFixture stores session s1 (agent main, 80 turns with the hostile
// message at seq 6, compacted by the extractive summarizer), s2 (main, one
// turn) and b-1 (agent b), and serves the explorer on it.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	e := openEngine(t)
	ctx := context.Background()
	var msgs []core.Message
	for i := 0; i < 80; i++ {
		text := fmt.Sprintf("turn %d about the deploy pipeline and routine things %s", i, strings.Repeat("filler words ", 12))
		if i == 10 {
			text = "we saw a zebra near the build server"
		}
		ts := 1_700_000_000_000 + int64(i)*60_000
		if i%2 == 0 {
			msgs = append(msgs, core.UserText(text, ts))
		} else {
			msgs = append(msgs, core.AssistantText(text, ts))
		}
	}
	odd, err := core.ParseMessage([]byte(hostile))
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs[:5], append([]core.Message{odd}, msgs[5:]...)...)
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s1", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s2", Message: core.UserText("another zebra, elsewhere", 1_800_000_000_000)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "b-1", SessionKey: "agent:b:t1", Message: core.UserText("agent b speaks", 1_800_000_000_000)}); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Compact(ctx, core.CompactParams{SessionID: "s1", TokenBudget: 1200, Force: true}); err != nil || !res.Compacted {
		t.Fatalf("fixture compaction: %+v %v", res, err)
	}
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	return serve(t, e)
}

// serve serves the explorer on e.
func serve(t testing.TB, e *lossless.Engine) *fixture {
	t.Helper()
	srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return e, nil }, ui.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return &fixture{e: e, srv: srv, ts: ts}
}

// get requests path with the token header and returns the status and body.
func (f *fixture) get(t testing.TB, path string, params url.Values) (int, []byte) {
	t.Helper()
	u := f.ts.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(ui.TokenHeader, f.srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// getJSON requests path, wants status 200 and decodes the answer into v.
func (f *fixture) getJSON(t testing.TB, path string, params url.Values, v any) {
	t.Helper()
	code, body := f.get(t, path, params)
	if code != http.StatusOK {
		t.Fatalf("GET %s?%s: %d %s", path, params.Encode(), code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// wantError requests path and wants status code with a JSON error.
func (f *fixture) wantError(t testing.TB, path string, params url.Values, code int) string {
	t.Helper()
	got, body := f.get(t, path, params)
	var e struct {
		Error string `json:"error"`
	}
	if got != code || json.Unmarshal(body, &e) != nil || e.Error == "" {
		t.Fatalf("GET %s?%s: %d %s, want %d with {\"error\": …}", path, params.Encode(), got, body, code)
	}
	return e.Error
}

// q builds query parameters from pairs.
func q(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}
