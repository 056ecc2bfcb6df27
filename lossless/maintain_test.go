package lossless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

// writeToolSession writes a transcript of n turns (user, tool call, a tool
// result of about resultChars characters, answer) with entry ids, and
// returns its path and the entry ids of the tool results.
func writeToolSession(t testing.TB, dir string, n, resultChars int) (string, []string) {
	t.Helper()
	path := filepath.Join(dir, "sess.jsonl")
	lines := []any{map[string]any{"type": "session", "version": 3, "id": "sess", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}}
	var parent any
	var results []string
	add := func(id string, m core.Message) {
		lines = append(lines, map[string]any{"type": "message", "id": id, "parentId": parent,
			"timestamp": "2026-01-01T00:00:01.000Z", "message": json.RawMessage(m.Raw())})
		parent = id
	}
	for i := 0; i < n; i++ {
		ts := int64(1_767_000_000_000 + i*1000)
		call := fmt.Sprintf("call_%d", i)
		add(fmt.Sprintf("u%03d", i), core.UserText(fmt.Sprintf("read log %d", i), ts))
		add(fmt.Sprintf("c%03d", i), core.AssistantToolCall(call, "read", map[string]any{"path": fmt.Sprintf("log-%d.txt", i)}, ts+1))
		body := fmt.Sprintf("log %d\n", i) + strings.Repeat(fmt.Sprintf("entry %d: request served in 12ms\n", i), resultChars/30)
		add(fmt.Sprintf("r%03d", i), core.ToolResult(call, "read", body, false, ts+2))
		results = append(results, fmt.Sprintf("r%03d", i))
		add(fmt.Sprintf("a%03d", i), core.AssistantText(fmt.Sprintf("log %d looks fine", i), ts+3))
	}
	if err := core.WriteTranscriptFile(path, lines...); err != nil {
		t.Fatal(err)
	}
	return path, results
}

// fileRewriter is a host's rewriteTranscriptEntries over a session file
// (linear: every entry on the active branch): it replaces the message of
// each named entry and reports the bytes freed; like OpenClaw it refuses
// when AllowedRewriteSuffixEntryIDs is set and misses an entry from the
// first replacement onward. before, when set, runs first (a concurrent
// writer).
type fileRewriter struct {
	path    string
	calls   int
	before  func()
	lastReq core.RewriteRequest
}

func (f *fileRewriter) rewrite(_ context.Context, req core.RewriteRequest) (core.RewriteResult, error) {
	f.calls++
	f.lastReq = req
	if f.before != nil {
		f.before()
	}
	if req.AllowedRewriteSuffixEntryIDs != nil {
		tr, err := core.ReadTranscript(f.path)
		if err != nil {
			return core.RewriteResult{}, err
		}
		allowed, replaced := map[string]bool{}, map[string]bool{}
		for _, id := range req.AllowedRewriteSuffixEntryIDs {
			allowed[id] = true
		}
		for _, r := range req.Replacements {
			replaced[r.EntryID] = true
		}
		inSuffix := false
		for _, en := range tr.ActiveBranch() {
			inSuffix = inSuffix || replaced[en.ID]
			if inSuffix && !allowed[en.ID] {
				return core.RewriteResult{Reason: "rewrite suffix guard failed"}, nil
			}
		}
	}
	old, err := os.ReadFile(f.path)
	if err != nil {
		return core.RewriteResult{}, err
	}
	repl := map[string]core.Message{}
	for _, r := range req.Replacements {
		repl[r.EntryID] = r.Message
	}
	var out bytes.Buffer
	n := 0
	for _, line := range bytes.SplitAfter(old, []byte("\n")) {
		var ent map[string]json.RawMessage
		body := bytes.TrimRight(line, "\n")
		if json.Unmarshal(body, &ent) == nil {
			var id string
			_ = json.Unmarshal(ent["id"], &id)
			if m, ok := repl[id]; ok {
				ent["message"] = m.Raw()
				b, err := json.Marshal(ent)
				if err != nil {
					return core.RewriteResult{}, err
				}
				out.Write(b)
				out.WriteByte('\n')
				n++
				continue
			}
		}
		out.Write(line)
	}
	if err := os.WriteFile(f.path, out.Bytes(), 0o644); err != nil {
		return core.RewriteResult{}, err
	}
	return core.RewriteResult{Changed: n > 0, BytesFreed: len(old) - out.Len(), RewrittenEntries: n}, nil
}

