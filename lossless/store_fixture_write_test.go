package lossless

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
)

var writeFixture = flag.Bool("write-fixture", false,
	"regenerate lossless/testdata/store-format2 and its golden file (TestWriteStoreFixture); only with the code that defines the format")

// TestWriteStoreFixture writes the store fixture (testdata/store-format2)
// and its golden file through the engine's public API, then checks them as
// TestStoreFixtureOpens does. Skipped unless -write-fixture is given.
//
// The store holds every record family of doc.go: the format record; two
// agents' conversations keyed by session key, by session id, and one whose
// session id changed; messages of every kind (small, compressed from 256
// bytes, large content with its reference, heartbeat, hidden thinking-only
// and excluded turns, a role outside the contract, tool calls and results,
// unicode and odd JSON spacing); leaf and condensed summaries; an imported
// transcript with a compaction entry, rewritten and reconciled (order
// records, superseded items); a second one whose reconciliation was
// interrupted (the saved entry map); a transcript the host keeps (its
// cursor and entry map); a committed turn; forked subagents (records,
// session-id aliases, snapshots), one ended (the parent link), and an
// isolated one still prepared.
func TestWriteStoreFixture(t *testing.T) {
	if !*writeFixture {
		t.Skip("regenerate with: go test ./lossless -run TestWriteStoreFixture -write-fixture. " +
			"Only while the storage code is the code that wrote the fixture: once the format code changed, " +
			"regenerating replaces the proof that old stores still open by a store of the new code, which proves nothing.")
	}
	unlock := lockFixtureTranscripts(t)
	b := newFixtureBuilder(t)
	b.build()
	g := b.finish()
	unlock()

	if err := os.RemoveAll(fixtureStoreDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(fixtureStoreDir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyStoreFiles(t, b.dir, fixtureStoreDir)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtureGoldenFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// What was written must pass the test as written.
	checkStoreFixture(t, readFixtureGolden(t), fixtureStoreDir)
}

// fixtureBuilder writes the fixture store and records what it gave the
// engine.
type fixtureBuilder struct {
	t   *testing.T
	ctx context.Context
	e   *Engine
	dir string
	g   *fixtureGolden
	ts  int64
	// keys maps each conversation's message keys to their sequence numbers.
	keys map[*fixtureConv]map[[16]byte]uint64
	// snapshots are the parent's items (as shown) at each fork's spawn.
	snapshots map[*fixtureConv][]fixtureRef
	// summaries are the summaries read while building, by id.
	summaries map[string]dag.Summary
}

func newFixtureBuilder(t *testing.T) *fixtureBuilder {
	dir := t.TempDir()
	e, err := Open(context.Background(), fixtureConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	e.SetSummarizer(fixtureSummarizer{})
	g := &fixtureGolden{
		Comment: []string{
			"Golden file of the store fixture testdata/store-format2, written by TestWriteStoreFixture (-write-fixture) with the format-2 code.",
			"Message raw bytes are the bytes given to the engine. TestStoreFixtureOpens checks the store against this file through the public API.",
			"Do not regenerate once the storage code changed: the point is that a store written before the change still opens and reads the same.",
		},
		Format: FormatVersion, Tokenizer: core.CounterChars4,
	}
	return &fixtureBuilder{t: t, ctx: context.Background(), e: e, dir: dir, g: g, ts: 1_767_225_600_000,
		keys: map[*fixtureConv]map[[16]byte]uint64{}, snapshots: map[*fixtureConv][]fixtureRef{}, summaries: map[string]dag.Summary{}}
}

func (b *fixtureBuilder) newConv(name, agent, key string) *fixtureConv {
	c := &fixtureConv{Name: name, Agent: agent, Key: key}
	b.g.Conversations = append(b.g.Conversations, c)
	b.keys[c] = map[[16]byte]uint64{}
	return c
}

// expect records raws as stored in c, in order, but for those c holds
// already (a message is stored once per conversation), and returns how
// many are new.
func (b *fixtureBuilder) expect(c *fixtureConv, raws ...string) int {
	n := 0
	for _, raw := range raws {
		k := fixtureKey([]byte(raw))
		if _, ok := b.keys[c][k]; ok {
			continue
		}
		seq := uint64(len(c.Messages) + 1)
		b.keys[c][k] = seq
		c.Messages = append(c.Messages, fixtureMsg{Seq: seq, Raw: raw})
		n++
	}
	return n
}

func (b *fixtureBuilder) seqOf(c *fixtureConv, raw string) uint64 {
	seq, ok := b.keys[c][fixtureKey([]byte(raw))]
	if !ok {
		b.t.Fatalf("%s: message not stored: %s", c.Name, raw)
	}
	return seq
}

func (b *fixtureBuilder) session(c *fixtureConv, sid string) {
	for _, s := range c.SessionIDs {
		if s == sid {
			return
		}
	}
	c.SessionIDs = append(c.SessionIDs, sid)
}

func (b *fixtureBuilder) ingest(c *fixtureConv, sid string, heartbeat bool, raws ...string) {
	b.t.Helper()
	b.session(c, sid)
	raws = b.stamped(raws...)
	msgs := make([]core.Message, len(raws))
	for i, raw := range raws {
		m, err := core.ParseMessage([]byte(raw))
		if err != nil {
			b.t.Fatalf("%s: %v: %s", c.Name, err, raw)
		}
		msgs[i] = m
	}
	res, err := b.e.IngestBatch(b.ctx, core.IngestBatchParams{SessionID: sid, SessionKey: c.Key, Messages: msgs, IsHeartbeat: heartbeat})
	if err != nil {
		b.t.Fatalf("%s: ingest: %v", c.Name, err)
	}
	if want := b.expect(c, raws...); res.IngestedCount != want {
		b.t.Fatalf("%s: ingested %d, want %d", c.Name, res.IngestedCount, want)
	}
}

// Messages, as a host or a model writes them.

// Messages are built with a hole for their timestamp, filled when they are
// given to the engine, so that timestamps grow in the order of the store.
const tsHole = "__TS__"

func (b *fixtureBuilder) stamp() int64 { b.ts += 1_000; return b.ts }

// stamped fills the timestamp holes of raws, in order.
func (b *fixtureBuilder) stamped(raws ...string) []string {
	out := make([]string, len(raws))
	for i, raw := range raws {
		out[i] = strings.Replace(raw, tsHole, fmt.Sprint(b.stamp()), 1)
	}
	return out
}

func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

func (b *fixtureBuilder) user(text string) string {
	return fmt.Sprintf(`{"role":"user","content":%s,"timestamp":%s}`, jsonString(text), tsHole)
}

func (b *fixtureBuilder) answer(text string) string {
	return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%s}],"api":"openai-responses","provider":"fixture","model":"fixture-1","usage":{"input":120,"output":12},"stopReason":"stop","timestamp":%s}`,
		jsonString(text), tsHole)
}

func (b *fixtureBuilder) call(id, name, args string) string {
	return fmt.Sprintf(`{"role":"assistant","content":[{"type":"toolCall","id":%q,"name":%q,"arguments":%s}],"stopReason":"toolUse","timestamp":%s}`,
		id, name, args, tsHole)
}

func (b *fixtureBuilder) result(id, name, text string, isError bool) string {
	return fmt.Sprintf(`{"role":"toolResult","toolCallId":%q,"toolName":%q,"content":[{"type":"text","text":%s}],"isError":%t,"timestamp":%s}`,
		id, name, jsonString(text), isError, tsHole)
}

func (b *fixtureBuilder) thinkingOnly(text string) string {
	return fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":%s,"thinkingSignature":"fixture-sig"}],"stopReason":"stop","timestamp":%s}`,
		jsonString(text), tsHole)
}

