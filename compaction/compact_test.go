package compaction_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// fakeSummarizer is deterministic: it records each request and answers
// with a short "Done" section naming the input's size and first line.
type fakeSummarizer struct {
	mu    sync.Mutex
	reqs  []core.SummarizeRequest
	fail  int // fail this many calls first
	hook  func(req core.SummarizeRequest)
	reply func(req core.SummarizeRequest) string
}

func (f *fakeSummarizer) Name() string { return "fake" }

func (f *fakeSummarizer) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	fail := f.fail > 0
	if fail {
		f.fail--
	}
	f.mu.Unlock()
	if f.hook != nil {
		f.hook(req)
	}
	if fail {
		return "", fmt.Errorf("fake: %w", core.ErrSummarizerFailed)
	}
	if f.reply != nil {
		return f.reply(req), nil
	}
	first := strings.SplitN(req.Text, "\n", 2)[0]
	if len(first) > 60 {
		first = first[:60]
	}
	return fmt.Sprintf("## Done\n- summarised %d chars starting %q", len(req.Text), first), nil
}

func (f *fakeSummarizer) requests() []core.SummarizeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]core.SummarizeRequest(nil), f.reqs...)
}

// fixture copies testdata/compaction/<name> into a temporary directory.
func fixture(t *testing.T, name string) string {
	t.Helper()
	return copyFile(t, filepath.Join(testutil.RepoRoot(), "testdata", "compaction", name), t.TempDir())
}

func testOptions(s core.Summarizer) compaction.Options {
	return compaction.Options{Counter: core.Chars4{}, Summarizer: s, KeepRecentTokens: 400,
		NewID: func() string { return "c0ffee01" }}
}

func details(t *testing.T, res core.CompactResult) compaction.Details {
	t.Helper()
	if res.Result == nil {
		t.Fatalf("no result: %+v", res)
	}
	var d compaction.Details
	if err := json.Unmarshal(res.Result.Details, &d); err != nil {
		t.Fatalf("details: %v (%s)", err, res.Result.Details)
	}
	return d
}

func lastLine(t *testing.T, path string) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	var m map[string]json.RawMessage
	if err := json.Unmarshal(lines[len(lines)-1], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEffectiveReserve(t *testing.T) {
	for _, c := range []struct{ window, reserve, want int }{
		{200000, 0, 20000},      // default 16384 raised to 20000
		{200000, 16384, 20000},  // raised
		{200000, 30000, 30000},  // above the floor: kept
		{64000, 0, 16000},       // at most 25% of the window
		{100000, 50000, 25000},  // lowered to 25%
		{1000000, 40000, 40000}, // large windows keep the configured reserve
	} {
		if got := compaction.EffectiveReserve(c.window, c.reserve); got != c.want {
			t.Errorf("EffectiveReserve(%d, %d) = %d, want %d", c.window, c.reserve, got, c.want)
		}
	}
}

func TestWindowSources(t *testing.T) {
	budget := 50000
	o := compaction.Options{ContextWindow: 90000}
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{"tokenBudget": json.RawMessage("70000")}}
	rs := &core.RuntimeSettings{Limits: &core.RuntimeLimits{PromptTokenBudget: &budget}}
	for _, c := range []struct {
		name string
		p    core.CompactParams
		want int
	}{
		{"tokenBudget", core.CompactParams{TokenBudget: 60000, RuntimeContext: rc, RuntimeSettings: rs}, 60000},
		{"runtimeContext", core.CompactParams{RuntimeContext: rc, RuntimeSettings: rs}, 70000},
		{"runtimeSettings", core.CompactParams{RuntimeSettings: rs}, 50000},
		{"options", core.CompactParams{}, 90000},
	} {
		if got := o.Window(c.p); got != c.want {
			t.Errorf("%s: window %d, want %d", c.name, got, c.want)
		}
	}
	if got := (compaction.Options{}).Window(core.CompactParams{}); got != compaction.DefaultContextWindow {
		t.Errorf("default window %d", got)
	}
}

