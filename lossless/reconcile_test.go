package lossless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// toolTranscript returns the lines of a transcript of n rounds, each a user
// message, an assistant tool call and its tool result.
func toolTranscript(session string, n int) [][]byte {
	lines := [][]byte{[]byte(fmt.Sprintf(`{"type":"session","version":4,"id":%q,"timestamp":"2026-01-01T00:00:00Z"}`, session))}
	ts := 1
	for i := 0; i < n; i++ {
		lines = append(lines,
			[]byte(fmt.Sprintf(`{"type":"message","id":"u%02d","message":{"role":"user","content":"question %02d","timestamp":%d}}`, i, i, ts)),
			[]byte(fmt.Sprintf(`{"type":"message","id":"a%02d","message":{"role":"assistant","content":[{"type":"toolCall","id":"call%02d","name":"read","arguments":{"path":"f%02d"}}],"timestamp":%d}}`, i, i, i, ts+1)),
			[]byte(fmt.Sprintf(`{"type":"message","id":"r%02d","message":{"role":"toolResult","toolCallId":"call%02d","toolName":"read","content":[{"type":"text","text":"result %02d: 1234"}],"timestamp":%d}}`, i, i, i, ts+2)))
		ts += 3
	}
	return lines
}

// assembledRaw returns the raw messages of a whole-conversation assemble.
func assembledRaw(t *testing.T, e *Engine, session string) [][]byte {
	t.Helper()
	res, err := e.Assemble(context.Background(), core.AssembleParams{SessionID: session, TokenBudget: 1 << 20})
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	out := make([][]byte, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = jsonCompact(t, m.Raw())
	}
	return out
}

func jsonCompact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("compact %q: %v", b, err)
	}
	return buf.Bytes()
}

// wantFileOrder asserts that the assembled context is exactly the file's
// messages in file order (every tool result right after its call; a
// message the file holds twice, byte for byte, is one stored message and
// appears once, at its first place).
func wantFileOrder(t *testing.T, e *Engine, session, path string) {
	t.Helper()
	var want [][]byte
	seen := map[msgHash]bool{}
	for _, m := range fileMessages(t, path) {
		if h := hashRaw(m); !seen[h] {
			seen[h] = true
			want = append(want, m)
		}
	}
	got := assembledRaw(t, e, session)
	if len(got) != len(want) {
		t.Fatalf("assembled %d messages, the file has %d", len(got), len(want))
	}
	for i := range want {
		if w := jsonCompact(t, want[i]); !bytes.Equal(got[i], w) {
			t.Fatalf("assembled message %d:\n got %s\nwant %s", i, got[i], w)
		}
	}
	assertToolPairs(t, got)
	res, err := e.Check(context.Background(), false)
	if err != nil || len(res.Problems) > 0 {
		t.Fatalf("check after reconcile: %+v %v", res.Problems, err)
	}
	if err := checkInvariants(e); err != nil {
		t.Fatalf("store invariants: %v", err)
	}
}