// turn is a user prompt, a tool call, its result (over 256 bytes, so that
// it is stored compressed) and an answer.
func (b *fixtureBuilder) turn(i int, topic string) []string {
	id := fmt.Sprintf("call_%02d", i)
	path := fmt.Sprintf("notes/%02d.md", i)
	body := strings.Repeat(fmt.Sprintf("%s line: the quick brown fox jumps over the lazy dog (%s)\n", path, topic), 6)
	return []string{
		b.user(fmt.Sprintf("turn %d: please read %s about %s", i, path, topic)),
		b.call(id, "read", fmt.Sprintf(`{"path":%q}`, path)),
		b.result(id, "read", body, false),
		b.answer(fmt.Sprintf("I read %s: it is about %s.", path, topic)),
	}
}

// largeCode is about 4,500 characters of code: over LargeContentTokens.
func largeCode(tag string) string {
	var sb strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&sb, "func handler%s%02d(w http.ResponseWriter, r *http.Request) {\n\tfmt.Fprintf(w, \"handler %02d\")\n}\n", tag, i, i)
	}
	return sb.String()
}

// largeJSON is about 3,500 characters of JSON.
func largeJSON() string {
	var parts []string
	for i := 0; i < 60; i++ {
		parts = append(parts, fmt.Sprintf(`{"id":%d,"name":"row %02d","ok":%t}`, i, i, i%3 == 0))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (b *fixtureBuilder) build() {
	b.buildChat()
	b.buildOthers()
	b.buildImports()
	b.buildHost()
}

const (
	fixtureChatKey  = "agent:main:chat"
	fixtureForkAKey = "agent:main:subagent:fork-a"
	fixtureForkBKey = "agent:main:subagent:fork-b"
	fixtureIsoKey   = "agent:ops:subagent:iso-1"
)

// buildChat writes the main conversation: twelve turns with every kind of
// message and a session-id change, compacted into leaf and condensed
// summaries; more turns; two forked subagents; a committed turn.
func (b *fixtureBuilder) buildChat() {
	t, ctx, e := b.t, b.ctx, b.e
	chat := b.newConv("chat", "main", fixtureChatKey)
	sid := "chat-s1"
	topics := []string{"apples", "boats", "unicode", "thinking", "large code", "heartbeats", "a new session id",
		"custom roles", "bash", "errors", "pears", "rivers"}
	for i, topic := range topics {
		if i == 6 {
			sid = "chat-s2" // the host started a new session id under the same key
		}
		if i == 5 { // a heartbeat turn
			b.ingest(chat, sid, true, b.user("HEARTBEAT check 5"), b.answer("HEARTBEAT_OK"))
		}
		msgs := b.turn(i, topic)
		switch i {
		case 2: // unicode, escapes and odd spacing, kept byte for byte
			msgs[0] = fmt.Sprintf("{ \"role\" : \"user\" ,\n\t\"content\" : \"Unicode: h\\u00e9llo, 中文, emoji 🚀, escaped \\ud83d\\ude00, tab\\tnewline\\nquote \\\" slash \\/ <b>&amp;</b> \\u2028 end\" ,\n  \"timestamp\" : %s }", tsHole)
			msgs[3] = fmt.Sprintf(`{"timestamp":%s,"content":[{"text":"numbers and keys as written: ä ö ü ß","type":"text"}],"role":"assistant","x-extra":{"n":1.0e2,"z":-0.0,"big":12345678901234567890,"empty":{},"list":[ ]}}`, tsHole)
		case 3: // a thinking-only turn: stored, never shown
			msgs = append(msgs[:3], b.thinkingOnly("Let me think about this quietly."), msgs[3])
		case 4: // large content: a reference in the context
			msgs[2] = b.result("call_04", "read", largeCode("A"), false)
		case 7: // a role outside the contract, stored verbatim
			msgs = append(msgs, fmt.Sprintf(`{"role":"x-fixture-note","note":"a role outside the contract, stored verbatim","timestamp":%s}`, tsHole))
		case 8: // a bash execution excluded from the context
			msgs = append(msgs, fmt.Sprintf(`{"role":"bashExecution","command":"ls -la","output":"total 0\n","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":%s}`, tsHole))
		case 9: // a failed tool call
			msgs[2] = b.result("call_09", "read", "ENOENT: no such file or directory, open 'notes/09.md'", true)
		}
		b.ingest(chat, sid, false, msgs...)
	}
	b.session(chat, "chat-s2")

	// Compaction: leaf summaries, then condensed ones.
	for round := 0; ; round++ {
		res, err := e.Compact(ctx, core.CompactParams{SessionID: "chat-s2", SessionKey: fixtureChatKey, TokenBudget: 1600 - 500*round, Force: true})
		if err != nil || !res.OK {
			t.Fatalf("compact: %+v %v", res, err)
		}
		if b.hasCondensed(chat) {
			break
		}
		if round == 3 {
			t.Fatal("compaction made no condensed summary")
		}
	}

	// After the compaction: large JSON, a heartbeat, hidden turns.
	b.ingest(chat, "chat-s2", false, b.turn(12, "a large JSON result")[:2]...)
	b.ingest(chat, "chat-s2", false, b.result("call_12", "read", largeJSON(), false), b.answer("The JSON has 60 rows."))
	b.ingest(chat, "chat-s2", true, b.user("HEARTBEAT check 13"), b.answer("HEARTBEAT_OK (13)"))
	b.ingest(chat, "chat-s2", false, b.user("turn 14: think first"), b.thinkingOnly("Quiet thoughts of turn 14."), b.answer("Thought about it."))
	b.ingest(chat, "chat-s2", false, b.user("turn 15: list the directory"),
		fmt.Sprintf(`{"role":"bashExecution","command":"ls","output":"a\nb\n","exitCode":0,"excludeFromContext":true,"timestamp":%s}`, tsHole),
		b.answer("The directory holds a and b."))

	// A forked subagent: the snapshot of the parent's context ('Y'), its
	// record ('G') and its session id ('g').
	forkA := b.spawnFork(chat, "fork-a", fixtureForkAKey, "fork-a-s1")
	b.ingest(forkA, "fork-a-s1", false, b.user("fork a: summarise the notes"), b.call("call_fa", "grep", `{"pattern":"fox"}`),
		b.result("call_fa", "grep", "notes/00.md: fox\nnotes/01.md: fox\n", false), b.answer("Every note mentions the fox."))
	b.assemble(forkA.lastSession(), forkA.Key) // the child started: active

	b.ingest(chat, "chat-s2", false, b.turn(16, "after the first fork")...)

	forkB := b.spawnFork(chat, "fork-b", fixtureForkBKey, "fork-b-s1")
	b.ingest(forkB, "fork-b-s1", false, b.user("fork b: count the rows"), b.answer("Sixty rows."))
	b.assemble(forkB.lastSession(), "") // found by its session id alone ('g'): active

	// The first child ends: linked to its parent ('K').
	if err := e.OnSubagentEnded(ctx, core.SubagentEndedParams{ChildSessionKey: fixtureForkAKey, Reason: core.SubagentCompleted}); err != nil {
		t.Fatal(err)
	}

	// A committed turn ('T') whose first message was ingested before.
	turn := b.stamped(b.turn(17, "a committed turn")...)
	b.ingest(chat, "chat-s2", false, turn[0])
	msgs := make([]core.Message, len(turn))
	for i, raw := range turn {
		msgs[i] = core.MustParseMessage(raw)
	}
	tr := fixtureTurn{SessionID: "chat-s2", SessionKey: fixtureChatKey, AdvancementKey: "fixture-advance-17"}
	res, err := e.CommitTurn(ctx, core.CommitTurnParams{AdvancementKey: tr.AdvancementKey, SessionID: tr.SessionID, SessionKey: tr.SessionKey,
		Admission: core.AdmissionAnchor{EntryAnchor: core.EntryAnchor{SessionID: "chat-s2", EntryID: "entry-17-user"}, LogicalTurnID: "turn-17", Role: core.RoleUser},
		Terminal:  core.EntryAnchor{SessionID: "chat-s2", EntryID: "entry-17-answer"}, Messages: msgs})
	if err != nil || res.Status != core.CommitCommitted {
		t.Fatalf("commit turn: %+v %v", res, err)
	}
	if n := b.expect(chat, turn...); n != 3 {
		t.Fatalf("commit stored %d new messages, want 3", n)
	}
	for _, raw := range turn {
		tr.Seqs = append(tr.Seqs, b.seqOf(chat, raw))
	}
	chat.Turns = append(chat.Turns, tr)
}

func (b *fixtureBuilder) hasCondensed(c *fixtureConv) bool {
	conv, err := b.e.Conversation(b.ctx, c.Agent, c.Key)
	if err != nil {
		b.t.Fatal(err)
	}
	items, err := conv.Items(b.ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, it := range items {
		if it.IsSummary() && it.Depth > 0 {
			return true
		}
	}
	return false
}

func (b *fixtureBuilder) assemble(sid, key string) [][]byte {
	b.t.Helper()
	res, err := b.e.Assemble(b.ctx, core.AssembleParams{SessionID: sid, SessionKey: key, TokenBudget: fixtureBudget})
	if err != nil {
		b.t.Fatalf("assemble %s/%s: %v", sid, key, err)
	}
	out := make([][]byte, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = m.Raw()
	}
	return out
}

// spawnFork prepares a forked child of parent, recording the parent's
// context as shown at this moment (the snapshot).
func (b *fixtureBuilder) spawnFork(parent *fixtureConv, name, childKey, childSID string) *fixtureConv {
	asm := b.assemble(parent.lastSession(), parent.Key)
	items, shown := b.shown(parent, asm)
	if shown != len(asm) {
		b.t.Fatalf("%s: the parent's context does not match its items", name)
	}
	_, err := b.e.PrepareSubagentSpawn(b.ctx, core.SubagentSpawnParams{ParentSessionKey: parent.Key, ParentSessionID: parent.lastSession(),
		ChildSessionKey: childKey, ChildSessionID: childSID, ContextMode: core.ContextModeFork})
	if err != nil {
		b.t.Fatal(err)
	}
	c := b.newConv(name, parent.Agent, childKey)
	c.ForkParent = parent.Name
	for _, it := range items {
		b.snapshots[c] = append(b.snapshots[c], fixtureRef{Ref: it.Ref, Shown: it.Shown})
	}
	return c
}

// shown matches c's current items against the assembled messages asm and
// says how each is shown; it returns how many of asm it matched.
func (b *fixtureBuilder) shown(c *fixtureConv, asm [][]byte) ([]fixtureItem, int) {
	t := b.t
	conv, err := b.e.Conversation(b.ctx, c.Agent, c.lastSession())
	if err != nil {
		t.Fatal(err)
	}
	items, err := conv.Items(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []fixtureItem
	j := 0
	for _, it := range items {
		fi := fixtureItem{Item: it, Shown: shownHidden}
		if j < len(asm) {
			if it.IsSummary() {
				s := b.summary(conv, it.Ref.ID)
				if bytes.Equal(asm[j], RenderSummary(s).Raw()) {
					fi.Shown = shownSummary
				}
			} else {
				w := &c.Messages[it.Ref.Seq-1]
				k := fixtureKey([]byte(w.Raw))
				switch {
				case bytes.Equal(asm[j], []byte(w.Raw)):
					fi.Shown = shownMessage
				case bytes.Contains(asm[j], []byte(LargeRefPrefix+hex.EncodeToString(k[:]))):
					fi.Shown = shownReference
					if w.Reference != "" && w.Reference != string(asm[j]) {
						t.Fatalf("%s: message %d has two references", c.Name, w.Seq)
					}
					w.Reference = string(asm[j])
				}
			}
		}
		if fi.Shown != shownHidden {
			j++
		}
		out = append(out, fi)
	}
	return out, j
}

// summary reads summary id of conv and everything under it.
func (b *fixtureBuilder) summary(conv *Conversation, id string) dag.Summary {
	if s, ok := b.summaries[id]; ok {
		return s
	}
	s, err := conv.Summary(b.ctx, id)
	if err != nil {
		b.t.Fatalf("summary %s: %v", id, err)
	}
	b.summaries[id] = s
	for _, src := range s.Sources {
		if src.Kind == dag.RefSummary {
			b.summary(conv, src.ID)
		}
	}
	return s
}

// buildOthers writes a second agent's conversation that reuses a session id
// of the first, a conversation keyed by its session id alone, and an
// isolated subagent that never started.
func (b *fixtureBuilder) buildOthers() {
	chat := b.g.conv(b.t, "chat")
	desk := b.newConv("ops-desk", "ops", "agent:ops:desk")
	b.ingest(desk, "chat-s1", false, chat.Messages[0].Raw, b.answer("ops: the same first message, another agent"),
		b.user(strings.Repeat("ops compressible prompt ", 20)))
	solo := b.newConv("solo", "main", "")
	b.ingest(solo, "solo-1", false, b.user("solo: a session without a key"),
		fmt.Sprintf("{\"role\":\"assistant\",   \"content\":[ {\"type\":\"text\" , \"text\":\"spaced  out\"} ],\r\n\"timestamp\":%s}", tsHole),
		b.user("solo: ünïcödé ✓"), b.answer("solo: done"))
	_, err := b.e.PrepareSubagentSpawn(b.ctx, core.SubagentSpawnParams{ParentSessionKey: desk.Key, ParentSessionID: "chat-s1",
		ChildSessionKey: fixtureIsoKey, ContextMode: core.ContextModeIsolated})
	if err != nil {
		b.t.Fatal(err)
	}
}

// transcript lines.
type fixtureLine struct {
	id, msg, line string
}

func msgLine(id, parent, msg string) fixtureLine {
	return fixtureLine{id: id, msg: msg, line: fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-02T00:00:00.000Z","message":%s}`, id, parent, msg)}
}

// rounds are n rounds of a user question, a tool call and its result.
func (b *fixtureBuilder) rounds(file string, from, n int) []fixtureLine {
	var out []fixtureLine
	for i := from; i < from+n; i++ {
		u := fmt.Sprintf("u%02d", i)
		a := fmt.Sprintf("a%02d", i)
		r := fmt.Sprintf("r%02d", i)
		call := fmt.Sprintf("call_%s%02d", file, i)
		parent := fmt.Sprintf("r%02d", i-1)
		if i == 0 {
			parent = "session"
		}
		m := b.stamped(b.user(fmt.Sprintf("file %s question %02d", file, i)),
			b.call(call, "read", fmt.Sprintf(`{"path":"%s/%02d.txt"}`, file, i)),
			b.result(call, "read", fmt.Sprintf("file %s result %02d: 1234", file, i), false))
		out = append(out, msgLine(u, parent, m[0]), msgLine(a, u, m[1]), msgLine(r, a, m[2]))
	}
	return out
}

func fileContent(lines []fixtureLine) string {
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l.line)
		sb.WriteString("\n")
	}
	return sb.String()
}

func (b *fixtureBuilder) fileMsgs(lines []fixtureLine) []string {
	var out []string
	for _, l := range lines {
		if l.msg != "" {
			out = append(out, l.msg)
		}
	}
	return out
}

// edit replaces old by new in the message of line i (same length).
func editLine(l fixtureLine, old, new string) fixtureLine {
	l.msg = strings.Replace(l.msg, old, new, 1)
	l.line = strings.Replace(l.line, old, new, 1)
	return l
}

// buildImports imports two transcripts: one with a compaction entry,
// rewritten (an edit, a deletion, insertions, an append) and reconciled;
// one rewritten whose reconciliation is interrupted.
func (b *fixtureBuilder) buildImports() {
	t, ctx, e := b.t, b.ctx, b.e
	// File B.
	path := filepath.Join(fixtureTranscriptDir, "imported.jsonl")
	imp := b.newConv("imported", "main", "")
	head := fixtureLine{line: `{"type":"session","version":4,"id":"imp-1","timestamp":"2026-01-02T00:00:00.000Z","cwd":"/work/fixture"}`}
	lines := append([]fixtureLine{head}, b.rounds("b", 0, 4)...)
	// Odd spacing in an imported message.
	lines[4] = msgLine("u01", "r00", strings.Replace(lines[4].msg, `{"role":"user","content":"file b question 01","timestamp":`, "{ \"role\":\"user\",  \"content\" : \"file b question 01 — spaced\" ,\t\"timestamp\" :", 1))
	lines = append(lines, fixtureLine{id: "cb1", line: `{"type":"compaction","id":"cb1","parentId":"r03","timestamp":"2026-01-02T00:30:00.000Z","summary":"Rounds 0 to 2 of file b: questions 00 to 02 answered.","firstKeptEntryId":"u03","tokensBefore":600}`})
	lines = append(lines, b.rounds("b", 4, 4)...)
	writeFileAtomic(t, path, []byte(fileContent(lines)))
	b.session(imp, "imp-1")
	res, err := e.Import(ctx, "main", path)
	if err != nil || res.SessionID != "imp-1" || res.Summaries != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	if want := b.expect(imp, b.fileMsgs(lines)...); res.Imported != want {
		t.Fatalf("import stored %d, want %d", res.Imported, want)
	}
	// Rewritten: round 5's result edited (same length), round 6 deleted,
	// two messages inserted before round 7, one appended.
	var next []fixtureLine
	for _, l := range lines {
		switch l.id {
		case "r05":
			l = editLine(l, "1234", "5678")
		case "u06", "a06", "r06":
			continue
		case "u07":
			ins := b.stamped(b.user("inserted one"), b.answer("inserted two"))
			next = append(next, msgLine("ins1", "r05", ins[0]), msgLine("ins2", "ins1", ins[1]))
		}
		next = append(next, l)
	}
	next = append(next, msgLine("end", "r07", b.stamped(b.user("the end of file b"))[0]))
	writeFileAtomic(t, path, []byte(fileContent(next)))
	res, err = e.Import(ctx, "main", path)
	if err != nil || res.Resumed {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	if want := b.expect(imp, b.fileMsgs(next)...); res.Imported != want || want != 4 {
		t.Fatalf("re-import stored %d, want %d (4)", res.Imported, want)
	}
	f := b.file("b", imp, path, "imp-1", next, false)
	f.MovedEntry = "r05"
	b.g.Files = append(b.g.Files, f)

	// File C: its reconciliation interrupted.
	path = filepath.Join(fixtureTranscriptDir, "interrupted.jsonl")
	intr := b.newConv("interrupted", "main", "")
	head = fixtureLine{line: `{"type":"session","version":4,"id":"imp-2","timestamp":"2026-01-02T01:00:00.000Z","cwd":"/work/fixture"}`}
	lines = append([]fixtureLine{head}, b.rounds("c", 0, 4)...)
	writeFileAtomic(t, path, []byte(fileContent(lines)))
	b.session(intr, "imp-2")
	res, err = e.Import(ctx, "main", path)
	if want := b.expect(intr, b.fileMsgs(lines)...); err != nil || res.Imported != want {
		t.Fatalf("import: %+v %v, want %d", res, err, want)
	}
	for i, l := range lines {
		if l.id == "r02" {
			lines[i] = editLine(l, "1234", "9999")
		}
	}
	writeFileAtomic(t, path, []byte(fileContent(lines)))
	boom := errors.New("fixture: interrupted before the reconciliation")
	e.cfg.hooks.reconcileFault = func(stage string) error {
		if stage == "reconcile" {
			return boom
		}
		return nil
	}
	_, err = e.Import(ctx, "main", path)
	e.cfg.hooks.reconcileFault = nil
	if !errors.Is(err, boom) {
		t.Fatalf("interrupted import: %v", err)
	}
	b.expect(intr, b.fileMsgs(lines)...) // the edit was stored before the fault
	b.g.Files = append(b.g.Files, b.file("c", intr, path, "imp-2", lines, true))
}

func (b *fixtureBuilder) file(name string, c *fixtureConv, path, sid string, lines []fixtureLine, interrupted bool) fixtureFile {
	f := fixtureFile{Name: name, Agent: c.Agent, Path: path, SessionID: sid, Conv: c.Name, Content: fileContent(lines), Interrupted: interrupted}
	for _, l := range lines {
		if l.msg != "" {
			f.Entries = append(f.Entries, fixtureEntry{ID: l.id, Seq: b.seqOf(c, l.msg)})
		}
	}
	return f
}

// buildHost bootstraps a transcript the host keeps: ten entries, the
// third a tool result large enough for maintain to replace.
func (b *fixtureBuilder) buildHost() {
	c := b.newConv("host", "main", "agent:main:hostchat")
	h := &b.g.Host
	*h = fixtureHost{Agent: "main", SessionID: "host-1", SessionKey: c.Key, Conv: c.Name, Maintain: []string{"h3"}}
	raws := []string{
		b.user("host: read the big log"),
		b.call("call_h", "read", `{"path":"big.log"}`),
		b.result("call_h", "read", strings.Repeat("host log line: all systems nominal, nothing to report\n", 60), false),
		b.answer("host: the log is quiet"),
	}
	for i := 0; i < 3; i++ {
		raws = append(raws, b.user(fmt.Sprintf("host: question %d", i)), b.answer(fmt.Sprintf("host: answer %d", i)))
	}
	raws = b.stamped(raws...)
	for i, raw := range raws {
		m := core.MustParseMessage(raw)
		en := fixtureHostEntry{EntryID: fmt.Sprintf("h%d", i+1), Seq: int64(i + 1), Raw: raw}
		h.Entries = append(h.Entries, en)
		h.entries = append(h.entries, core.TranscriptEntry{EntryID: en.EntryID, Seq: en.Seq, Message: m, Role: m.Role()})
	}
	h.Cursor = fmt.Sprint(len(raws))
	b.session(c, h.SessionID)
	r, err := b.e.Bootstrap(b.ctx, h.bootstrap())
	if err != nil || !r.Bootstrapped {
		b.t.Fatalf("host bootstrap: %+v %v", r, err)
	}
	if want := b.expect(c, raws...); r.ImportedMessages != want {
		b.t.Fatalf("host bootstrap stored %d, want %d", r.ImportedMessages, want)
	}
	h.entries, h.reads = nil, nil
}

// finish records what the store holds that the inputs do not say (ids,
// items, summaries, records), checks it against the inputs, and closes
// the engine.
func (b *fixtureBuilder) finish() *fixtureGolden {
	t, ctx, e, g := b.t, b.ctx, b.e, b.g
	infos, err := e.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// Parents before their forks: a fork's prefix renders the parent's.
	for _, pass := range []bool{false, true} {
		for _, c := range g.Conversations {
			if (c.ForkParent != "") != pass {
				continue
			}
			conv, err := e.Conversation(ctx, c.Agent, c.lastSession())
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			c.ID = conv.ID()
			for _, in := range infos {
				if in.ID == c.ID {
					c.Session = in
				}
			}
			if !reflect.DeepEqual(c.Session.SessionIDs, c.SessionIDs) || c.Session.Key != c.Key || c.Session.Agent != c.Agent {
				t.Fatalf("%s: stored as %+v, want session ids %v, key %q", c.Name, c.Session, c.SessionIDs, c.Key)
			}
			for i := range c.Messages {
				w := &c.Messages[i]
				meta, err := conv.MessageMeta(ctx, w.Seq)
				if err != nil {
					t.Fatal(err)
				}
				m := core.MustParseMessage(w.Raw)
				if meta.Role != m.Role() || meta.Timestamp != m.Timestamp() {
					t.Fatalf("%s: message %d meta %+v, the input says %s at %d", c.Name, w.Seq, meta, m.Role(), m.Timestamp())
				}
				w.Tokens, w.Timestamp, w.Role = meta.Tokens, meta.Timestamp, meta.Role
			}
			asm := b.assemble(c.lastSession(), c.Key)
			if c.ForkParent != "" {
				c.Fork = b.snapshots[c]
				p := g.conv(t, c.ForkParent)
				var prefix [][]byte
				for _, r := range c.Fork {
					if r.Shown == shownSummary {
						p.addSummary(b.summaries[r.Ref.ID], b.summaries)
					}
					if x := p.render(t, r.Ref, r.Shown); x != nil {
						prefix = append(prefix, x)
					}
				}
				if len(asm) < len(prefix) || !equalByteSlices(asm[:len(prefix)], prefix) {
					t.Fatalf("%s: the context does not start with the parent's snapshot", c.Name)
				}
				asm = asm[len(prefix):]
			}
			items, n := b.shown(c, asm)
			if n != len(asm) {
				t.Fatalf("%s: %d of %d assembled messages matched the items", c.Name, n, len(asm))
			}
			c.Items = items
			for _, it := range items {
				if it.IsSummary() {
					c.addSummary(b.summary(conv, it.Ref.ID), b.summaries)
				}
			}
			c.Linked, err = e.LinkedChildren(ctx, c.lastSession(), c.Key)
			if err != nil {
				t.Fatal(err)
			}
			g.Messages += int64(len(c.Messages))
		}
	}
	for _, key := range []string{fixtureForkAKey, fixtureForkBKey, fixtureIsoKey} {
		s, ok, err := e.Subagent(ctx, key)
		if err != nil || !ok {
			t.Fatalf("subagent %s: %v %v", key, ok, err)
		}
		g.Subagents = append(g.Subagents, s)
	}
	b.checkCoverage()
	// The live engine passes the test before it is closed.
	verifyFixture(t, e, g)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	g.Records = b.countRecords()
	return g
}

// addSummary adds s and the summaries under it to c's, once.
func (c *fixtureConv) addSummary(s dag.Summary, all map[string]dag.Summary) {
	if s.ID == "" || slicesContainSummary(c.Summaries, s.ID) {
		return
	}
	c.Summaries = append(c.Summaries, s)
	for _, src := range s.Sources {
		if src.Kind == dag.RefSummary {
			c.addSummary(all[src.ID], all)
		}
	}
}

// checkCoverage fails when the fixture lacks a case it is meant to hold.
func (b *fixtureBuilder) checkCoverage() {
	t, g := b.t, b.g
	chat := g.conv(t, "chat")
	var leaf, condensed, imported, refs, hidden, compressible int
	for _, c := range g.Conversations {
		for _, s := range c.Summaries {
			switch {
			case s.Method == "imported":
				imported++
			case s.Kind == dag.KindCondensed:
				condensed++
			case s.Kind == dag.KindLeaf:
				leaf++
			}
		}
		for _, it := range c.Items {
			switch it.Shown {
			case shownReference:
				refs++
			case shownHidden:
				hidden++
			}
		}
		for _, m := range c.Messages {
			if len(m.Raw) >= 256 {
				compressible++
			}
		}
	}
	if leaf == 0 || condensed == 0 || imported == 0 || refs == 0 || hidden < 4 || compressible == 0 {
		t.Fatalf("coverage: %d leaf, %d condensed, %d imported summaries, %d references, %d hidden items, %d messages of 256 bytes or more",
			leaf, condensed, imported, refs, hidden, compressible)
	}
	if len(chat.SessionIDs) != 2 || len(chat.Turns) != 1 || len(chat.Linked) != 1 {
		t.Fatalf("coverage: chat has session ids %v, turns %v, linked %v", chat.SessionIDs, chat.Turns, chat.Linked)
	}
}

// The key prefixes countRecords tells apart (store/badgerstore/doc.go has
// the layout).
const (
	pMeta  = 0x00
	pName  = 'N'
	pMsg   = 'M'
	pItem  = 'I'
	pEntry = 'E'
	pCheck = 'F'
)

// countRecords counts the closed store's records by family (the layout of
// store/badgerstore's keys.go, and host.go's for a transcript the host
// keeps) and fails when one is missing. It opens the directory read-only
// with Badger and reads raw keys: it checks what this code wrote, for the
// golden file's reader; the test never reads keys.
func (b *fixtureBuilder) countRecords() map[string]int {
	n := map[string]int{}
	db, err := badger.Open(badger.DefaultOptions(b.dir).WithReadOnly(true).WithLogger(nil))
	if err != nil {
		b.t.Fatalf("open the fixture read-only: %v", err)
	}
	defer db.Close()
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			switch k[0] {
			case pMeta:
				n["format"]++
			case pName:
				_, name, _ := bytes.Cut(k[1:], []byte{0})
				n["N "+string(name[:2])]++
			case pMsg:
				n[fmt.Sprintf("M record byte %d", v[0])]++
			case pItem:
				n["I"]++
				for f, name := range map[byte]string{flagHeartbeat: "heartbeat", flagLarge: "large", flagHidden: "hidden", flagSuperseded: "superseded"} {
					if v[1]&f != 0 {
						n["I "+name]++
					}
				}
			case pEntry:
				n["E "+string(k[17:18])]++
			case pCheck:
				_, path, _ := bytes.Cut(k[1:], []byte{0})
				if bytes.HasPrefix(path, []byte("host:")) {
					n["F host"]++
				} else {
					n["F file"]++
				}
			default:
				n[string(k[:1])]++
			}
		}
		return nil
	})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, fam := range []string{"format", "N k:", "N s:", "C", "M record byte 1", "M record byte 2", "H",
		"I", "I heartbeat", "I large", "I hidden", "I superseded", "L", "S",
		"E x", "E i", "E o", "E f", "E h", "O", "F file", "F host", "T", "G", "g", "Y", "K"} {
		if n[fam] == 0 {
			b.t.Errorf("the fixture holds no record of family %q: %v", fam, n)
		}
	}
	return n
}
