package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// TestDoctorCountsRefusedSummaries: summaries the extractive summarizer
// wrote because the model answered summary requests with a canned reply
// are counted in the store, and doctor and stats (text and --json), in
// another process, show the count; doctor warns about it.
func TestDoctorCountsRefusedSummaries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	cfg := config.Default()
	cfg.StoreDir = storeDir
	cfg.FreshTailMessages = 4
	cfg.LeafChunkTokens = 400
	cfg.Summarizer = []byte(`{"kind":"host","maxCallsPerHour":-1,"maxTokensPerHour":-1}`)
	ctx := context.Background()
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []core.Message
	for i := 0; i < 40; i++ {
		msgs = append(msgs, core.UserText(fmt.Sprintf("turn %d: read /srv/app/file-%d.go and fix build MARK-%02d-9d72 %s", i, i, i,
			strings.Repeat("then run the tests again ", 8)), int64(1_700_000_000_000+i)))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "sess-refused", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	canned := &core.RuntimeContext{LLMComplete: func(context.Context, core.LLMRequest) (core.LLMResponse, error) {
		return core.LLMResponse{Text: "Noted. That should not change the schedule much."}, nil
	}}
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "sess-refused", TokenBudget: 2000, Force: true, RuntimeContext: canned})
	if err != nil || !res.Compacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	var d struct {
		NewSummaryIDs     []string `json:"newSummaryIds"`
		SummarizerRefused int      `json:"summarizerRefused"`
	}
	// After five refused requests in a row the breaker opens: the later
	// summaries are the extractive summarizer's without a model call, not
	// refused ones.
	if err := json.Unmarshal(res.Result.Details, &d); err != nil || d.SummarizerRefused < 2 || d.SummarizerRefused > len(d.NewSummaryIDs) {
		t.Fatalf("details %s: %v", res.Result.Details, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	n, all := d.SummarizerRefused, len(d.NewSummaryIDs)

	r := runCLI(t, "", nil, "doctor", "--store", storeDir, "--json", "--config", filepath.Join(dir, "absent.json"))
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if rep.Store.RefusedSummaries != int64(n) || rep.Store.Summaries != int64(all) {
		t.Fatalf("doctor --json: store %+v, want %d refused summaries", rep.Store, n)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, fmt.Sprintf("%d summaries were written by the extractive summarizer because the model's answer was no summary", n))
	}
	if !found {
		t.Fatalf("doctor warnings %q", rep.Warnings)
	}
	runCLI(t, "", nil, "doctor", "--store", storeDir).want(t, 0,
		fmt.Sprintf("summaries  %d stored, %d refused (the model's answer was no summary: the extractive summarizer wrote it)", all, n),
		"warning    "+fmt.Sprint(n)+" summaries were written by the extractive summarizer")
	runCLI(t, "", nil, "stats", "--store", storeDir, "--json").want(t, 0, fmt.Sprintf(`"refusedSummaries": %d`, n))
	runCLI(t, "", nil, "stats", "--store", storeDir).want(t, 0, fmt.Sprintf("%d summaries were written by the extractive summarizer", n))
}