func TestFindCut(t *testing.T) {
	for _, c := range []struct {
		name   string
		tokens []int
		valid  []bool
		keep   int
		want   int
	}{
		{"all fits", []int{10, 10, 10}, []bool{true, true, true}, 100, 0},
		{"exact", []int{10, 10, 10, 10}, []bool{true, true, true, true}, 20, 2},
		{"forward past tool results", []int{10, 10, 10, 10, 10}, []bool{true, true, false, false, true}, 30, 4},
		{"backward when no valid point follows", []int{10, 10, 10, 10}, []bool{true, true, false, false}, 15, 1},
		{"no valid point", []int{10, 10, 10}, []bool{false, false, false}, 10, 0},
		{"first entry only valid", []int{10, 10, 10}, []bool{true, false, false}, 10, 0},
	} {
		if got := compaction.FindCut(c.tokens, c.valid, c.keep); got != c.want {
			t.Errorf("%s: cut %d, want %d", c.name, got, c.want)
		}
	}
}

func TestTrigger(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "v4-session.jsonl")
	orig, _ := os.ReadFile(path)
	f := &fakeSummarizer{}
	opts := testOptions(f)
	tr, _ := core.ReadTranscript(path)
	total := core.CountMessages(core.Chars4{}, tr.Window().Messages())

	// A window whose threshold is above the context: nothing happens.
	big := 4 * (total + 1000)
	res, err := compaction.Compact(ctx, path, core.CompactParams{TokenBudget: big}, opts)
	if err != nil || !res.OK || res.Compacted || res.Reason != compaction.ReasonBelowThreshold {
		t.Fatalf("below threshold: %+v %v", res, err)
	}
	if res.Result.TokensBefore != total {
		t.Errorf("tokensBefore %d, want %d", res.Result.TokensBefore, total)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) || len(f.requests()) != 0 {
		t.Fatal("a compaction below the threshold wrote or summarised")
	}
	// The host's currentTokenCount above the threshold triggers it.
	res, err = compaction.Compact(ctx, path, core.CompactParams{TokenBudget: big, CurrentTokenCount: big}, opts)
	if err != nil || !res.Compacted {
		t.Fatalf("currentTokenCount over the threshold: %+v %v", res, err)
	}
	if d := details(t, res); d.Trigger != "threshold" || d.ContextTokens != big {
		t.Errorf("trigger %q contextTokens %d", d.Trigger, d.ContextTokens)
	}

	// A window whose threshold is below the context: it compacts.
	path2 := fixture(t, "v4-session.jsonl")
	small := total // threshold = total - 25% < total
	res, err = compaction.Compact(ctx, path2, core.CompactParams{TokenBudget: small}, opts)
	if err != nil || !res.OK || !res.Compacted {
		t.Fatalf("over threshold: %+v %v", res, err)
	}
	d := details(t, res)
	if d.Threshold != small-small/4 || d.ReserveTokens != small/4 {
		t.Errorf("threshold %d reserve %d for window %d", d.Threshold, d.ReserveTokens, small)
	}
	if res.Result.TokensAfter > d.Threshold || !d.FitsTarget {
		t.Errorf("tokensAfter %d over threshold %d", res.Result.TokensAfter, d.Threshold)
	}

	// force compacts even below the threshold.
	path3 := fixture(t, "v4-session.jsonl")
	res, err = compaction.Compact(ctx, path3, core.CompactParams{TokenBudget: big, Force: true}, opts)
	if err != nil || !res.Compacted || details(t, res).Trigger != "force" {
		t.Fatalf("force: %+v %v", res, err)
	}
}

