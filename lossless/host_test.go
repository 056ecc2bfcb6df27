package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
)

// fakeHost is a host that keeps a session's transcript itself, as OpenClaw
// 2026.9.6 does in SQLite: entries with ids and sequence numbers, read
// page by page from a cursor (readSessionTranscriptVisibleMessageDelta's
// shape), and rewritten by rewriteTranscriptEntries (the suffix after the
// first replaced entry re-appended with new ids).
type fakeHost struct {
	mu      sync.Mutex
	entries []core.TranscriptEntry
	nextSeq int64
	page    int // entries per page (0: the request's maxMessages)
	// resetOnce answers the next read with kind "reset".
	resetOnce bool
	reads     []core.TranscriptReadRequest
	rewrites  []core.RewriteRequest
}

func (h *fakeHost) add(msgs ...core.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range msgs {
		h.nextSeq++
		h.entries = append(h.entries, core.TranscriptEntry{EntryID: fmt.Sprintf("e%d", h.nextSeq), Seq: h.nextSeq, Message: m, Role: m.Role()})
	}
}

func (h *fakeHost) read(_ context.Context, req core.TranscriptReadRequest) (core.TranscriptPage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reads = append(h.reads, req)
	if h.resetOnce {
		h.resetOnce = false
		return core.TranscriptPage{Kind: core.TranscriptResetKind, Reason: "rewritten"}, nil
	}
	after := int64(0)
	if req.Cursor != nil {
		n, err := strconv.ParseInt(*req.Cursor, 10, 64)
		if err != nil {
			return core.TranscriptPage{}, fmt.Errorf("bad cursor %q", *req.Cursor)
		}
		after = n
	}
	max := req.MaxMessages
	if h.page > 0 {
		max = h.page
	}
	var out []core.TranscriptEntry
	last := after
	more := false
	for _, en := range h.entries {
		if en.Seq <= after {
			continue
		}
		if len(out) == max {
			more = true
			break
		}
		out = append(out, en)
		last = en.Seq
	}
	cur, _ := json.Marshal(strconv.FormatInt(last, 10))
	return core.TranscriptPage{Kind: core.TranscriptPageKind, Cursor: cur, HasMore: more, Entries: out}, nil
}

func (h *fakeHost) rewrite(_ context.Context, req core.RewriteRequest) (core.RewriteResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rewrites = append(h.rewrites, req)
	reps := map[string]core.Message{}
	for _, r := range req.Replacements {
		reps[r.EntryID] = r.Message
	}
	first := -1
	for i, en := range h.entries {
		if _, ok := reps[en.EntryID]; ok {
			first = i
			break
		}
	}
	if first < 0 {
		return core.RewriteResult{Reason: "no such entries"}, nil
	}
	if req.AllowedRewriteSuffixEntryIDs != nil {
		allowed := map[string]bool{}
		for _, id := range req.AllowedRewriteSuffixEntryIDs {
			allowed[id] = true
		}
		for _, en := range h.entries[first:] {
			if !allowed[en.EntryID] {
				return core.RewriteResult{Reason: "rewrite suffix guard failed"}, nil
			}
		}
	}
	freed := 0
	suffix := append([]core.TranscriptEntry(nil), h.entries[first:]...)
	h.entries = h.entries[:first]
	for _, en := range suffix {
		m := en.Message
		if r, ok := reps[en.EntryID]; ok {
			freed += len(m.Raw()) - len(r.Raw())
			m = r
		}
		h.nextSeq++
		h.entries = append(h.entries, core.TranscriptEntry{EntryID: fmt.Sprintf("e%d", h.nextSeq), Seq: h.nextSeq, Message: m, Role: m.Role()})
	}
	return core.RewriteResult{Changed: true, BytesFreed: freed, RewrittenEntries: len(reps)}, nil
}

func (h *fakeHost) raws() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([][]byte, len(h.entries))
	for i, en := range h.entries {
		out[i] = en.Message.Raw()
	}
	return out
}

