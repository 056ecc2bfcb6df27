package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// TestUIOnPostgres: on a PostgreSQL store any process runs the explorer,
// while another (a gateway's `lossless serve`) uses the store: it lists
// what that process ingested, with its bytes, the context and the DAG, and
// names the store without its password.
func TestUIOnPostgres(t *testing.T) {
	url := pgtest.NewDB(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-pg", 40)
	runCLI(t, "", nil, "import", "--store", url, file).want(t, 0)
	runCLI(t, "", nil, "compact", "--store", url, "--session", "sess-pg", "--budget", "300", "--force").want(t, 0)

	gw := startServe(t, "gateway", "--store", url)
	if err := gw.call("initialize", map[string]any{"config": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}
	live := core.UserText("<i>from the gateway</i>", 1_900_000_000_000)
	if err := gw.call("ingest", core.IngestParams{SessionID: "live-pg", Message: live}, nil); err != nil {
		t.Fatal(err)
	}

	_, page := startUI(t, "--store", url)
	code, body := apiGet(t, page, "/api/sessions")
	if code != http.StatusOK || !strings.Contains(body, `"session":"sess-pg"`) || !strings.Contains(body, `"session":"live-pg"`) {
		t.Fatalf("/api/sessions: %d %s", code, body)
	}
	want, _ := json.Marshal(live)
	if code, body = apiGet(t, page, "/api/message?agent=main&session=live-pg&seq=1"); code != http.StatusOK || body != string(want) {
		t.Fatalf("the gateway's message: %d %s, want %s", code, body, want)
	}
	var ov struct{ Backend, Store string }
	code, body = apiGet(t, page, "/api/overview")
	if err := json.Unmarshal([]byte(body), &ov); err != nil || code != http.StatusOK || ov.Backend != "postgres" || !strings.HasPrefix(ov.Store, "postgres") {
		t.Fatalf("/api/overview: %d %s", code, body)
	}
	var ctxv struct {
		EstimatedTokens int `json:"estimatedTokens"`
		Parts           []struct {
			Part   string `json:"part"`
			Tokens int    `json:"tokens"`
		} `json:"parts"`
	}
	code, body = apiGet(t, page, "/api/context?agent=main&session=sess-pg&budget=2000")
	if err := json.Unmarshal([]byte(body), &ctxv); err != nil || code != http.StatusOK || ctxv.EstimatedTokens == 0 || ctxv.Parts[0].Tokens == 0 {
		t.Fatalf("/api/context: %d %s", code, body)
	}
	var roots struct {
		Total int `json:"total"`
	}
	code, body = apiGet(t, page, "/api/summaries?agent=main&session=sess-pg")
	if err := json.Unmarshal([]byte(body), &roots); err != nil || code != http.StatusOK || roots.Total == 0 {
		t.Fatalf("/api/summaries: %d %s", code, body)
	}
}