func TestCompactWritesEntry(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "v4-session.jsonl")
	orig, _ := os.ReadFile(path)
	before, _ := core.ReadTranscript(path)
	f := &fakeSummarizer{}
	res, err := compaction.Compact(ctx, path, core.CompactParams{SessionID: "s1", Force: true}, testOptions(f))
	if err != nil || !res.OK || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	d := details(t, res)
	now, _ := os.ReadFile(path)
	if !bytes.HasPrefix(now, orig) || bytes.Count(now[len(orig):], []byte("\n")) != 1 {
		t.Fatal("earlier lines changed or more than one line appended")
	}
	line := lastLine(t, path)
	for _, k := range []string{"type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore", "tokensAfter", "details"} {
		if _, ok := line[k]; !ok {
			t.Errorf("compaction entry lacks %q", k)
		}
	}
	if string(line["type"]) != `"compaction"` || string(line["id"]) != `"c0ffee01"` {
		t.Errorf("type %s id %s", line["type"], line["id"])
	}
	lastID := before.Entries[len(before.Entries)-1].ID
	if string(line["parentId"]) != `"`+lastID+`"` {
		t.Errorf("parentId %s, want %q", line["parentId"], lastID)
	}
	if _, ok := line["firstKeptEntryIndex"]; ok {
		t.Error("a file with ids got firstKeptEntryIndex")
	}
	after, _ := core.ReadTranscript(path)
	w := after.Window()
	if w.Compaction == nil || w.Compaction.ID != "c0ffee01" || w.Entries[0].ID != res.Result.FirstKeptEntryID {
		t.Fatalf("window: %+v first %s", w.Compaction, res.Result.FirstKeptEntryID)
	}
	if w.Compaction.TokensBefore != res.Result.TokensBefore || *w.Compaction.TokensAfter != res.Result.TokensAfter {
		t.Error("entry figures differ from the result")
	}
	if got := core.CountMessages(core.Chars4{}, w.Messages()); got != res.Result.TokensAfter {
		t.Errorf("window has %d tokens, result says %d", got, res.Result.TokensAfter)
	}
	if res.Result.TokensAfter >= res.Result.TokensBefore {
		t.Error("compacted without freeing tokens")
	}
	// Kept entries are byte-identical, the window never starts on a toolResult.
	for i, e := range w.Entries {
		orig := before.Entries[len(before.Entries)-len(w.Entries)+i]
		if !bytes.Equal(e.Raw, orig.Raw) {
			t.Fatalf("kept entry %s changed", e.ID)
		}
	}
	if m, _ := w.Entries[0].ModelMessage(); m.Role() == core.RoleToolResult {
		t.Fatal("window starts with a toolResult")
	}
	if d.KeptEntries != len(w.Entries) || d.SummarisedEntries+d.KeptEntries != len(before.Entries) {
		t.Errorf("entries: summarised %d kept %d of %d", d.SummarisedEntries, d.KeptEntries, len(before.Entries))
	}
	if res.Result.SessionID != "s1" || res.Result.SessionFile != path {
		t.Errorf("result session %q %q", res.Result.SessionID, res.Result.SessionFile)
	}
}

func TestCompactOldFormat(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "old-format.jsonl")
	before, _ := core.ReadTranscript(path)
	res, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, testOptions(&fakeSummarizer{}))
	if err != nil || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	line := lastLine(t, path)
	if string(line["parentId"]) != "null" {
		t.Errorf("parentId %s in a file without ids, want null", line["parentId"])
	}
	if _, ok := line["firstKeptEntryId"]; ok {
		t.Error("firstKeptEntryId written in a file without ids")
	}
	var idx int
	if err := json.Unmarshal(line["firstKeptEntryIndex"], &idx); err != nil {
		t.Fatalf("firstKeptEntryIndex: %v", err)
	}
	if res.Result.FirstKeptEntryID != fmt.Sprintf("#%d", idx) {
		t.Errorf("result key %q, index %d", res.Result.FirstKeptEntryID, idx)
	}
	after, _ := core.ReadTranscript(path)
	w := after.Window()
	if len(w.Entries) == 0 || w.Entries[0].Index != idx || w.Compaction.Summary != res.Result.Summary {
		t.Fatalf("re-read window starts at %+v", w.Entries)
	}
	for _, e := range w.Entries {
		if !bytes.Equal(e.Raw, before.Entries[e.Index-1].Raw) {
			t.Fatalf("kept entry %d changed", e.Index)
		}
	}
	if got := core.CountMessages(core.Chars4{}, w.Messages()); got != res.Result.TokensAfter {
		t.Errorf("window %d tokens, result %d", got, res.Result.TokensAfter)
	}
}