// sqliteContext is the runtimeContext OpenClaw passes: transcriptStorage
// sqlite, with the host's reader and rewriter.
func (h *fakeHost) sqliteContext() *core.RuntimeContext {
	return &core.RuntimeContext{
		Values:                   map[string]json.RawMessage{"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)},
		ReadTranscript:           h.read,
		RewriteTranscriptEntries: h.rewrite,
	}
}

const hostKey = "agent:main:main"

var hostTarget = json.RawMessage(`{"agentId":"main","sessionId":"sess-1","sessionKey":"agent:main:main","storePath":"/state/agents/main/sessions.sqlite"}`)

// hostBootstrap is the bootstrap OpenClaw makes: the session key as
// sessionFile, the identity in sessionTarget.
func hostBootstrap(rc *core.RuntimeContext) core.BootstrapParams {
	return core.BootstrapParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget, SessionFile: hostKey, RuntimeContext: rc}
}

func TestBootstrapHostImportsOnce(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	h := &fakeHost{page: 7}
	var history []core.Message
	for i := 0; i < 6; i++ {
		history = append(history, commitTurnMsgs(i)...) // 24 messages written before the engine was selected
	}
	h.add(history...)

	r, err := e.Bootstrap(ctx, hostBootstrap(h.sqliteContext()))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Bootstrapped || r.ImportedMessages != len(history) {
		t.Fatalf("first bootstrap: %+v, want %d imported", r, len(history))
	}
	if got := storedMessages(t, e, "main", "sess-1"); !equalRaws(got, rawBytes(history)) {
		t.Fatalf("stored %d messages, not the host's %d byte for byte", len(got), len(history))
	}
	if len(h.reads) != 4 { // 7+7+7+3
		t.Fatalf("%d page reads for 24 entries at 7 a page, want 4", len(h.reads))
	}

	// A repeat bootstrap reads from the cursor: nothing new, one read.
	h.reads = nil
	r, err = e.Bootstrap(ctx, hostBootstrap(h.sqliteContext()))
	if err != nil || r.ImportedMessages != 0 {
		t.Fatalf("repeat bootstrap: %+v %v", r, err)
	}
	if len(h.reads) != 1 || h.reads[0].Cursor == nil || *h.reads[0].Cursor != "24" {
		t.Fatalf("repeat bootstrap reads %+v, want one read from cursor 24", h.reads)
	}

	// A turn committed by the engine is in the host's transcript too; the
	// next bootstrap maps it without storing it again, and imports a turn
	// the engine missed.
	p := commitParams("sess-1", "adv-6", 6)
	p.SessionKey, p.SessionTarget = hostKey, hostTarget
	if _, err := e.CommitTurn(ctx, p); err != nil {
		t.Fatal(err)
	}
	h.add(p.Messages...)
	missed := commitTurnMsgs(7)
	h.add(missed...)
	r, err = e.Bootstrap(ctx, hostBootstrap(h.sqliteContext()))
	if err != nil || r.ImportedMessages != len(missed) {
		t.Fatalf("bootstrap after a committed and a missed turn: %+v %v, want %d imported", r, err, len(missed))
	}
	if got := storedMessages(t, e, "main", "sess-1"); !equalRaws(got, h.raws()) {
		t.Fatalf("stored %d messages, host has %d: not the same bytes in the same order", len(got), len(h.entries))
	}

	// "reset": the cursor no longer applies; the engine reads from the
	// start and stores nothing twice.
	h.resetOnce = true
	h.reads = nil
	r, err = e.Bootstrap(ctx, hostBootstrap(h.sqliteContext()))
	if err != nil || r.ImportedMessages != 0 {
		t.Fatalf("bootstrap after reset: %+v %v", r, err)
	}
	if len(h.reads) < 2 || h.reads[1].Cursor != nil {
		t.Fatalf("after reset the engine must read from the start: %+v", h.reads)
	}
	if n := len(storedMessages(t, e, "main", "sess-1")); n != len(h.entries) {
		t.Fatalf("after reset %d stored, host has %d", n, len(h.entries))
	}
}

