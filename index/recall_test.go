package index

import (
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestDateSpans(t *testing.T) {
	d := func(y int, m time.Month, day int) int64 {
		return time.Date(y, m, day, 0, 0, 0, 0, time.UTC).UnixMilli()
	}
	cases := []struct {
		text string
		want []int64 // span starts + dayBefore/monthBefore
	}{
		{"what happened on 3 June, 2023?", []int64{d(2023, 6, 3)}},
		{"on June 3rd 2023 and on 2023-07-04", []int64{d(2023, 6, 3), d(2023, 7, 4)}},
		{"October 13, 2023", []int64{d(2023, 10, 13)}},
		{"the 1st of Dec. 2022", []int64{d(2022, 12, 1)}},
		{"in July 2023", []int64{d(2023, 7, 1)}},
		{"in June", nil},
		{"31 June, 2023", []int64{d(2023, 6, 1)}}, // no such day: the month
		{"no dates here 42", nil},
		{"2023-13-45", nil},
	}
	for _, c := range cases {
		got := DateSpans(c.text)
		if len(got) != len(c.want) {
			t.Errorf("%q: %v", c.text, got)
			continue
		}
		for i, sp := range got {
			if sp.From > c.want[i] || sp.To <= c.want[i]+int64(24*time.Hour/time.Millisecond) {
				t.Errorf("%q: span %d = %v, want around %d", c.text, i, sp, c.want[i])
			}
		}
	}
}

// FuzzQueryParsing: the prompt is outside input; turning it into terms and
// date spans must never fail, and its results stay bounded and valid.
func FuzzQueryParsing(f *testing.F) {
	for _, s := range []string{"", "hello world", "src/a_b/cD.go 550e8400-e29b-41d4", "北京 東京タワー", "3 June, 2023 2023-06-03",
		"AND OR NOT +a -b \"phrase\" field:value *wild? ~fuzzy^2", "\xff\xfe", "a.b.c.d.e.f.g.h.i.j.k", "___---///"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms := QueryTerms(s)
		if len(terms) > MaxQueryTerms {
			t.Fatalf("%d terms", len(terms))
		}
		seen := map[string]bool{}
		for _, term := range terms {
			if term == "" || !utf8.ValidString(term) || seen[term] {
				t.Fatalf("bad term %q in %q", term, terms)
			}
			seen[term] = true
		}
		spans := DateSpans(s)
		if len(spans) > maxSpans {
			t.Fatalf("%d spans", len(spans))
		}
		for _, sp := range spans {
			if sp.From >= sp.To {
				t.Fatalf("empty span %v", sp)
			}
		}
	})
}

// textKeyReference is TextKey as first written (the keys stored in indexes
// built before must not change).
func textKeyReference(s string) uint64 {
	h := fnv.New64a()
	var buf [4]byte
	any := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n := utf8.EncodeRune(buf[:], r)
			h.Write(buf[:n])
			any = true
		}
	}
	if !any {
		return 0
	}
	return h.Sum64() | 1
}

func TestTextKey(t *testing.T) {
	texts := []string{"", "   ", "?!", "Hello, World!", "hello world", "HELLO\tworld.", "ÄÖÜ straße İstanbul", "日本語のテキスト 123",
		"invalid \xff\xfe bytes", "emoji 😀 and ΣΊΣΥΦΟΣ", strings.Repeat("long text ", 1000), "a\u0301 combining"}
	for _, s := range texts {
		if got, want := TextKey(s), textKeyReference(s); got != want {
			t.Errorf("TextKey(%q) = %x, want %x", s, got, want)
		}
	}
	if TextKey("Hello, World!") != TextKey("hello world") || TextKey("?!") != 0 || TextKey("a") == TextKey("b") {
		t.Error("folding")
	}
	// Parts written one by one: the key of the parts joined by separators.
	var k TextKeyer
	k.WriteString("tool call ")
	k.Write([]byte(`{"path":"src/Ä.go"}`))
	k.WriteString("")
	k.WriteString("bash")
	if got, want := k.Sum(), TextKey("tool call\n{\"path\":\"src/Ä.go\"}\nbash"); got != want {
		t.Errorf("TextKeyer %x, want %x", got, want)
	}
	var empty TextKeyer
	empty.WriteString("--")
	if empty.Sum() != 0 {
		t.Error("no letters: not 0")
	}
}

// TestPruneTermsPostingBudget: the kept query terms walk at most
// maxPostings postings, the rarest kept first; a prompt of terms commoner
// than that keeps nothing.
func TestPruneTermsPostingBudget(t *testing.T) {
	out, dfs, _ := pruneTerms([]string{"everyday", "zeppelin", "chatter"}, []uint64{150, 1, 150}, 150, 100)
	if !slices.Equal(out, []string{"zeppelin"}) || !slices.Equal(dfs, []uint64{1}) {
		t.Fatalf("kept %v %v, want only the rare one", out, dfs)
	}
	if out, _, _ := pruneTerms([]string{"everyday", "chatter"}, []uint64{150, 150}, 150, 100); len(out) != 0 {
		t.Fatalf("common words only: kept %v", out)
	}
	if out, _, _ := PruneTerms([]string{"everyday", "chatter"}, []uint64{50, 40}, 150); !slices.Equal(out, []string{"chatter", "everyday"}) {
		t.Fatalf("within the budget: kept %v", out)
	}
}

// TestGateItemShare: once the best hit passes the relevance gate, the
// others are kept at gateItemShare of the threshold and no lower; below
// the threshold, nothing is kept.
func TestGateItemShare(t *testing.T) {
	hit := func(id string, v float64) Hit {
		return Hit{Doc: Doc{ID: id}, Relevance: Relevance{Coverage: v, Specificity: v}}
	}
	const min = 0.65
	cands := []Hit{hit("best", 0.9), hit("half", min*gateItemShare), hit("below", min*gateItemShare*0.99)}
	var got []string
	for _, h := range gate(cands, min) {
		got = append(got, h.ID)
	}
	if !slices.Equal(got, []string{"best", "half"}) {
		t.Fatalf("kept %v", got)
	}
	if kept := gate([]Hit{hit("weak", min*0.99)}, min); len(kept) != 0 {
		t.Fatalf("below the threshold: kept %d", len(kept))
	}
}