func TestSummaryContent(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "v4-session.jsonl")
	f := &fakeSummarizer{}
	opts := testOptions(f)
	opts.KeepRecentTokens = 150 // summarise nearly everything
	res, err := compaction.Compact(ctx, path, core.CompactParams{Force: true,
		CustomInstructions: "focus on the staging outage"}, opts)
	if err != nil || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	s := res.Result.Summary
	for _, h := range []string{"## Goal", "## Constraints & Preferences", "## Progress", "### Done",
		"### In Progress", "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"} {
		if !strings.Contains(s, h+"\n") {
			t.Errorf("summary lacks section %q", h)
		}
	}
	// Opaque identifiers of the summarised span, kept exactly.
	for _, id := range []string{"0b7e4f3c-5d2a-4e8f-9c1b-2a3d4e5f6a7b", "10.0.3.7:8080",
		"https://wiki.example.com/checkout/runbook", "a1b2c3d4e5f6", "services/checkout/handler.go"} {
		if !strings.Contains(s, id) {
			t.Errorf("summary lost identifier %q", id)
		}
	}
	// Files read and modified, from the tool calls.
	if !strings.Contains(s, "<modified-files>\nservices/checkout/handler.go\nservices/checkout/handler_test.go\n</modified-files>") {
		t.Errorf("modified files missing:\n%s", s)
	}
	d := details(t, res)
	if strings.Join(d.ModifiedFiles, ",") != "services/checkout/handler.go,services/checkout/handler_test.go" {
		t.Errorf("details modifiedFiles %v", d.ModifiedFiles)
	}
	if d.IdentifierRetention.Total == 0 || d.IdentifierRetention.Ratio != 1 {
		t.Errorf("retention %+v", d.IdentifierRetention)
	}
	// Constraints the user stated, the error that blocked, the focus text.
	for _, want := range []string{"Always run go test before committing", "Never touch the vendored code",
		"bash failed: connection refused", "focus on the staging outage"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	for _, r := range f.requests() {
		if r.Focus != "focus on the staging outage" || r.Kind != core.SummaryCompaction {
			t.Errorf("request focus %q kind %q", r.Focus, r.Kind)
		}
	}
}

func TestSummaryCap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	// Many distinct identifiers and a verbose summarizer: the cap must hold.
	var vals []any
	vals = append(vals, map[string]any{"type": "session", "version": 4, "id": "h", "timestamp": "2026-01-01T00:00:00.000Z"})
	parent := ""
	for i := 0; i < 400; i++ {
		id := fmt.Sprintf("m%04d", i)
		text := fmt.Sprintf("see /srv/app/module%03d/file%03d.go and https://example.com/item/%d", i, i, i)
		var m core.Message
		if i%2 == 0 {
			m = core.UserText(text, int64(i))
		} else {
			m = core.AssistantText(text, int64(i))
		}
		e := map[string]any{"type": "message", "id": id, "timestamp": "2026-01-01T00:00:00.000Z", "message": json.RawMessage(m.Raw())}
		if parent != "" {
			e["parentId"] = parent
		}
		parent = id
		vals = append(vals, e)
	}
	if err := core.WriteTranscriptFile(path, vals...); err != nil {
		t.Fatal(err)
	}
	f := &fakeSummarizer{reply: func(req core.SummarizeRequest) string {
		return "## Key Decisions\n" + strings.Repeat("- a decision that is long enough to matter\n", 600)
	}}
	opts := testOptions(f)
	opts.KeepRecentTokens = 200
	res, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, opts)
	if err != nil || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	if n := len(res.Result.Summary); n > compaction.DefaultMaxSummaryChars || n < compaction.DefaultMaxSummaryChars/2 {
		t.Errorf("summary has %d chars, cap %d", n, compaction.DefaultMaxSummaryChars)
	}
	if !strings.Contains(res.Result.Summary, "## Goal") || !strings.Contains(res.Result.Summary, "## Next Steps") {
		t.Error("the cap removed fixed sections")
	}
	d := details(t, res)
	if d.IdentifierRetention.Ratio <= 0.3 || d.IdentifierRetention.Ratio >= 1 {
		t.Errorf("retention %+v: expected the cap to keep some but not all identifiers", d.IdentifierRetention)
	}
}