func TestBootstrapHostNeverOpensSessionKey(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	// No reader offered: nothing imported, no conversation made (a
	// conversation that never receives a message leaves no record), and
	// the reason says why (the session key was not taken for a path).
	r, err := e.Bootstrap(ctx, hostBootstrap(&core.RuntimeContext{Values: map[string]json.RawMessage{
		"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)}}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Bootstrapped || !strings.Contains(r.Reason, "offers no reader") {
		t.Fatalf("bootstrap without a reader: %+v", r)
	}
	if _, err := e.ConversationFor(ctx, "", "sess-1", hostKey); !errors.Is(err, core.ErrUnknownSession) {
		t.Fatalf("a bootstrap that stored nothing made a conversation: %v", err)
	}
	// A "sqlite:" marker as sessionFile, no transcriptStorage: still the host's.
	h := &fakeHost{}
	h.add(commitTurnMsgs(1)...)
	rc := &core.RuntimeContext{ReadTranscript: h.read}
	r, err = e.Bootstrap(ctx, core.BootstrapParams{SessionTarget: hostTarget, SessionFile: "sqlite:main:sess-1:/state/s.sqlite", RuntimeContext: rc})
	if err != nil || r.ImportedMessages != 4 {
		t.Fatalf("bootstrap with a sqlite marker, identity from sessionTarget only: %+v %v", r, err)
	}
	// Missing transcript.
	e2 := openTest(t)
	r, err = e2.Bootstrap(ctx, hostBootstrap(&core.RuntimeContext{ReadTranscript: func(context.Context, core.TranscriptReadRequest) (core.TranscriptPage, error) {
		return core.TranscriptPage{Kind: core.TranscriptMissingKind}, nil
	}, Values: map[string]json.RawMessage{"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)}}))
	if err != nil || r.Bootstrapped || r.Reason != "no transcript yet" {
		t.Fatalf("missing transcript: %+v %v", r, err)
	}
}

func TestMaintainHostRewritesThroughReader(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 8; c.MaintainMinTokens = 500 })
	h := &fakeHost{}
	var bigs [][]byte
	for i := 0; i < 6; i++ {
		ts := int64(1_767_000_000_000 + i*1000)
		call := fmt.Sprintf("call_%d", i)
		res := core.ToolResult(call, "read", strings.Repeat(fmt.Sprintf("line %d of a long log\n", i), 300), false, ts+2)
		bigs = append(bigs, res.Raw())
		h.add(core.UserText(fmt.Sprintf("read log %d", i), ts), core.AssistantToolCall(call, "read", map[string]any{"path": "x"}, ts+1),
			res, core.AssistantText("ok", ts+3))
	}
	rc := h.sqliteContext()
	if _, err := e.Bootstrap(ctx, hostBootstrap(rc)); err != nil {
		t.Fatal(err)
	}
	before := 0
	for _, r := range h.raws() {
		before += len(r)
	}
	res, err := e.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
		SessionFile: hostKey, Reason: core.MaintainReasonBootstrap, RuntimeContext: rc})
	if err != nil {
		t.Fatal(err)
	}
	// 24 entries, the newest 8 fresh: results 0..3 are old.
	if !res.Changed || res.RewrittenEntries != 4 || res.BytesFreed <= 0 {
		t.Fatalf("maintain: %+v", res)
	}
	if len(h.rewrites) != 1 {
		t.Fatalf("%d rewrites", len(h.rewrites))
	}
	req := h.rewrites[0]
	if len(req.AllowedRewriteSuffixEntryIDs) != 24-2 { // from the first old result (entry 3) to the end
		t.Fatalf("suffix of %d entries, want 22: %v", len(req.AllowedRewriteSuffixEntryIDs), req.AllowedRewriteSuffixEntryIDs)
	}
	after := 0
	for _, r := range h.raws() {
		after += len(r)
	}
	if after >= before {
		t.Fatalf("host transcript %d bytes after, %d before", after, before)
	}
	// The originals stay retrievable byte for byte.
	conv, err := e.ConversationFor(ctx, "", "sess-1", hostKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range req.Replacements {
		text := r.Message.Text()
		key := text[strings.Index(text, LargeRefPrefix)+len(LargeRefPrefix):]
		if j := strings.IndexFunc(key, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) }); j >= 0 {
			key = key[:j]
		}
		_, m, err := conv.MessageByKey(ctx, key)
		if err != nil {
			t.Fatalf("reference %d: %v", i, err)
		}
		if string(m.Raw()) != string(bigs[i]) {
			t.Fatalf("reference %d does not give back the original", i)
		}
	}
	// A second maintain (the transcript re-read after the rewrite) stores
	// nothing and rewrites nothing.
	n := countMessages(t, e)
	res, err = e.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
		SessionFile: hostKey, Reason: core.MaintainReasonTurn, RuntimeContext: rc})
	if err != nil || res.Changed {
		t.Fatalf("second maintain: %+v %v", res, err)
	}
	if got := countMessages(t, e); got != n {
		t.Fatalf("second maintain stored %d messages", got-n)
	}
	// Entries appended since the read: the host refuses, nothing lost.
	e3 := openTest(t, func(c *config.Config) { c.FreshTailMessages = 8; c.MaintainMinTokens = 500 })
	h3 := &fakeHost{}
	h3.entries = append(h3.entries, h.entries...)
	h3.nextSeq = h.nextSeq
	h3.entries = nil
	for i := 0; i < 6; i++ {
		ts := int64(1_767_000_000_000 + i*1000)
		h3.add(core.UserText(fmt.Sprintf("q %d", i), ts), core.ToolResult(fmt.Sprintf("c%d", i), "read", strings.Repeat("z", 5000), false, ts+1))
	}
	rc3 := h3.sqliteContext()
	inner := rc3.ReadTranscript
	rc3.ReadTranscript = func(ctx context.Context, req core.TranscriptReadRequest) (core.TranscriptPage, error) {
		p, err := inner(ctx, req)
		if err == nil && !p.HasMore {
			h3.add(core.UserText("a turn arrived meanwhile", 1_767_100_000_000)) // after the read
		}
		return p, err
	}
	res, err = e3.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget, SessionFile: hostKey, RuntimeContext: rc3})
	if err == nil {
		// The conversation is unknown before a bootstrap: nothing to do.
		if res.Changed {
			t.Fatalf("maintain of an unknown session changed the transcript: %+v", res)
		}
	}
	if _, err := e3.Bootstrap(ctx, hostBootstrap(rc3)); err != nil {
		t.Fatal(err)
	}
	res, err = e3.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget, SessionFile: hostKey, RuntimeContext: rc3})
	if err != nil || res.Changed || !strings.Contains(res.Reason, "suffix guard") {
		t.Fatalf("maintain with entries appended after its read: %+v %v", res, err)
	}
}

