package contextengine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

func roles(ms []core.Message) string {
	var parts []string
	for _, m := range ms {
		switch m.Role() {
		case core.RoleToolResult:
			parts = append(parts, "R("+m.ToolCallID()+")")
		case core.RoleAssistant:
			s := "A"
			for _, c := range m.ToolCalls() {
				s += "[" + c.ID + "]"
			}
			parts = append(parts, s)
		case core.RoleUser:
			parts = append(parts, "U")
		default:
			parts = append(parts, m.Role())
		}
	}
	return strings.Join(parts, " ")
}

func call(id string) core.Message {
	return core.AssistantToolCall(id, "read", map[string]string{"path": "a.go"}, 1)
}

func result(id string) core.Message { return core.ToolResult(id, "read", "ok", false, 2) }

func twoCalls(a, b string) core.Message {
	return core.MustParseMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"x"},`+
		`{"type":"toolCall","id":%q,"name":"read","arguments":{},"extra":1},{"type":"toolCall","id":%q,"name":"ls","arguments":{}}],`+
		`"stopReason":"toolUse","vendorField":{"keep":true}}`, a, b))
}

func TestSanitizePairing(t *testing.T) {
	u := core.UserText("hi", 0)
	tests := []struct {
		name string
		in   []core.Message
		want string
		rep  SanitizeReport
	}{
		{"well formed", []core.Message{u, call("c1"), result("c1"), core.AssistantText("done", 3)},
			"U A[c1] R(c1) A", SanitizeReport{}},
		{"orphan result dropped", []core.Message{u, result("zz"), core.AssistantText("x", 1)},
			"U A", SanitizeReport{DroppedOrphans: 1}},
		{"missing result synthesised", []core.Message{u, call("c1"), u},
			"U A[c1] R(c1) U", SanitizeReport{Synthesized: 1}},
		{"missing at end", []core.Message{u, call("c1")},
			"U A[c1] R(c1)", SanitizeReport{Synthesized: 1}},
		{"displaced result moved", []core.Message{u, call("c1"), u, result("c1")},
			"U A[c1] R(c1) U", SanitizeReport{MovedResults: 1}},
		{"duplicate result dropped", []core.Message{u, call("c1"), result("c1"), result("c1")},
			"U A[c1] R(c1)", SanitizeReport{DroppedOrphans: 1}},
		{"result before its call", []core.Message{u, result("c1"), call("c1")},
			"U A[c1] R(c1)", SanitizeReport{DroppedOrphans: 1, Synthesized: 1}},
		{"results reordered to call order", []core.Message{u, twoCalls("a", "b"), result("b"), result("a")},
			"U A[a][b] R(a) R(b)", SanitizeReport{}},
		{"partial answers", []core.Message{u, twoCalls("a", "b"), result("b"), u},
			"U A[a][b] R(a) R(b) U", SanitizeReport{Synthesized: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, rep := Sanitize(tc.in)
			if got := roles(out); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if rep != tc.rep {
				t.Fatalf("report %+v, want %+v", rep, tc.rep)
			}
			if rep.Changed() != (tc.rep != SanitizeReport{}) {
				t.Fatal("Changed() wrong")
			}
		})
	}
}

func TestSanitizeKeepsBytesAndSynthesisShape(t *testing.T) {
	in := []core.Message{core.UserText("hi", 0), call("c1"), result("c1")}
	out, _ := Sanitize(in)
	for i := range in {
		if !bytes.Equal(in[i].Raw(), out[i].Raw()) {
			t.Fatalf("message %d changed: %s", i, out[i].Raw())
		}
	}
	out, _ = Sanitize([]core.Message{call("c9")})
	syn := out[1]
	if syn.ToolCallID() != "c9" || syn.ToolName() != "read" || !syn.IsError() || syn.Text() != MissingToolResultText {
		t.Fatalf("synthetic result = %s", syn.Raw())
	}
}

func TestSanitizeNormalisesIDs(t *testing.T) {
	long := strings.Repeat("x", 80)
	in := []core.Message{core.UserText("hi", 0), twoCalls("call.1|abc", long),
		result("call.1|abc"), result(long), twoCalls("call_1_abc", "ok-id")}
	out, rep := Sanitize(in)
	calls := out[1].ToolCalls()
	if calls[0].ID != "call_1_abc" || calls[1].ID != strings.Repeat("x", 64) {
		t.Fatalf("ids = %q %q", calls[0].ID, calls[1].ID)
	}
	for _, c := range append(calls, out[4].ToolCalls()...) {
		if !ValidToolCallID(c.ID) {
			t.Fatalf("invalid id %q", c.ID)
		}
	}
	if out[2].ToolCallID() != "call_1_abc" || out[3].ToolCallID() != strings.Repeat("x", 64) {
		t.Fatalf("results not renamed: %q %q", out[2].ToolCallID(), out[3].ToolCallID())
	}
	// A distinct valid id that collides with a normalised one gets a suffix.
	if got := out[4].ToolCalls()[0].ID; got == "call_1_abc" || !strings.HasPrefix(got, "call_1_abc") {
		t.Fatalf("collision not resolved: %q", got)
	}
	if rep.RenamedIDs != 3 {
		t.Fatalf("renamed %d", rep.RenamedIDs)
	}
	// Everything else in the rewritten message is kept.
	raw := string(out[1].Raw())
	for _, keep := range []string{`"vendorField":{"keep":true}`, `"extra":1`, `{"type":"text","text":"x"}`} {
		if !strings.Contains(raw, keep) {
			t.Fatalf("lost %s in %s", keep, raw)
		}
	}
}

func TestSanitizeStripsDetails(t *testing.T) {
	r := core.MustParseMessage(`{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"out"}],"details":{"diff":"big"},"isError":false,"custom":7}`)
	out, rep := Sanitize([]core.Message{call("c1"), r})
	if rep.StrippedDetails != 1 {
		t.Fatalf("report %+v", rep)
	}
	want := `{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"out"}],"isError":false,"custom":7}`
	if got := string(out[1].Raw()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestValidateMergesUserTurns(t *testing.T) {
	s := core.MustParseMessage(`{"role":"user","content":"plain","timestamp":5}`)
	b := core.UserText("block", 6)
	img := core.MustParseMessage(`{"role":"user","content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`)
	a := core.AssistantText("reply", 7)
	in := []core.Message{s, b, img, a, b}
	if out := Validate(in, ValidateOptions{}); len(out) != len(in) {
		t.Fatal("merged without the option")
	}
	out := Validate(in, ValidateOptions{MergeConsecutiveUser: true})
	if roles(out) != "U A U" {
		t.Fatalf("roles %s", roles(out))
	}
	blocks := out[0].Blocks()
	if len(blocks) != 3 || blocks[0].Text != "plain" || blocks[1].Text != "block" || blocks[2].Type != core.BlockImage {
		t.Fatalf("merged blocks %+v", blocks)
	}
	if out[0].Timestamp() != 5 {
		t.Fatal("first message's fields not kept")
	}
	if !bytes.Equal(out[2].Raw(), b.Raw()) || !bytes.Equal(out[1].Raw(), a.Raw()) {
		t.Fatal("unmerged messages changed")
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(out[0].Raw(), &probe) != nil {
		t.Fatal("merged message is not JSON")
	}
}

func TestLimitBatches(t *testing.T) {
	build := func(turns int, summary bool) []core.Message {
		var ms []core.Message
		if summary {
			ms = append(ms, core.MustParseMessage(`{"role":"compactionSummary","summary":"s","tokensBefore":9}`))
		}
		for i := 0; i < turns; i++ {
			ms = append(ms, core.UserText(fmt.Sprintf("u%d", i), int64(i)), call(fmt.Sprintf("c%d", i)),
				result(fmt.Sprintf("c%d", i)), core.AssistantText("a", 0))
		}
		return ms
	}
	countUsers := func(ms []core.Message) int {
		n := 0
		for _, m := range ms {
			if m.Role() == core.RoleUser {
				n++
			}
		}
		return n
	}
	tests := []struct{ n, turns, kept int }{
		{0, 10, 10},
		{2, 2, 2}, {2, 3, 3}, // ceil(1.5*2)=3: no trimming yet
		{2, 4, 2}, {2, 5, 3}, {2, 6, 2}, {2, 7, 3}, // batches of 2
		{1, 2, 2}, {1, 3, 1}, {1, 4, 2}, {1, 5, 1},
		{4, 6, 6}, {4, 7, 4}, {4, 9, 6}, {4, 10, 4},
		{3, 5, 5}, {3, 6, 3}, {3, 8, 5}, {3, 9, 3},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("n=%d/turns=%d", tc.n, tc.turns), func(t *testing.T) {
			for _, summary := range []bool{false, true} {
				in := build(tc.turns, summary)
				out := Limit(in, tc.n)
				if got := countUsers(out); got != tc.kept {
					t.Fatalf("kept %d user turns, want %d", got, tc.kept)
				}
				first := 0
				if summary {
					if out[0].Role() != core.RoleCompactionSummary {
						t.Fatal("leading summary dropped")
					}
					first = 1
				}
				if out[first].Role() != core.RoleUser {
					t.Fatalf("cut does not land on a user message: %s", out[first].Role())
				}
				last := out[len(out)-1]
				if !bytes.Equal(last.Raw(), in[len(in)-1].Raw()) {
					t.Fatal("tail changed")
				}
			}
		})
	}
}

