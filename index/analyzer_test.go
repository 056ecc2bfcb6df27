package index

import (
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/ident"
)

// TestChatTokenizerIdentifiers: every identifier package ident finds that
// the word segmentation splits is also one whole token, and a dashed or
// plain word is not.
func TestChatTokenizerIdentifiers(t *testing.T) {
	text := "mail user@example.com about key=max_tokens in (src/a/b.go), see https://x.org/a?b=c; " +
		"a well-known trick, commit 0894b93, host db.internal:5432."
	var terms []string
	for _, tk := range chatTokenize([]byte(text)) {
		terms = append(terms, string(tk.Term))
		if string(tk.Term) != text[tk.Start:tk.End] {
			t.Errorf("token %q at %d-%d, text there %q", tk.Term, tk.Start, tk.End, text[tk.Start:tk.End])
		}
	}
	for _, w := range []string{"user@example.com", "src/a/b.go", "https://x.org/a?b=c", "db.internal:5432", "user", "example.com", "src"} {
		if !slices.Contains(terms, w) {
			t.Errorf("tokens %q lack %q", terms, w)
		}
	}
	for _, w := range []string{"well-known", "key=max_tokens", "(src/a/b.go),"} {
		if slices.Contains(terms, w) {
			t.Errorf("tokens %q have %q", terms, w)
		}
	}
	// The whole tokens are exactly the identifiers of package ident.
	for _, v := range ident.Values(text) {
		if v != "max_tokens" && v != "0894b93" && !slices.Contains(terms, v) { // one word each: no extra token
			t.Errorf("identifier %q is not a token", v)
		}
	}
}