func TestCompactHostNeverRotates(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, func(c *config.Config) { c.RotateBytes = 1; c.FreshTailMessages = 4 })
	h := &fakeHost{}
	for i := 0; i < 40; i++ {
		h.add(commitTurnMsgs(i)...)
	}
	rc := h.sqliteContext()
	if _, err := e.Bootstrap(ctx, hostBootstrap(rc)); err != nil {
		t.Fatal(err)
	}
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
		SessionFile: hostKey, TokenBudget: 600, Force: true, RuntimeContext: rc})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.Result == nil {
		t.Fatalf("compact: %+v", res)
	}
	out := res.Result
	if out.SessionID != "" || out.SessionFile != "" || string(out.SessionTarget) != string(hostTarget) {
		t.Fatalf("a SQLite host got a successor: id %q file %q target %s", out.SessionID, out.SessionFile, out.SessionTarget)
	}
	var d orchestrate.CompactDetails
	if err := json.Unmarshal(out.Details, &d); err != nil || d.Rotated {
		t.Fatalf("details %s: %v", out.Details, err)
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"tokensAfter":`) {
		t.Fatalf("tokensAfter missing from %s", b)
	}
}

func TestCompactWithHostSummarizer(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, func(c *config.Config) {
		c.Summarizer = json.RawMessage(`{"kind":"host"}`)
		c.FreshTailMessages = 4
		c.LeafChunkTokens = 400
	})
	for i := 0; i < 40; i++ {
		p := commitParams("sess-1", fmt.Sprintf("adv-%d", i), i)
		p.SessionKey, p.SessionTarget = hostKey, hostTarget
		if _, err := e.CommitTurn(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	calls := 0
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)},
		LLMComplete: func(_ context.Context, req core.LLMRequest) (core.LLMResponse, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			if req.System == "" || len(req.Messages) != 1 {
				return core.LLMResponse{}, fmt.Errorf("unexpected request %+v", req)
			}
			return core.LLMResponse{Text: modelSummary(req, "HOST-SUMMARY")}, nil
		}}
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
		SessionFile: hostKey, TokenBudget: 800, Force: true, RuntimeContext: rc})
	if err != nil || !res.Compacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if calls == 0 || !strings.Contains(res.Result.Summary, "HOST-SUMMARY") {
		t.Fatalf("%d host calls; summary %q", calls, res.Result.Summary)
	}
	// Without the host's model (no llm.complete in the runtime context) the
	// extractive fallback answers, and nothing fails.
	for i := 40; i < 60; i++ {
		p := commitParams("sess-1", fmt.Sprintf("adv-%d", i), i)
		p.SessionKey, p.SessionTarget = hostKey, hostTarget
		if _, err := e.CommitTurn(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before := calls
	res, err = e.Compact(ctx, core.CompactParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget,
		SessionFile: hostKey, TokenBudget: 800, Force: true,
		RuntimeContext: &core.RuntimeContext{Values: rc.Values}})
	if err != nil || !res.OK || !res.Compacted {
		t.Fatalf("compact without the host's model: %+v %v", res, err)
	}
	// (The new summary may condense the earlier host summaries, so their
	// text can appear in it; the fallback's own sections must.)
	if calls != before || !strings.Contains(res.Result.Summary, "Goal:") {
		t.Fatalf("without the host's model: %d more host calls; summary %q", calls-before, res.Result.Summary)
	}
}

func TestCommitTurnStartsCompaction(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 4; c.LeafChunkTokens = 300 })
	commit := func(i int) {
		p := commitParams("sess-1", fmt.Sprintf("adv-%d", i), i)
		p.SessionKey, p.SessionTarget = hostKey, hostTarget
		if _, err := e.CommitTurn(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	commit(0)
	// The host's assemble budget is what the decision measures against.
	if _, err := e.Assemble(ctx, core.AssembleParams{SessionID: "sess-1", SessionKey: hostKey, TokenBudget: 1000}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 60; i++ {
		commit(i)
	}
	e.waitBackground()
	conv, err := e.ConversationFor(ctx, "", "sess-1", hostKey)
	if err != nil {
		t.Fatal(err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sums := 0
	for _, it := range items {
		if it.IsSummary() {
			sums++
		}
	}
	if sums == 0 {
		t.Fatalf("no summary after 60 committed turns over a 1000-token budget (%d items, %d tokens)", len(items), itemTokens(items))
	}
	if tok := itemTokens(items); float64(tok) > 1000 {
		t.Fatalf("context %d tokens after background compaction, budget 1000", tok)
	}
}

// bigResults returns n turns whose tool results are large enough for
// maintain, and the results' bytes.
func bigResults(n int) ([]core.Message, [][]byte) {
	var msgs []core.Message
	var bigs [][]byte
	for i := 0; i < n; i++ {
		ts := int64(1_767_000_000_000 + i*1000)
		call := fmt.Sprintf("call_%d", i)
		res := core.ToolResult(call, "read", strings.Repeat(fmt.Sprintf("line %d of a long log\n", i), 300), false, ts+2)
		bigs = append(bigs, res.Raw())
		msgs = append(msgs, core.UserText(fmt.Sprintf("read log %d", i), ts), core.AssistantToolCall(call, "read", map[string]any{"path": "x"}, ts+1),
			res, core.AssistantText("ok", ts+3))
	}
	return msgs, bigs
}

// TestMaintainCrashChild is the child of TestMaintainCrash: it stores a
// host transcript, runs Maintain, and SIGKILLs itself inside the host's
// rewrite (the host has the references, the engine never returns), after
// printing the references' keys.
func TestMaintainCrashChild(t *testing.T) {
	dir := os.Getenv("LOSSLESS_MAINTAIN_CRASH_DIR")
	if dir == "" {
		t.Skip("child of TestMaintainCrash only")
	}
	ctx := context.Background()
	cfg := testConfig(dir)
	cfg.SyncWrites = false
	cfg.FreshTailMessages = 8
	cfg.MaintainMinTokens = 500
	e, err := Open(ctx, cfg)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	h := &fakeHost{}
	msgs, _ := bigResults(6)
	h.add(msgs...)
	rc := h.sqliteContext()
	if _, err := e.Bootstrap(ctx, hostBootstrap(rc)); err != nil {
		fmt.Println("bootstrap error:", err)
		os.Exit(4)
	}
	rc.RewriteTranscriptEntries = func(ctx context.Context, req core.RewriteRequest) (core.RewriteResult, error) {
		for _, r := range req.Replacements {
			text := r.Message.Text()
			key := text[strings.Index(text, LargeRefPrefix):]
			key = key[:len(LargeRefPrefix)+32]
			fmt.Println("ref", key)
		}
		os.Stdout.Sync()
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	_, _ = e.Maintain(ctx, core.MaintainParams{SessionID: "sess-1", SessionKey: hostKey, SessionTarget: hostTarget, SessionFile: hostKey, RuntimeContext: rc})
	fmt.Println("maintain returned")
	os.Exit(5)
}

// TestMaintainCrash: with syncWrites off, a process killed right as the
// host rewrites its transcript (the originals replaced by references) still
// has every original: lcm_expand of each reference returns its bytes.
func TestMaintainCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMaintainCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOSSLESS_MAINTAIN_CRASH_DIR="+dir)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v; output %s", err, out)
	}
	var refs []string
	for _, l := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(l, "ref "); ok {
			refs = append(refs, r)
		}
	}
	if len(refs) != 4 {
		t.Fatalf("child printed %d references: %s", len(refs), out)
	}
	ctx := context.Background()
	e, err := Open(ctx, testConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, bigs := bigResults(6)
	for i, ref := range refs {
		res, err := e.CallTool(ctx, core.ToolCallParams{Name: ToolExpand, Arguments: json.RawMessage(`{"id":"` + ref + `"}`),
			SessionKey: hostKey, SessionID: "sess-1", AgentID: "main"})
		if err != nil {
			t.Fatalf("lcm_expand %s after the crash: %v", ref, err)
		}
		var page struct {
			Messages []struct {
				Message json.RawMessage `json:"message"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(res.Text), &page); err != nil || len(page.Messages) != 1 {
			t.Fatalf("lcm_expand %s: %v %.200s", ref, err, res.Text)
		}
		if string(page.Messages[0].Message) != string(bigs[i]) {
			t.Fatalf("lcm_expand %s does not return the original tool result", ref)
		}
	}
}