func entryMessages(t testing.TB, path string) map[string][]byte {
	t.Helper()
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range tr.Entries {
		if e.Type == core.EntryMessage {
			out[e.ID] = e.Message.Raw()
		}
	}
	return out
}

func TestMaintainRewritesOldToolResults(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, results := writeToolSession(t, dir, 6, 12000)
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 5 })
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: "sess", SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	stored := storedMessages(t, e, "", "sess")
	before := entryMessages(t, path)
	sizeBefore := fileSize(t, path)
	asmBefore, err := e.Assemble(ctx, core.AssembleParams{SessionID: "sess", TokenBudget: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	fr := &fileRewriter{path: path}
	rc := &core.RuntimeContext{RewriteTranscriptEntries: fr.rewrite}
	res, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess", SessionFile: path, Reason: core.MaintainReasonTurn, RuntimeContext: rc})
	if err != nil {
		t.Fatal(err)
	}
	// The fresh tail is the last 5 message entries: the last turn and the
	// answer before it; r004 (6th from the end) is old, r005 is not.
	if !res.Changed || res.RewrittenEntries != 5 || res.BytesFreed != int(sizeBefore-fileSize(t, path)) || res.BytesFreed <= 0 {
		t.Fatalf("maintain: %+v (file %d -> %d)", res, sizeBefore, fileSize(t, path))
	}
	after := entryMessages(t, path)
	for id, raw := range before {
		rewritten := !bytes.Equal(after[id], raw)
		isOld := strings.HasPrefix(id, "r") && id != results[len(results)-1]
		if rewritten != isOld {
			t.Fatalf("entry %s: rewritten %v, want %v", id, rewritten, isOld)
		}
		if !rewritten {
			continue
		}
		ref := core.MustParseMessage(string(after[id]))
		orig := core.MustParseMessage(string(raw))
		if ref.Role() != core.RoleToolResult || ref.ToolCallID() != orig.ToolCallID() || ref.ToolName() != orig.ToolName() || ref.Timestamp() != orig.Timestamp() {
			t.Fatalf("entry %s: reference %s does not keep the result's identity", id, after[id])
		}
		largeID := LargeRefPrefix + hashHex(orig)
		if !strings.Contains(ref.Text(), largeID) {
			t.Fatalf("entry %s: reference does not name %s: %s", id, largeID, ref.Text())
		}
		page, err := e.ExpandSummary(ctx, tools.ExpandParams{SessionID: "sess", ID: largeID})
		if err != nil || len(page.Messages) != 1 || !bytes.Equal(page.Messages[0].Message.Raw(), raw) {
			t.Fatalf("entry %s: expand of %s: %v", id, largeID, err)
		}
	}
	// The store is untouched: same messages, same bytes.
	if got := storedMessages(t, e, "", "sess"); !equalRaws(got, stored) {
		t.Fatal("maintain changed the stored messages")
	}
	// Idempotent: nothing left to rewrite, the host is not called.
	res, err = e.Maintain(ctx, core.MaintainParams{SessionID: "sess", SessionFile: path, RuntimeContext: rc})
	if err != nil || res.Changed || res.RewrittenEntries != 0 || res.Reason != orchestrate.MaintainNothingToDo || fr.calls != 1 {
		t.Fatalf("second maintain: %+v %v (host called %d times)", res, err, fr.calls)
	}
	// Reading the rewritten transcript again stores nothing new: the
	// references are aliases of their originals.
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: "sess", SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	if got := storedMessages(t, e, "", "sess"); !equalRaws(got, stored) {
		t.Fatalf("re-import of the rewritten transcript stored %d messages, had %d", len(got), len(stored))
	}
	asmAfter, err := e.Assemble(ctx, core.AssembleParams{SessionID: "sess", TokenBudget: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !equalRaws(rawBytes(asmAfter.Messages), rawBytes(asmBefore.Messages)) {
		t.Fatal("the assembled context changed after maintain and re-import")
	}
}

// TestMaintainSuffixGuard: the rewrite names the suffix of entries the
// engine read; when the transcript gained an entry before the host applied
// it, the host refuses, the file keeps every entry as it was, and Maintain
// reports why nothing changed.
func TestMaintainSuffixGuard(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, results := writeToolSession(t, dir, 6, 12000)
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 5 })
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: "sess", SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	appended := false
	fr := &fileRewriter{path: path, before: func() {
		if appended {
			return
		}
		appended = true
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, `{"type":"message","id":"late1","parentId":"a005","timestamp":"2026-12-01T00:00:00.000Z","message":{"role":"user","content":"a late turn"}}`)
		f.Close()
	}}
	before := entryMessages(t, path)
	res, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess", SessionFile: path, Reason: core.MaintainReasonTurn,
		RuntimeContext: &core.RuntimeContext{RewriteTranscriptEntries: fr.rewrite}})
	if err != nil {
		t.Fatal(err)
	}
	ids := fr.lastReq.AllowedRewriteSuffixEntryIDs
	if len(ids) == 0 || ids[0] != fr.lastReq.Replacements[0].EntryID || ids[len(ids)-1] != "a005" {
		t.Fatalf("suffix %v: want from the first replaced entry (%s) to the last entry read (a005)", ids, fr.lastReq.Replacements[0].EntryID)
	}
	if res.Changed || !strings.Contains(res.Reason, "rewrite suffix guard failed") {
		t.Fatalf("maintain over a changed transcript: %+v", res)
	}
	after := entryMessages(t, path)
	for id, raw := range before {
		if !bytes.Equal(after[id], raw) {
			t.Fatalf("entry %s changed although the host refused", id)
		}
	}
	if _, ok := after["late1"]; !ok || len(results) == 0 {
		t.Fatal("the late entry is gone")
	}
	// Read again, the late entry included: the rewrite goes through.
	res, err = e.Maintain(ctx, core.MaintainParams{SessionID: "sess", SessionFile: path, Reason: core.MaintainReasonTurn,
		RuntimeContext: &core.RuntimeContext{RewriteTranscriptEntries: fr.rewrite}})
	if err != nil || !res.Changed {
		t.Fatalf("second maintain: %+v %v", res, err)
	}
}