func TestSanitizeRealTranscripts(t *testing.T) {
	for _, path := range testutil.PiMono(t) {
		tr, err := core.ReadTranscript(path)
		if err != nil {
			t.Fatal(err)
		}
		in := tr.Window().Messages()
		out, rep := Sanitize(in)
		checkPairing(t, out)
		// Only toolResults lose their details; every other message that is
		// kept is byte-identical.
		same := 0
		for _, m := range out {
			if m.Role() != core.RoleToolResult {
				same++
			}
		}
		orig := 0
		for _, m := range in {
			if m.Role() != core.RoleToolResult {
				orig++
			}
		}
		if same != orig {
			t.Fatalf("%s: %d non-result messages became %d", filepath.Base(path), orig, same)
		}
		// Independently: calls with no result anywhere after them.
		unanswered := 0
		for i, m := range in {
			for _, c := range m.ToolCalls() {
				found := false
				for _, r := range in[i+1:] {
					if r.Role() == core.RoleToolResult && r.ToolCallID() == c.ID {
						found = true
						break
					}
				}
				if !found {
					unanswered++
				}
			}
		}
		if rep.Synthesized != unanswered || rep.DroppedOrphans != 0 {
			t.Fatalf("%s: synthesised %d, unanswered %d", filepath.Base(path), rep.Synthesized, unanswered)
		}
		t.Logf("%s: %d messages, report %+v", filepath.Base(path), len(in), rep)
		limited := Limit(Validate(out, ValidateOptions{MergeConsecutiveUser: true}), 10)
		checkPairing(t, limited)
	}
}