func TestSplitTurn(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "v4-session.jsonl")
	tr, _ := core.ReadTranscript(path)
	f := &fakeSummarizer{}
	opts := testOptions(f)
	// Keep only the last assistant message: the cut falls inside the third
	// turn ("now run the tests ..."), after its tool calls.
	last, _ := tr.Entries[len(tr.Entries)-1].ModelMessage()
	opts.KeepRecentTokens = core.CountMessage(core.Chars4{}, last)
	res, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, opts)
	if err != nil || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	d := details(t, res)
	if !d.SplitTurn || d.KeptEntries != 1 {
		t.Fatalf("splitTurn %v kept %d", d.SplitTurn, d.KeptEntries)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d summarizer calls, want 2 (history, turn prefix)", len(reqs))
	}
	hist, turn := reqs[0], reqs[1]
	if !strings.Contains(hist.Text, "patch the handler") || strings.Contains(hist.Text, "now run the tests") {
		t.Errorf("history request holds the wrong messages:\n%s", hist.Text)
	}
	if !strings.HasPrefix(turn.Text, "[User]: now run the tests") || strings.Contains(turn.Text, "patch the handler") {
		t.Errorf("turn prefix request holds the wrong messages:\n%s", turn.Text)
	}
	if turn.TargetTokens != compaction.DefaultTurnPrefixTokens || turn.PreviousSummary != "" {
		t.Errorf("turn request target %d prev %q", turn.TargetTokens, turn.PreviousSummary)
	}
	if !strings.Contains(res.Result.Summary, "## Turn Context (split turn)\n- Turn request: now run the tests") {
		t.Errorf("no turn context section:\n%s", res.Result.Summary)
	}
	// No split when the cut lands on a user message.
	path2 := fixture(t, "v4-session.jsonl")
	f2 := &fakeSummarizer{}
	opts2 := testOptions(f2)
	opts2.KeepRecentTokens = 0
	tr2, _ := core.ReadTranscript(path2)
	for i := len(tr2.Entries) - 1; i >= 0; i-- {
		m, _ := tr2.Entries[i].ModelMessage()
		opts2.KeepRecentTokens += core.CountMessage(core.Chars4{}, m)
		if m.Role() == core.RoleUser {
			break
		}
	}
	res, err = compaction.Compact(ctx, path2, core.CompactParams{Force: true}, opts2)
	if err != nil || !res.Compacted || details(t, res).SplitTurn || len(f2.requests()) != 1 {
		t.Fatalf("cut on a user message: %+v %v calls %d", res, err, len(f2.requests()))
	}
}

func TestUpdatesPreviousSummary(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "v4-session.jsonl")
	f := &fakeSummarizer{}
	opts := testOptions(f)
	opts.NewID = core.NewEntryID
	res1, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, opts)
	if err != nil || !res1.Compacted {
		t.Fatalf("%+v %v", res1, err)
	}
	n1 := len(f.requests())
	// A new turn arrives, then the second compaction.
	tr, _ := core.ReadTranscript(path)
	parent := tr.Entries[len(tr.Entries)-1].ID
	var lines []any
	for i, text := range []string{"deploy it to https://deploy.example.org/checkout please",
		strings.Repeat("Deploying now; watching the rollout dashboards carefully. ", 20)} {
		m := core.UserText(text, 1)
		if i == 1 {
			m = core.AssistantText(text, 2)
		}
		id := fmt.Sprintf("n%07d", i)
		lines = append(lines, map[string]any{"type": "message", "id": id, "parentId": parent,
			"timestamp": "2026-01-05T11:00:00.000Z", "message": json.RawMessage(m.Raw())})
		parent = id
	}
	if err := core.AppendTranscript(path, lines...); err != nil {
		t.Fatal(err)
	}
	res2, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, opts)
	if err != nil || !res2.Compacted {
		t.Fatalf("%+v %v", res2, err)
	}
	reqs := f.requests()[n1:]
	if len(reqs) == 0 || reqs[0].PreviousSummary != res1.Result.Summary {
		t.Fatal("the second compaction did not pass the previous summary")
	}
	if !details(t, res2).UpdatedPrevious {
		t.Error("details.updatedPrevious is false")
	}
	// Only messages after the previous cut are re-summarised.
	for _, r := range reqs {
		if strings.Contains(r.Text, "Goal: fix the failing checkout flow") {
			t.Error("the second compaction re-summarised messages the first one covered")
		}
	}
	// The previous summary's content is carried into the new one.
	for _, want := range []string{"Always run go test before committing", "0b7e4f3c-5d2a-4e8f-9c1b-2a3d4e5f6a7b",
		"services/checkout/handler_test.go"} {
		if !strings.Contains(res2.Result.Summary, want) {
			t.Errorf("updated summary lost %q", want)
		}
	}
	after, _ := core.ReadTranscript(path)
	if w := after.Window(); w.Compaction.Summary != res2.Result.Summary {
		t.Error("window does not use the second summary")
	}
}