// TestNoRecordWithoutMessages: OpenClaw bootstraps (and may commit) runs
// that never get a message, such as its memory flushes; they leave no
// conversation record: an empty transcript, a missing one, an empty turn.
func TestNoRecordWithoutMessages(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	empty := &fakeHost{}
	if r, err := e.Bootstrap(ctx, hostBootstrap(empty.sqliteContext())); err != nil || r.Bootstrapped {
		t.Fatalf("bootstrap of an empty transcript: %+v %v", r, err)
	}
	missing := &core.RuntimeContext{ReadTranscript: func(context.Context, core.TranscriptReadRequest) (core.TranscriptPage, error) {
		return core.TranscriptPage{Kind: core.TranscriptMissingKind}, nil
	}, Values: map[string]json.RawMessage{"transcriptStorage": json.RawMessage(`{"kind":"sqlite"}`)}}
	if _, err := e.Bootstrap(ctx, hostBootstrap(missing)); err != nil {
		t.Fatal(err)
	}
	p := commitParams("sess-1", "adv-empty", 0)
	p.SessionKey, p.SessionTarget, p.Messages = hostKey, hostTarget, nil
	if res, err := e.CommitTurn(ctx, p); err != nil || res.Status != core.CommitCommitted {
		t.Fatalf("empty turn: %+v %v", res, err)
	}
	list, err := e.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("%d conversations recorded without a message: %+v", len(list), list)
	}
	// The first message makes it, as before.
	h := &fakeHost{}
	h.add(commitTurnMsgs(1)...)
	if r, err := e.Bootstrap(ctx, hostBootstrap(h.sqliteContext())); err != nil || r.ImportedMessages != 4 {
		t.Fatalf("bootstrap with messages: %+v %v", r, err)
	}
	if list, err = e.Sessions(ctx, ""); err != nil || len(list) != 1 {
		t.Fatalf("after a message: %d conversations, %v", len(list), err)
	}
}
