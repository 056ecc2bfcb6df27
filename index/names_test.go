package index

import (
	"reflect"
	"testing"
)

func TestNameTerms(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string // names as written; compared analyzed
	}{
		{"What did Caroline research?", []string{"Caroline"}},
		{"What are Joanna's hobbies?", []string{"Joanna"}},
		{"When did Caroline and Melanie go to a pride festival together?", []string{"Caroline", "Melanie"}},
		{"What LGBTQ+ events has Caroline participated in?", []string{"Caroline"}}, // an acronym is a subject
		{"Caroline went hiking. Where did she go?", nil},                           // a sentence's first word
		{"fix the failing test in assemble.go", nil},
		{"", nil},
	} {
		var want map[string]bool
		for _, n := range tc.want {
			if want == nil {
				want = map[string]bool{}
			}
			for _, term := range QueryTerms(n) {
				want[term] = true
			}
		}
		if got := NameTerms(tc.text); !reflect.DeepEqual(got, want) {
			t.Errorf("NameTerms(%q) = %v, want %v", tc.text, got, want)
		}
	}
}