func TestStagedChunks(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "v4-session.jsonl")
	f := &fakeSummarizer{}
	opts := testOptions(f)
	opts.KeepRecentTokens = 150
	opts.SummarizerWindowTokens = 500
	opts.ToolResultMaxChars = -1
	res, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, opts)
	if err != nil || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	d := details(t, res)
	reqs := f.requests()
	if d.Chunks < 2 || len(reqs) < d.Chunks+1 {
		t.Fatalf("chunks %d, calls %d: want staged summaries and a merge", d.Chunks, len(reqs))
	}
	for i, r := range reqs[:d.Chunks] {
		if n := (core.Chars4{}).CountText(r.Text); n > opts.SummarizerWindowTokens {
			t.Errorf("request %d has %d tokens, window %d", i, n, opts.SummarizerWindowTokens)
		}
		// A tool call and its result always travel together.
		if strings.Contains(r.Text, "[Assistant tool call]: edit") != strings.Contains(r.Text, "[Tool result edit]") {
			t.Errorf("request %d parts the edit call from its result", i)
		}
		if strings.Contains(r.Text, "[Assistant tool call]: write") != strings.Contains(r.Text, "[Tool result write]") {
			t.Errorf("request %d parts the write call from its result", i)
		}
	}
	merge := reqs[d.Chunks] // the history's chunks, its merge, then the turn prefix
	if merge.PreviousSummary != "" || !strings.Contains(merge.Text, "summarised") {
		t.Errorf("request after the chunks is not the merge: %+v", merge)
	}
	for _, r := range reqs[:d.Chunks] {
		out, _ := (&fakeSummarizer{}).Summarize(ctx, r)
		if !strings.Contains(merge.Text, out) {
			t.Errorf("the merge request lacks partial summary %q", out)
		}
	}
}

func TestOversizeMarker(t *testing.T) {
	tc := core.Chars4{}
	huge := core.ToolResult("call_9", "read", strings.Repeat("x", 4000), false, 1)
	msgs := []core.Message{core.UserText("read it", 1), core.AssistantToolCall("call_9", "read", map[string]string{"path": "big.log"}, 1), huge}
	chunks, markers := compaction.Chunk(tc, msgs, 1000, -1)
	if markers != 1 || len(chunks) != 1 {
		t.Fatalf("markers %d chunks %d", markers, len(chunks))
	}
	if !strings.Contains(chunks[0], "[toolResult read message omitted: ") || strings.Contains(chunks[0], "xxxx") {
		t.Errorf("huge message not replaced by a marker:\n%s", chunks[0])
	}
	if !regexp.MustCompile(`(?m)^\[toolResult read message omitted: \d+ tokens, \d+ bytes\]$`).MatchString(chunks[0]) {
		t.Errorf("marker is not one line:\n%s", chunks[0])
	}
}

