package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/ui"
)

// benchSizes are the store sizes BenchmarkUI runs; 1M only with
// LOSSLESS_BENCH_1M=1.
var benchSizes = []struct {
	name string
	n    int
}{{"100K", 100_000}, {"1M", 1_000_000}}

// BenchmarkUI measures each view's API request through the explorer's
// HTTP handler (token, Host check, JSON) on the benchmark store (see
// bench_store_test.go): the session list's first and last page, the
// context of a long session for a budget and a prompt, its DAG's roots and
// a root's children, a raw message, grep in the session and in the agent,
// recall, health and the overview. Target (#18): under 300 ms each at 1M
// messages; ms/op is the figure to read.
//
//	go test -run '^$' -bench BenchmarkUI ./ui/                        # 100K
//	LOSSLESS_BENCH_1M=1 go test -run '^$' -bench 'BenchmarkUI/1M' -timeout 2h ./ui/
func BenchmarkUI(b *testing.B) {
	b.Cleanup(removeBenchStores)
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			if sz.n >= 1_000_000 && os.Getenv("LOSSLESS_BENCH_1M") != "1" {
				b.Skip("set LOSSLESS_BENCH_1M=1 to build the 1M-message store")
			}
			dir := benchStore(b, sz.n)
			ctx := context.Background()
			e, err := lossless.Open(ctx, benchConfig(dir))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			// The store was closed with its index complete; an open that
			// still rebuilds would compete with the timed requests.
			if err := e.WaitRecallIndex(ctx); err != nil {
				b.Fatal(err)
			}
			srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return e, nil }, ui.Options{})
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range benchRequests(b, srv, sz.n) {
				b.Run(r.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						benchGet(b, srv, r.path)
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
				})
			}
		})
	}
}

// benchRequest is one timed API request.
type benchRequest struct{ name, path string }

// benchRequests returns the requests of the views, with the ids they need
// read from the API itself (a root summary, the session count).
func benchRequests(b *testing.B, srv *ui.Server, n int) []benchRequest {
	b.Helper()
	long := benchLayout(n)[0]
	sess := []string{"agent", long.Agent, "session", long.ID}

	var list struct {
		Total int `json:"total"`
	}
	benchDecode(b, benchGet(b, srv, "/api/sessions?limit=1"), &list)
	var roots struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	benchDecode(b, benchGet(b, srv, "/api/summaries?"+q(sess...).Encode()), &roots)
	if len(roots.Items) == 0 || list.Total < len(benchLayout(n)) {
		b.Fatalf("the store lists %d sessions (want %d) and %s has %d root summaries", list.Total, len(benchLayout(n)), long.ID, len(roots.Items))
	}
	prompt, term := benchPrompt(b)
	var grep struct {
		Items   []any `json:"items"`
		Scanned int   `json:"scanned"`
	}
	benchDecode(b, benchGet(b, srv, "/api/grep?"+q(append(sess, "q", term)...).Encode()), &grep)
	b.Logf("%d sessions; prompt %.60q…; grep %q in %s: %d hits, %d messages and summaries read", list.Total, prompt, term, long.ID, len(grep.Items), grep.Scanned)
	return []benchRequest{
		{"overview", "/api/overview"},
		{"sessions/first", "/api/sessions?" + q("offset", "0", "limit", "50").Encode()},
		{"sessions/last", "/api/sessions?" + q("offset", strconv.Itoa(max(0, list.Total-50)), "limit", "50").Encode()},
		{"context", "/api/context?" + q(append(sess, "budget", "128000", "prompt", prompt)...).Encode()},
		{"summaries/roots", "/api/summaries?" + q(sess...).Encode()},
		{"summary/children", "/api/summary?" + q(append(sess, "id", roots.Items[0].ID)...).Encode()},
		{"message", "/api/message?" + q(append(sess, "seq", strconv.Itoa(long.N/2))...).Encode()},
		{"grep/session", "/api/grep?" + q(append(sess, "q", term)...).Encode()},
		{"grep/agent", "/api/grep?" + q("agent", long.Agent, "q", term).Encode()},
		{"recall", "/api/recall?" + q(append(sess, "prompt", prompt, "k", "10")...).Encode()},
		{"health", "/api/health"},
	}
}

// benchPrompt returns a prompt (a user turn of the long session's stream,
// cut to 300 bytes) and an identifier in it for grep.
func benchPrompt(b *testing.B) (prompt, term string) {
	g := synth.New(1)
	for i := 0; i < 10_000; i++ {
		m, err := core.ParseMessage(g.Next())
		if err != nil || m.Role() != core.RoleUser {
			continue
		}
		text := m.Text()
		if len(text) > 300 {
			text = text[:300]
		}
		if ids := ident.Values(text); len(ids) > 0 {
			return text, ids[0]
		}
	}
	b.Fatal("no user message with an identifier in the synthetic stream")
	return "", ""
}

// benchGet runs one GET through the handler as the page would send it (the
// token header, a loopback Host) and returns the body; anything but 200
// fails the benchmark.
func benchGet(b *testing.B, srv *ui.Server, path string) []byte {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1"
	req.Header.Set(ui.TokenHeader, srv.Token())
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", path, w.Code, w.Body.String())
	}
	return w.Body.Bytes()
}

func benchDecode(b *testing.B, body []byte, v any) {
	if err := json.Unmarshal(body, v); err != nil {
		b.Fatalf("decode %.200s: %v", body, err)
	}
}
