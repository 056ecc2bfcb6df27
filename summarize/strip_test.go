package summarize

import (
	"strings"
	"testing"
)

func TestStripReasoning(t *testing.T) {
	cases := []struct{ in, want string }{
		{"<think>plan it</think>\nThe summary.", "The summary."},
		{"<THINK>a</THINK>x<think>b</think>y", "xy"},
		{"<thinking>deep</thinking> ok", "ok"},
		{"<reasoning>r</reasoning>done", "done"},
		{"<think>never closed, all reasoning", ""},
		{"Answer first <think>then rambling", "Answer first"},
		{"reasoning without an opening tag</think>Summary", "Summary"},
		{"<think>only thinking</think>", ""},
		{"   plain summary  ", "plain summary"},
		{"mentions a think tag name but no tags", "mentions a think tag name but no tags"},
		{"<\x0fthink>not a tag", "<\x0fthink>not a tag"},
		{"\xe8</think>kept", "kept"},
		{"<ThInKiNg>x</tHiNkInG>y", "y"},
	}
	for _, c := range cases {
		if got := StripReasoning(c.in); got != c.want {
			t.Errorf("StripReasoning(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzStripReasoning(f *testing.F) {
	for _, s := range []string{"<think>x</think>y", "</think>", "<think>", "<thinking><think></think></thinking>z",
		"a<THINK>b</think>c</think>d", "<reasoning>", "plain", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := StripReasoning(s)
		if len(out) > len(s) {
			t.Fatalf("output longer than input")
		}
		lower := strings.ToLower(out)
		for _, tag := range reasoningTags {
			if strings.Contains(lower, "<"+tag+">") || strings.Contains(lower, "</"+tag+">") {
				t.Fatalf("tag %s left in %q", tag, out)
			}
		}
		if StripReasoning(out) != out {
			t.Fatalf("not idempotent: %q -> %q", out, StripReasoning(out))
		}
	})
}
