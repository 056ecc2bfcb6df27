package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

// fixture returns the path of a hand-written fixture in testdata/openclaw.
func fixture(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "openclaw", name)
}

// lines returns the non-empty lines of a file.
func lines(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// member returns the exact bytes of a top-level member's value.
func member(t testing.TB, obj []byte, name string) (json.RawMessage, bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if k == name {
			return v, true
		}
	}
	return nil, false
}

func TestMessageRoundTripRealTranscripts(t *testing.T) {
	for _, path := range testutil.PiMono(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			roles := map[string]int{}
			n := 0
			for i, line := range lines(t, path) {
				raw, ok := member(t, line, "message")
				if !ok {
					continue
				}
				m, err := ParseMessage(raw)
				if err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				if !bytes.Equal(m.Raw(), raw) {
					t.Fatalf("line %d: Raw() differs from the file's bytes", i+1)
				}
				enc, _ := m.MarshalJSON()
				if !bytes.Equal(enc, raw) {
					t.Fatalf("line %d: MarshalJSON differs", i+1)
				}
				var m2 Message
				if err := json.Unmarshal(raw, &m2); err != nil || !bytes.Equal(m2.Raw(), raw) {
					t.Fatalf("line %d: UnmarshalJSON: %v", i+1, err)
				}
				roles[m.Role()]++
				n++
			}
			if n < 900 {
				t.Fatalf("only %d messages", n)
			}
			for _, r := range []string{RoleUser, RoleAssistant, RoleToolResult} {
				if roles[r] == 0 {
					t.Fatalf("no %s message in %v", r, roles)
				}
			}
		})
	}
}

func TestMessageFixtures(t *testing.T) {
	ls := lines(t, fixture("messages.jsonl"))
	seen := map[string]bool{}
	blocks := map[string]bool{}
	for i, raw := range ls {
		m, err := ParseMessage(raw)
		if err != nil {
			t.Fatalf("fixture %d: %v", i+1, err)
		}
		if !bytes.Equal(m.Raw(), raw) {
			t.Fatalf("fixture %d: bytes changed", i+1)
		}
		// Every field, unknown ones included, is still there.
		var want, got map[string]any
		_ = json.Unmarshal(raw, &want)
		_ = json.Unmarshal(m.Raw(), &got)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("fixture %d: fields differ", i+1)
		}
		seen[m.Role()] = true
		for _, b := range m.Blocks() {
			blocks[b.Type] = true
		}
	}
	for _, r := range []string{RoleUser, RoleAssistant, RoleToolResult, RoleBashExecution, RoleCustom,
		RoleBranchSummary, RoleCompactionSummary, "futureRole"} {
		if !seen[r] {
			t.Errorf("no fixture of role %s", r)
		}
	}
	for _, b := range []string{BlockText, BlockThinking, BlockImage, BlockToolCall} {
		if !blocks[b] {
			t.Errorf("no fixture of block %s", b)
		}
	}
}