func TestMaintainWithoutHelper(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, _ := writeToolSession(t, dir, 4, 12000)
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 2 })
	old, _ := os.ReadFile(path)
	// Unknown session, with a helper: nothing.
	fr := &fileRewriter{path: path}
	rc := &core.RuntimeContext{RewriteTranscriptEntries: fr.rewrite}
	res, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess", SessionFile: path, RuntimeContext: rc})
	if err != nil || res.Changed || res.Reason != orchestrate.MaintainUnknownSession {
		t.Fatalf("unknown session: %+v %v", res, err)
	}
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: "sess", SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	for _, rc := range []*core.RuntimeContext{nil, {}} {
		res, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess", SessionFile: path, RuntimeContext: rc})
		if err != nil || res.Changed || res.BytesFreed != 0 || res.RewrittenEntries != 0 || res.Reason != orchestrate.MaintainNoRewriter {
			t.Fatalf("no helper: %+v %v", res, err)
		}
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
		t.Fatal("the transcript changed without the helper")
	}
	res, err = e.Maintain(ctx, core.MaintainParams{SessionID: "sess", RuntimeContext: rc})
	if err != nil || res.Changed || res.Reason != orchestrate.MaintainNoSessionFile || fr.calls != 0 {
		t.Fatalf("no session file: %+v %v", res, err)
	}
	// Small tool results are left alone.
	small := openTest(t, func(c *config.Config) { c.MaintainMinTokens = 1 << 20 })
	if _, err := small.Bootstrap(ctx, core.BootstrapParams{SessionID: "sess", SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	res, err = small.Maintain(ctx, core.MaintainParams{SessionID: "sess", SessionFile: path, RuntimeContext: rc})
	if err != nil || res.Changed || res.Reason != orchestrate.MaintainNothingToDo || fr.calls != 0 {
		t.Fatalf("nothing large: %+v %v", res, err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func rawBytes(msgs []core.Message) [][]byte {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.Raw()
	}
	return out
}

func equalRaws(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestMaintainBeforeCompaction: tool results before the transcript's last
// compaction (outside the window, still in the file) are old too.
func TestMaintainBeforeCompaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, _ := writeToolSession(t, dir, 6, 12000)
	ts := int64(1_767_000_100_000)
	last := []any{
		map[string]any{"type": "compaction", "id": "cmp", "parentId": "a005", "timestamp": "2026-01-01T00:00:02.000Z",
			"summary": "earlier logs were read", "firstKeptEntryId": "u003", "tokensBefore": 20000},
		map[string]any{"type": "message", "id": "u006", "parentId": "cmp", "timestamp": "2026-01-01T00:00:03.000Z",
			"message": json.RawMessage(core.UserText("read log 6", ts).Raw())},
		map[string]any{"type": "message", "id": "c006", "parentId": "u006", "timestamp": "2026-01-01T00:00:03.000Z",
			"message": json.RawMessage(core.AssistantToolCall("call_6", "read", map[string]any{"path": "log-6.txt"}, ts+1).Raw())},
		map[string]any{"type": "message", "id": "r006", "parentId": "c006", "timestamp": "2026-01-01T00:00:03.000Z",
			"message": json.RawMessage(core.ToolResult("call_6", "read", strings.Repeat("entry 6 fine\n", 1000), false, ts+2).Raw())},
	}
	if err := core.AppendTranscript(path, last...); err != nil {
		t.Fatal(err)
	}
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 3 })
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: "sess", SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	before := entryMessages(t, path)
	fr := &fileRewriter{path: path}
	res, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess", SessionFile: path, Reason: core.MaintainReasonCompaction,
		RuntimeContext: &core.RuntimeContext{RewriteTranscriptEntries: fr.rewrite}})
	if err != nil {
		t.Fatal(err)
	}
	if res.RewrittenEntries != 6 {
		t.Fatalf("rewrote %d entries, want r000..r005: %+v", res.RewrittenEntries, res)
	}
	after := entryMessages(t, path)
	for _, id := range []string{"r000", "r002", "r005"} {
		if bytes.Equal(after[id], before[id]) {
			t.Fatalf("%s not rewritten", id)
		}
	}
	if !bytes.Equal(after["r006"], before["r006"]) {
		t.Fatal("the fresh tail was rewritten")
	}
}