func TestNoGain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	// A tiny history before a large recent message: any summary costs more
	// than the two words it replaces.
	u := core.UserText("hi", 1)
	a := core.AssistantText(strings.Repeat("long answer ", 400), 2)
	if err := core.WriteTranscriptFile(path,
		map[string]any{"type": "session", "version": 4, "id": "h", "timestamp": "2026-01-01T00:00:00.000Z"},
		map[string]any{"type": "message", "id": "a1", "timestamp": "2026-01-01T00:00:00.000Z", "message": json.RawMessage(u.Raw())},
		map[string]any{"type": "message", "id": "a2", "parentId": "a1", "timestamp": "2026-01-01T00:00:00.000Z", "message": json.RawMessage(a.Raw())},
	); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(path)
	opts := testOptions(&fakeSummarizer{})
	opts.KeepRecentTokens = 100
	res, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, opts)
	if err != nil || res.OK || res.Compacted || res.Reason != compaction.ReasonNoGain {
		t.Fatalf("%+v %v", res, err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("a compaction without gain wrote the transcript")
	}
	// Nothing older than the kept tokens: nothing to compact.
	opts.KeepRecentTokens = 100000
	res, err = compaction.Compact(ctx, path, core.CompactParams{Force: true}, opts)
	if err != nil || !res.OK || res.Compacted || res.Reason != compaction.ReasonNothing {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestEscalation(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "v4-session.jsonl")
	f := &fakeSummarizer{fail: 2} // normal and aggressive fail: truncation
	res, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, testOptions(f))
	if err != nil || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	reqs := f.requests()
	if len(reqs) < 2 || reqs[0].Aggressive || !reqs[1].Aggressive {
		t.Fatalf("requests: %d, aggressive %v", len(reqs), reqs)
	}
	if d := details(t, res); d.Escalations != 2 {
		t.Errorf("escalations %d", d.Escalations)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := compaction.Compact(ctx, "", core.CompactParams{Force: true}, testOptions(&fakeSummarizer{})); !errors.Is(err, compaction.ErrNoSessionFile) {
		t.Errorf("empty session file: %v", err)
	}
	if _, err := compaction.Compact(ctx, filepath.Join(t.TempDir(), "missing.jsonl"), core.CompactParams{Force: true}, testOptions(&fakeSummarizer{})); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// The transcript grows while the summary is made: nothing is written.
	path := fixture(t, "v4-session.jsonl")
	f := &fakeSummarizer{hook: func(core.SummarizeRequest) {
		_ = core.AppendTranscript(path, map[string]any{"type": "label", "id": "zz", "timestamp": "x"})
	}}
	mid, _ := os.ReadFile(path)
	_, err := compaction.Compact(ctx, path, core.CompactParams{Force: true}, testOptions(f))
	if !errors.Is(err, compaction.ErrTranscriptChanged) {
		t.Fatalf("concurrent append: %v", err)
	}
	tr, _ := core.ReadTranscript(path)
	for _, e := range tr.Entries {
		if e.Type == core.EntryCompaction {
			t.Fatal("a compaction was written over a changed transcript")
		}
	}
	_ = mid
	// Cancellation during summarisation: the error wraps context.Canceled.
	path2 := fixture(t, "v4-session.jsonl")
	orig, _ := os.ReadFile(path2)
	cctx, cancel := context.WithCancel(ctx)
	f2 := &fakeSummarizer{hook: func(core.SummarizeRequest) { cancel() }}
	_, err = compaction.Compact(cctx, path2, core.CompactParams{Force: true}, testOptions(f2))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
	if now, _ := os.ReadFile(path2); !bytes.Equal(now, orig) {
		t.Fatal("a cancelled compaction wrote the transcript")
	}
}

func TestConcurrentCompactions(t *testing.T) {
	ctx := context.Background()
	path := fixture(t, "v4-session.jsonl")
	var wg sync.WaitGroup
	results := make([]core.CompactResult, 4)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			opts := testOptions(&fakeSummarizer{})
			opts.NewID = core.NewEntryID
			results[i], _ = compaction.Compact(ctx, path, core.CompactParams{Force: true}, opts)
		}(i)
	}
	wg.Wait()
	tr, err := core.ReadTranscript(path)
	if err != nil || len(tr.Malformed) != 0 {
		t.Fatalf("%v %v", err, tr.Malformed)
	}
	w := tr.Window()
	if w.Compaction == nil {
		t.Fatal("no compaction")
	}
	// Every compaction entry chains onto the previous one: one branch.
	if got := len(tr.ActiveBranch()); got != len(tr.Entries) {
		t.Errorf("active branch %d of %d entries: compactions forked the tree", got, len(tr.Entries))
	}
}

// A transcript whose last line is torn (a writer died mid-line) still
// compacts: the entry goes on a line of its own after it.
func TestTornLastLine(t *testing.T) {
	path := fixture(t, "v4-session.jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"message","id":"torn","mess`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	orig, _ := os.ReadFile(path)
	res, err := compaction.Compact(context.Background(), path, core.CompactParams{Force: true}, testOptions(&fakeSummarizer{}))
	if err != nil || !res.Compacted {
		t.Fatalf("%+v %v", res, err)
	}
	now, _ := os.ReadFile(path)
	if !bytes.HasPrefix(now, orig) {
		t.Fatal("earlier bytes changed")
	}
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := tr.Window(); w.Compaction == nil || w.Compaction.Summary != res.Result.Summary || len(tr.Malformed) != 1 {
		t.Fatalf("window %+v malformed %v", w.Compaction, tr.Malformed)
	}
}