// assertToolPairs fails when a tool result does not directly follow the
// assistant message (or tool results) of its call.
func assertToolPairs(t *testing.T, msgs [][]byte) {
	t.Helper()
	open := map[string]bool{}
	for i, raw := range msgs {
		var m struct {
			Role       string            `json:"role"`
			ToolCallID string            `json:"toolCallId"`
			Content    []json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(raw, &m)
		switch m.Role {
		case "toolResult":
			if !open[m.ToolCallID] {
				t.Fatalf("message %d: tool result of %s without its call right before it", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			open = map[string]bool{}
			for _, c := range m.Content {
				var part struct{ Type, ID string }
				_ = json.Unmarshal(c, &part)
				if part.Type == "toolCall" {
					open[part.ID] = true
				}
			}
		}
	}
}

func storedContains(t *testing.T, e *Engine, session, s string) bool {
	for _, raw := range storedMessages(t, e, "", session) {
		if bytes.Contains(raw, []byte(s)) {
			return true
		}
	}
	return false
}

func TestReconcileSameLengthEditOfToolResult(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-rec", 10)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	// The tool result of round 4 (line 1+4*3+2): same length.
	i := 1 + 4*3 + 2
	lines[i] = bytes.Replace(lines[i], []byte("1234"), []byte("5678"), 1)
	writeLines(t, path, lines, false)
	res, err := e.Import(ctx, "", path)
	if err != nil || res.Imported != 1 || res.Resumed {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	wantFileOrder(t, e, "sess-rec", path)
	if !storedContains(t, e, "sess-rec", "result 04: 1234") || !storedContains(t, e, "sess-rec", "result 04: 5678") {
		t.Fatal("both versions of the edited result must stay stored")
	}
	// Unchanged since: resumed, nothing moves.
	if res, err := e.Import(ctx, "", path); err != nil || !res.Resumed || res.Imported != 0 {
		t.Fatalf("third import: %+v %v", res, err)
	}
	wantFileOrder(t, e, "sess-rec", path)
}

func TestReconcileDeletionAndInsertion(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-rec", 8)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	// Delete round 2 entirely (user, call, result); insert two messages
	// before round 5's user message; append one at the end.
	var next [][]byte
	for i, l := range lines {
		if i >= 1+2*3 && i < 1+3*3 {
			continue
		}
		if i == 1+5*3 {
			next = append(next,
				[]byte(`{"type":"message","id":"ins1","message":{"role":"user","content":"inserted one","timestamp":100}}`),
				[]byte(`{"type":"message","id":"ins2","message":{"role":"assistant","content":[{"type":"text","text":"inserted two"}],"timestamp":101}}`))
		}
		next = append(next, l)
	}
	next = append(next, []byte(`{"type":"message","id":"end","message":{"role":"user","content":"the end","timestamp":200}}`))
	writeLines(t, path, next, false)
	res, err := e.Import(ctx, "", path)
	if err != nil || res.Imported != 3 {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	wantFileOrder(t, e, "sess-rec", path)
	if !storedContains(t, e, "sess-rec", "question 02") {
		t.Fatal("a deleted entry's message must stay stored")
	}
	if n := len(storedMessages(t, e, "", "sess-rec")); n != 8*3+3 {
		t.Fatalf("stored %d messages, want %d", n, 8*3+3)
	}
}

// An edit inside a range a compaction entry summarized lands right after
// the summary; the summarized original stays under the summary.
func TestReconcileEditUnderSummary(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-rec", 6)
	lines = append(lines, []byte(`{"type":"compaction","id":"c1","summary":"rounds 0 to 2","firstKeptEntryId":"u03","tokensBefore":500,"timestamp":"2026-01-01T00:01:00Z"}`))
	writeLines(t, path, lines, false)
	if res, err := e.Import(ctx, "", path); err != nil || res.Summaries != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	i := 1 + 1*3 // round 1's user message
	lines[i] = bytes.Replace(lines[i], []byte("question 01"), []byte("question 0X"), 1)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	got := assembledRaw(t, e, "sess-rec")
	// summary, the edit, then rounds 3..5.
	if len(got) != 2+3*3 {
		t.Fatalf("assembled %d messages, want %d", len(got), 2+3*3)
	}
	if !bytes.Contains(got[0], []byte("rounds 0 to 2")) || !bytes.Contains(got[1], []byte("question 0X")) || !bytes.Contains(got[2], []byte("question 03")) {
		t.Fatalf("assembled order: %s", bytes.Join(got[:3], []byte("\n")))
	}
	if res, err := e.Check(ctx, false); err != nil || len(res.Problems) > 0 {
		t.Fatalf("check: %+v %v", res.Problems, err)
	}
}

// A reconciliation interrupted after the messages were stored is finished
// by the next import, with the previous read's map saved before the first
// write (without it the old version would stay visible).
func TestReconcileResumesAfterInterruption(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-rec", 6)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	i := 1 + 2*3 + 2
	lines[i] = bytes.Replace(lines[i], []byte("1234"), []byte("9999"), 1)
	writeLines(t, path, lines, false)
	boom := errors.New("injected fault")
	e.cfg.hooks.reconcileFault = func(stage string) error {
		if stage == "reconcile" {
			return boom
		}
		return nil
	}
	_, err := e.Import(ctx, "", path)
	e.cfg.hooks.reconcileFault = nil
	if !errors.Is(err, boom) {
		t.Fatalf("import with a fault: %v", err)
	}
	res, err := e.Import(ctx, "", path)
	if err != nil || res.Resumed || res.Imported != 0 {
		t.Fatalf("import after the fault: %+v %v (want the file read again, nothing new stored)", res, err)
	}
	wantFileOrder(t, e, "sess-rec", path)
	got := bytes.Join(assembledRaw(t, e, "sess-rec"), nil)
	if bytes.Contains(got, []byte("result 02: 1234")) {
		t.Fatal("the old version of the edit is still in the context")
	}
	if strings.Count(string(got), "call02") != 2 {
		t.Fatalf("round 2's call and one result expected in the context")
	}
}

// TestReconcileRandomRewrites rewrites a transcript at random (edits of
// the same or another length, deleted rounds, inserted messages, appended
// rounds) and after every import compares the assembled context with the
// file: the same messages in the same order, tool results after their
// calls, the store's invariants intact and every version ever written
// still stored.
func TestReconcileRandomRewrites(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	rng := newTestRand(t)
	lines := toolTranscript("sess-rnd", 6)
	everWritten := map[string]bool{}
	uniq := 0
	steps := 40
	if testing.Short() {
		steps = 15
	}
	for step := 0; step < steps; step++ {
		if step > 0 {
			for n := 1 + rng.IntN(3); n > 0; n-- {
				i := 1 + rng.IntN(len(lines)-1)
				uniq++
				switch op := rng.IntN(4); {
				case op == 0: // edit, same length when possible
					lines[i] = bytes.Replace(lines[i], []byte(`"timestamp":`), []byte(fmt.Sprintf(`"edit":%d,"timestamp":`, uniq)), 1)
				case op == 1 && bytes.Contains(lines[i], []byte(`"id":"u`)) && i+2 < len(lines): // delete a round (user, call, result)
					lines = append(lines[:i:i], lines[i+3:]...)
				case op == 2 && bytes.Contains(lines[i], []byte(`"role":"user"`)): // insert before a round
					ins := []byte(fmt.Sprintf(`{"type":"message","id":"x%d","message":{"role":"user","content":"inserted %d","timestamp":%d}}`, uniq, uniq, 1000+uniq))
					lines = append(lines[:i:i], append([][]byte{ins}, lines[i:]...)...)
				default: // append a round
					more := toolTranscript("sess-rnd", 1)[1:]
					for k := range more {
						more[k] = bytes.ReplaceAll(more[k], []byte("00"), []byte(fmt.Sprintf("n%d", uniq)))
					}
					lines = append(lines, more...)
				}
			}
		}
		writeLines(t, path, lines, false)
		for _, l := range lines[1:] {
			everWritten[string(l)] = true
		}
		if _, err := e.Import(ctx, "", path); err != nil {
			t.Fatalf("step %d: import: %v", step, err)
		}
		wantFileOrder(t, e, "sess-rnd", path)
	}
	stored := map[string]bool{}
	for _, raw := range storedMessages(t, e, "", "sess-rnd") {
		stored[string(jsonCompact(t, raw))] = true
	}
	for l := range everWritten {
		var ent struct {
			Message json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal([]byte(l), &ent); err != nil {
			t.Fatal(err)
		}
		if !stored[string(jsonCompact(t, ent.Message))] {
			t.Fatalf("a message written once is not stored: %s", ent.Message)
		}
	}
}

// newTestRand returns a generator seeded from the clock (or
// LOSSLESS_TEST_SEED), logging the seed so that a failure can be replayed.
func newTestRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("LOSSLESS_TEST_SEED"); v != "" {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			seed = n
		}
	}
	t.Logf("seed %d (LOSSLESS_TEST_SEED=%d replays it)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// A deleted round that comes back (an undo, a branch switched back) is
// shown again in its place.
func TestReconcileDeletionUndone(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-undo", 4)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	cut := append(append([][]byte{}, lines[:4]...), lines[7:]...) // round 1 deleted
	writeLines(t, path, cut, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	wantFileOrder(t, e, "sess-undo", path)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	wantFileOrder(t, e, "sess-undo", path)
}

// The same new line twice in a rewrite is one message, in its first place;
// the import completes and the next one resumes.
func TestReconcileRepeatedNewLine(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-rep", 4)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	ins := []byte(`{"type":"message","id":"x1","message":{"role":"user","content":"said twice","timestamp":50}}`)
	next := append(append(append([][]byte{}, lines[:4]...), ins, ins), lines[4:]...)
	writeLines(t, path, next, false)
	if res, err := e.Import(ctx, "", path); err != nil || res.Imported != 1 {
		t.Fatalf("rewrite with a repeated new line: %+v %v", res, err)
	}
	wantFileOrder(t, e, "sess-rep", path)
	if res, err := e.Import(ctx, "", path); err != nil || !res.Resumed {
		t.Fatalf("next import: %+v %v", res, err)
	}
}

// A rewrite import stopped right after its first chunk was stored (before
// any checkpoint of its own) is reconciled by the next import: the first
// sequence number it appended was saved before it stored anything.
func TestReconcileStoppedInFirstChunk(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-stop", 6)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	i := 1 + 2*3 + 2
	lines[i] = bytes.Replace(lines[i], []byte("1234"), []byte("7777"), 1)
	writeLines(t, path, lines, false)
	boom := errors.New("stopped")
	e.cfg.hooks.reconcileFault = func(stage string) error {
		if stage == "stored" {
			return boom
		}
		return nil
	}
	_, err := e.Import(ctx, "", path)
	e.cfg.hooks.reconcileFault = nil
	if !errors.Is(err, boom) {
		t.Fatalf("import stopped after its first chunk: %v", err)
	}
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	wantFileOrder(t, e, "sess-stop", path)
}

// A compaction entry written with the rewrite summarizes the range in
// transcript order: the edited message inside it is under the summary,
// not after it.
func TestReconcileCompactionAfterMoves(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-cmp", 6)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	i := 1 + 1*3 + 2 // round 1's result
	lines[i] = bytes.Replace(lines[i], []byte("1234"), []byte("8888"), 1)
	lines = append(lines, []byte(`{"type":"compaction","id":"c1","summary":"rounds 0 to 2","firstKeptEntryId":"u03","tokensBefore":500,"timestamp":"2026-01-01T00:01:00Z"}`))
	writeLines(t, path, lines, false)
	if res, err := e.Import(ctx, "", path); err != nil || res.Summaries != 1 {
		t.Fatalf("rewrite with a compaction entry: %+v %v", res, err)
	}
	got := assembledRaw(t, e, "sess-cmp")
	if len(got) != 1+3*3 || !bytes.Contains(got[0], []byte("rounds 0 to 2")) || !bytes.Contains(got[1], []byte("question 03")) {
		t.Fatalf("assembled (%d): %s", len(got), bytes.Join(got, []byte("\n")))
	}
	if res, err := e.Check(ctx, false); err != nil || len(res.Problems) > 0 {
		t.Fatalf("check: %+v %v", res.Problems, err)
	}
}

// Retention deletes a conversation's order records with it: the same
// session imported again afresh is in order.
func TestRetentionDropsOrderRecords(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := toolTranscript("sess-ret", 4)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	lines[3] = bytes.Replace(lines[3], []byte("1234"), []byte("4444"), 1)
	writeLines(t, path, lines, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	c, err := e.resolve(ctx, "main", "sess-ret", "", false)
	if err != nil {
		t.Fatal(err)
	}
	countOrder := func() int {
		n := 0
		_ = e.st.View(ctx, func(r store.Reader) error {
			for _, err := range r.Orders(c) {
				if err != nil {
					return err
				}
				n++
			}
			return nil
		})
		return n
	}
	if countOrder() == 0 {
		t.Fatal("the reconciliation recorded no order position")
	}
	e.cfg.Retention.MaxAgeDays = 1
	if res, err := e.Retain(ctx, time.Now().AddDate(1, 0, 0)); err != nil || len(res.Deleted) != 1 {
		t.Fatalf("retain: %+v %v", res, err)
	}
	if n := countOrder(); n != 0 {
		t.Fatalf("%d order records left by retention", n)
	}
}