// TestMaintainRewriteDeferred: OpenClaw refuses a rewrite while its
// transcript projection rebuilds (SessionTranscriptProjectionUnavailableError).
// Maintain must not fail the turn for it: it reports the deferral, every
// message of the transcript is stored first, and the next maintain, with
// the host ready, makes the rewrite.
func TestMaintainRewriteDeferred(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 8; c.MaintainMinTokens = 500 })
	h := &fakeHost{}
	for i := 0; i < 6; i++ {
		ts := int64(1_767_000_000_000 + i*1000)
		call := fmt.Sprintf("call_%d", i)
		h.add(core.UserText(fmt.Sprintf("read log %d", i), ts), core.AssistantToolCall(call, "read", map[string]any{"path": "x"}, ts+1),
			core.ToolResult(call, "read", strings.Repeat(fmt.Sprintf("line %d of a long log\n", i), 300), false, ts+2), core.AssistantText("ok", ts+3))
	}
	rc := h.sqliteContext()
	calls := 0
	rc.RewriteTranscriptEntries = func(ctx context.Context, req core.RewriteRequest) (core.RewriteResult, error) {
		calls++
		return core.RewriteResult{}, errors.New("SessionTranscriptProjectionUnavailableError: Session transcript projection is rebuilding")
	}
	// Maintain before any bootstrap: it reads the host's transcript itself.
	if _, err := e.CommitTurn(ctx, core.CommitTurnParams{AdvancementKey: "adv-x", SessionID: "sess-1", SessionKey: hostKey,
		SessionTarget: hostTarget, Messages: []core.Message{core.UserText("first", 1_766_000_000_000)}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
		SessionFile: hostKey, Reason: core.MaintainReasonTurn, RuntimeContext: rc})
	if err != nil {
		t.Fatalf("maintain failed the turn on a deferred rewrite: %v", err)
	}
	if calls != 1 || res.Changed || !strings.HasPrefix(res.Reason, orchestrate.MaintainRewriteDeferred) {
		t.Fatalf("deferred rewrite: %d calls, %+v", calls, res)
	}
	// Every message of the transcript is stored, whatever the host did.
	stored := map[string]bool{}
	if err := e.Messages(ctx, "", "sess-1", func(_ uint64, m core.Message) error { stored[string(m.Raw())] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.raws() {
		if !stored[string(r)] {
			t.Fatalf("a transcript message is not stored after the deferred rewrite: %.80s", r)
		}
	}
	// The host is ready again: the next maintain rewrites.
	rc.RewriteTranscriptEntries = h.rewrite
	res, err = e.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
		SessionFile: hostKey, Reason: core.MaintainReasonTurn, RuntimeContext: rc})
	if err != nil || !res.Changed || res.RewrittenEntries != 4 {
		t.Fatalf("retry: %+v %v", res, err)
	}
}
