package records

import (
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

func TestDescribeContent(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"b":[1,2],"a":{"x":1}}`, "JSON: object {a: object(1 keys), b: array(2) of number}"},
		{`[{"k":1},{"k":2}]`, "JSON: array(2) of object(1 keys)"},
		{"a,b\n1,2\n3,4\n5,6", "CSV: 3 rows, 2 columns; header: a,b"},
		{"package x\nfunc A() {}\nfunc B() {}\ntype T struct{}\n", "Code signatures:\n  func A() {}"},
		{strings.Repeat("word ", 500), "\n…\nTail:\n"},
	}
	for _, c := range cases {
		if got := DescribeContent(c.in); !strings.Contains(got, c.want) {
			t.Errorf("DescribeContent(%.40q) = %q, want it to contain %q", c.in, got, c.want)
		}
	}
}

// TestLargeReferenceDeterministic: the reference of a large tool result
// keeps its role and pair ids, names the key, and is the same bytes every
// time.
func TestLargeReferenceDeterministic(t *testing.T) {
	m := msg(t, `{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"`+strings.Repeat("x", 100)+`"}],"timestamp":7}`)
	h := HashRaw(m.Raw())
	a, b := LargeReference(m, h, 5000), LargeReference(m, h, 5000)
	if string(a) != string(b) {
		t.Fatalf("two references differ:\n%s\n%s", a, b)
	}
	ref := msg(t, string(a))
	if ref.Role() != m.Role() || ref.ToolCallID() != "c1" || ref.ToolName() != "read" {
		t.Errorf("reference %s lost the role or the pair", a)
	}
	if !strings.Contains(ref.Text(), LargeRefPrefix) || !strings.Contains(ref.Text(), "5000 tokens") {
		t.Errorf("reference text %q names neither the key nor the tokens", ref.Text())
	}
}

func msg(t testing.TB, raw string) core.Message {
	t.Helper()
	m, err := core.ParseMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
