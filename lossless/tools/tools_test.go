package tools

import (
	"errors"
	"strings"
	"testing"
)

func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{`{"query":"zebra"}`, `{"query":"a","regex":true,"scope":"agent","since":1,"until":2,"sort":"recency","limit":5,"kind":"message"}`,
		`{"id":"sum_1","maxTokens":100,"cursor":"sum_1@3"}`, `{}`, ``, `null`, `[`, `{"maxTokens":-1,"id":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if p, err := DecodeGrepArgs(raw); err != nil {
			if !errors.Is(err, ErrBadArgs) {
				t.Fatalf("grep args error not ErrBadArgs: %v", err)
			}
		} else if strings.TrimSpace(p.Query) == "" {
			t.Fatal("accepted an empty query")
		}
		if p, err := DecodeExpandArgs(raw); err != nil {
			if !errors.Is(err, ErrBadArgs) {
				t.Fatalf("expand args error not ErrBadArgs: %v", err)
			}
		} else if p.ID == "" || p.MaxTokens < 0 {
			t.Fatalf("accepted %+v", p)
		}
	})
}

// Tool results reach the model as written: no HTML escaping of <, >, &.
func TestToolResultsNotHTMLEscaped(t *testing.T) {
	out, err := Output(map[string]string{"snippet": "if a < b && c > d"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"snippet":"if a < b && c > d"}`; out != want {
		t.Fatalf("got %s, want %s", out, want)
	}
}
