package index

import (
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	bleveunicode "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"

	"github.com/lossless-engine/contextengine/ident"
)

// Names under which the index's analysis components are registered with
// bleve's registry (they are stored in the index mapping by name).
const (
	// AnalyzerChat is the analyzer of message and summary text: Unicode word
	// segmentation plus whole identifiers, identifier parts, CJK width folding
	// and bigrams, lower case, English possessives, stop words and Porter
	// stemming.
	AnalyzerChat = "lossless_chat"
	// TokenizerChat is the tokenizer of AnalyzerChat: bleve's Unicode
	// tokenizer plus one extra token for every whole identifier (package
	// ident: a path, URL, UUID, host, qualified or snake_case name) that the
	// word segmentation splits.
	TokenizerChat = "lossless_chat_tokenizer"
	// FilterIdentParts is the token filter that adds the parts of a
	// snake_case, camelCase or dotted token next to the whole token.
	FilterIdentParts = "lossless_ident_parts"
)

func init() {
	registry.RegisterTokenizer(TokenizerChat, func(map[string]interface{}, *registry.Cache) (analysis.Tokenizer, error) {
		return chatTokenizer{base: bleveunicode.NewUnicodeTokenizer()}, nil
	})
	registry.RegisterTokenFilter(FilterIdentParts, func(map[string]interface{}, *registry.Cache) (analysis.TokenFilter, error) {
		return identPartsFilter{}, nil
	})
	registry.RegisterAnalyzer(AnalyzerChat, chatAnalyzerConstructor)
}

func chatAnalyzerConstructor(_ map[string]interface{}, cache *registry.Cache) (analysis.Analyzer, error) {
	tok, err := cache.TokenizerNamed(TokenizerChat)
	if err != nil {
		return nil, err
	}
	names := []string{cjk.WidthName, FilterIdentParts, lowercase.Name, en.PossessiveName, en.StopName, porter.Name, cjk.BigramName}
	filters := make([]analysis.TokenFilter, 0, len(names))
	for _, n := range names {
		f, err := cache.TokenFilterNamed(n)
		if err != nil {
			return nil, err
		}
		filters = append(filters, f)
	}
	return &analysis.DefaultAnalyzer{Tokenizer: tok, TokenFilters: filters}, nil
}

// chatTokenizer runs bleve's Unicode tokenizer and adds, before the first
// word of each identifier that the segmentation split into several words,
// the identifier itself, as package ident finds it: "src/index/index.go",
// "550e8400-e29b-41d4-a716-446655440000", "user@example.com",
// "https://x.org/a?b=c". (Dashed words and non-ASCII chunks are not
// identifiers: they are indexed by their words only.)
type chatTokenizer struct {
	base analysis.Tokenizer
}

// maxIdentLen caps whole-identifier tokens (longer ones are left to their
// parts).
const maxIdentLen = 200

func (t chatTokenizer) Tokenize(input []byte) analysis.TokenStream {
	base := t.base.Tokenize(input)
	if len(base) < 2 {
		return base
	}
	var out analysis.TokenStream
	bi := 0 // next base token to copy
	ident.Scan(string(input), func(s, e int, _ ident.Kind) {
		if e-s > maxIdentLen {
			return
		}
		// base tokens inside [s,e)
		first := -1
		n := 0
		for j := bi; j < len(base) && base[j].Start < e; j++ {
			if base[j].Start >= s && base[j].End <= e {
				if first < 0 {
					first = j
				}
				n++
			}
		}
		if n < 2 {
			return
		}
		if out == nil {
			out = make(analysis.TokenStream, 0, len(base)+8)
		}
		out = append(out, base[bi:first]...)
		out = append(out, &analysis.Token{
			Term:     input[s:e],
			Start:    s,
			End:      e,
			Position: base[first].Position,
			Type:     analysis.AlphaNumeric,
		})
		bi = first
	})
	if out == nil {
		return base
	}
	return append(out, base[bi:]...)
}

// identPartsFilter adds, after a token such as "parse_json", "parseJSON",
// "HTTPServer2" or "index.go", its parts ("parse", "json"; "parse", "JSON";
// "HTTP", "Server", "2"; "index", "go") at the same position, keeping the
// whole token.
type identPartsFilter struct{}

func (identPartsFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	var out analysis.TokenStream
	for i, tok := range input {
		if tok.Type == analysis.Ideographic || !needsSplit(tok.Term) {
			if out != nil {
				out = append(out, tok)
			}
			continue
		}
		if out == nil {
			out = make(analysis.TokenStream, 0, len(input)+8)
			out = append(out, input[:i]...)
		}
		out = append(out, tok)
		out = appendParts(out, tok)
	}
	if out == nil {
		return input
	}
	return out
}

// needsSplit reports whether term has an inner separator or a case/digit
// boundary worth splitting on.
func needsSplit(term []byte) bool {
	if len(term) < 3 {
		return false
	}
	prevClass := 0
	for i := 0; i < len(term); i++ {
		c := term[i]
		if c >= utf8.RuneSelf {
			return false
		}
		cl := asciiClass(c)
		if cl == 0 {
			if i > 0 && i < len(term)-1 {
				return true
			}
			continue
		}
		if prevClass != 0 && cl != prevClass && !(prevClass == 2 && cl == 1) {
			return true // lower→Upper, letter↔digit
		}
		prevClass = cl
	}
	return false
}

// asciiClass: 1 lower, 2 upper, 3 digit, 0 other.
func asciiClass(c byte) int {
	switch {
	case c >= 'a' && c <= 'z':
		return 1
	case c >= 'A' && c <= 'Z':
		return 2
	case c >= '0' && c <= '9':
		return 3
	}
	return 0
}

func appendParts(out analysis.TokenStream, tok *analysis.Token) analysis.TokenStream {
	term := tok.Term
	emit := func(s, e int) {
		if e <= s || (s == 0 && e == len(term)) {
			return
		}
		out = append(out, &analysis.Token{
			Term:     term[s:e],
			Start:    tok.Start + s,
			End:      tok.Start + e,
			Position: tok.Position,
			Type:     tok.Type,
		})
	}
	s := 0
	for i := 0; i < len(term); i++ {
		c := term[i]
		cl := asciiClass(c)
		if cl == 0 {
			emit(s, i)
			s = i + 1
			continue
		}
		if i == s {
			continue
		}
		pc := asciiClass(term[i-1])
		switch {
		case pc == 1 && cl == 2, pc == 3 && cl != 3, pc != 3 && cl == 3:
			emit(s, i)
			s = i
		case pc == 2 && cl == 2 && i+1 < len(term) && asciiClass(term[i+1]) == 1:
			// "HTTPServer": split before the 'S'
			emit(s, i)
			s = i
		}
	}
	emit(s, len(term))
	return out
}