func TestMessageAccessors(t *testing.T) {
	ls := lines(t, fixture("messages.jsonl"))
	parse := func(i int) Message { return MustParseMessage(string(ls[i])) }

	if m := parse(0); !m.ContentIsString() || m.Text() != "plain string content with <html> & é escapes" || m.Timestamp() != 1767323046000 {
		t.Fatalf("string content: %q %d", m.Text(), m.Timestamp())
	}
	a := parse(2)
	if a.Provider() != "anthropic" || a.Model() != "claude-opus-4-5" || a.API() != "anthropic-messages" ||
		a.StopReason() != "toolUse" || a.Usage() == nil || a.Usage().TotalTokens != 57 || a.Usage().CacheRead != 5 {
		t.Fatalf("assistant fields wrong: %+v", a.Usage())
	}
	calls := a.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "toolu_01" || calls[0].Name != "bash" || string(calls[0].Arguments) != `{"command":"ls -la","timeout":30}` {
		t.Fatalf("tool call %+v", calls)
	}
	if a.Text() != "Sure." || a.SearchText(true) != "Sure.\nLet me think.\nbash {\"command\":\"ls -la\",\"timeout\":30}" ||
		a.SearchText(false) != "Sure.\nbash {\"command\":\"ls -la\",\"timeout\":30}" {
		t.Fatalf("text %q / %q", a.Text(), a.SearchText(true))
	}
	if e := parse(3); e.ErrorMessage() != "overloaded" || e.HasVisibleContent() || !e.Blocks()[0].Redacted {
		t.Fatal("error assistant")
	}
	if r := parse(6); r.ToolCallID() != "toolu_01" || r.ToolName() != "bash" || r.IsError() || string(r.Details()) != `{"exitCode":0,"truncated":false}` {
		t.Fatal("toolResult")
	}
	if b := parse(8); b.Command() != "git status" || b.Output() != "On branch main\n" || *b.ExitCode() != 0 || !b.ExcludeFromContext() || b.Text() != "git status\nOn branch main" {
		t.Fatalf("bash %q", b.Text())
	}
	if b := parse(9); b.ExitCode() != nil {
		t.Fatal("null exitCode")
	}
	if c := parse(10); c.CustomType() != "reminder" || c.Text() != "remember the tests" {
		t.Fatal("custom")
	}
	if s := parse(11); s.Summary() != "Tried approach A on a branch." || s.FromID() != "e9" || s.Text() != s.Summary() {
		t.Fatal("branchSummary")
	}
	if s := parse(12); s.TokensBefore() != 175004 || s.FirstKeptEntryID() != "e4" {
		t.Fatal("compactionSummary")
	}
	if s := parse(13); s.Timestamp() != 1767323045000 || s.Text() != "spaced out" {
		t.Fatalf("RFC 3339 timestamp %d", s.Timestamp())
	}
	if f := parse(14); KnownRole(f.Role()) || f.Blocks()[0].Type != "hologram" {
		t.Fatal("unknown role")
	}
	if v, ok := parse(1).Field("unknownTopLevel"); !ok || string(v) != `{"nested":[1,2,3]}` {
		t.Fatal("unknown field")
	}
}

func TestParseMessageRejects(t *testing.T) {
	for _, raw := range []string{``, `null`, `[]`, `"user"`, `{}`, `{"role":""}`, `{"role":5}`, `{"role":"user"`, "{\"role\":\"user\",\"content\":\"\xff\"}"} {
		if _, err := ParseMessage([]byte(raw)); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("ParseMessage(%q) = %v", raw, err)
		}
	}
	// A field of an unexpected type does not reject a well-formed object.
	m, err := ParseMessage([]byte(`{"role":"toolResult","toolCallId":7,"toolName":"x","content":[]}`))
	if err != nil || m.ToolName() != "x" {
		t.Fatalf("lenient parse: %v", err)
	}
}

func TestWithFieldKeepsOtherBytes(t *testing.T) {
	raw := `{ "role":"toolResult", "toolCallId":"a.b", "details":{"x":[1,2]},"isError":false, "zz":1 }`
	m := MustParseMessage(raw)
	m2, err := m.WithField("toolCallId", "a_b")
	if err != nil || string(m2.Raw()) != `{ "role":"toolResult", "toolCallId":"a_b", "details":{"x":[1,2]},"isError":false, "zz":1 }` {
		t.Fatalf("WithField: %s %v", m2.Raw(), err)
	}
	m3, err := m.WithoutField("details")
	if err != nil || string(m3.Raw()) != `{ "role":"toolResult", "toolCallId":"a.b", "isError":false, "zz":1 }` {
		t.Fatalf("WithoutField: %s %v", m3.Raw(), err)
	}
	m4, err := m.WithoutField("zz")
	if err != nil || string(m4.Raw()) != `{ "role":"toolResult", "toolCallId":"a.b", "details":{"x":[1,2]},"isError":false }` {
		t.Fatalf("WithoutField last: %s %v", m4.Raw(), err)
	}
	m5, err := m.WithField("new", map[string]int{"k": 1})
	if err != nil || string(m5.Raw()) != `{ "role":"toolResult", "toolCallId":"a.b", "details":{"x":[1,2]},"isError":false, "zz":1,"new":{"k":1}}` {
		t.Fatalf("WithField new: %s %v", m5.Raw(), err)
	}
	if same, _ := m.WithoutField("absent"); !bytes.Equal(same.Raw(), m.Raw()) {
		t.Fatal("WithoutField of an absent field changed bytes")
	}
	if !bytes.Equal(m.Raw(), []byte(raw)) {
		t.Fatal("original modified")
	}
}
