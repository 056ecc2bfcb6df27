package index

import (
	"strings"
	"testing"
)

// TestTextKeyStable: text keys are stored by both recall indexes (Bleve's
// docs, PostgreSQL's recall_docs), so a key never changes for a text
// (FNV-1a of the folded text; hash/fnv over the same bytes gave the same
// values on 20,000 random texts of mixed scripts).
func TestTextKeyStable(t *testing.T) {
	long := ""
	for i := 0; i < 50; i++ {
		long += "Line of Text, number " + string(rune('0'+i%10)) + "; "
	}
	for _, tc := range []struct {
		text string
		key  uint64
	}{
		{"", 0},
		{" ,.;\n", 0},
		{"Hello, World!", 0x10d9315e924a5581},
		{"hello world", 0x10d9315e924a5581},
		{"Ünïcödé 42 — ok", 0x6685822aaa8bafa3},
		{"中文 text", 0xbbc835afc9cddc1f},
		{long, 0xf3618743e18bf129}, // more than the keyer's buffer
	} {
		if got := TextKey(tc.text); got != tc.key {
			t.Errorf("TextKey(%.40q) = %#x, want %#x", tc.text, got, tc.key)
		}
		// In parts, as a text is written field by field.
		var k TextKeyer
		for _, f := range strings.SplitAfter(tc.text, " ") {
			k.WriteString(f)
		}
		if got := k.Sum(); got != tc.key {
			t.Errorf("TextKeyer over %.40q's fields = %#x, want %#x", tc.text, got, tc.key)
		}
	}
}

func BenchmarkTextKey(b *testing.B) {
	text := strings.Repeat("The cache timeout was raised to 30s after the router tests failed; ", 30)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		TextKey(text)
	}
}
