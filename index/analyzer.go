package index

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	porterstemmer "github.com/blevesearch/go-porterstemmer"
	"github.com/blevesearch/segment"

	"github.com/lossless-engine/contextengine/ident"
)

// AnalyzerChat is the name of the chat analyzer (Analyze) for an index
// that refers to analyzers by name (package bleveindex registers it with
// Bleve under this name, and its indexes store the name in their mapping).
const AnalyzerChat = "lossless_chat"

// TokenType is the kind of a Token. The values and their order are those
// of Bleve's analysis.TokenType, which package bleveindex converts to.
type TokenType int

// Token types.
const (
	// AlphaNumeric is a word, a number with letters, or a whole identifier.
	AlphaNumeric TokenType = iota
	// Ideographic is a CJK character (Han, Hiragana, Katakana).
	Ideographic
	// Numeric is a number.
	Numeric
	// DateTime is never produced by the chat analyzer.
	DateTime
	// Shingle is never produced by the chat analyzer.
	Shingle
	// Single is a CJK character standing alone (no neighbour to pair).
	Single
	// Double is a CJK bigram.
	Double
	// Boolean is never produced by the chat analyzer.
	Boolean
	// IP is never produced by the chat analyzer.
	IP
)

// Token is one term of an analyzed text.
type Token struct {
	// Term is the analyzed term (it may share memory with the input).
	Term []byte
	// Start and End are the byte offsets of the token in the input.
	Start, End int
	// Position is the 1-based position of the token in the stream (the
	// parts of an identifier share its position).
	Position int
	// Type is the kind of the token.
	Type TokenType
	// KeyWord marks a token protected from stemming (never set by the
	// chat analyzer).
	KeyWord bool
}

// Analyze runs the chat analyzer over text: the analysis of every indexed
// text and every prompt, on every backend (QueryTerms, DocTerms, and the
// Bleve index through package bleveindex). The steps, in order:
//
//   - Unicode word segmentation (UAX #29, package
//     github.com/blevesearch/segment), plus one token, before the first of
//     its words, for every whole identifier that the segmentation splits
//     (package ident: a path, URL, UUID, host, qualified or snake_case
//     name; at most maxIdentLen bytes);
//   - CJK width folding: full-width ASCII to ASCII, half-width Katakana to
//     full-width;
//   - identifier parts: after a token such as "parse_json", "parseJSON",
//     "HTTPServer2" or "index.go", its parts at the same position;
//   - lower case; English possessives ("'s") cut; English stop words
//     dropped; Porter stemming;
//   - CJK bigrams: runs of CJK characters become overlapping pairs (a lone
//     character stays a unigram).
//
// It produces exactly the tokens of the Bleve analysis chain the index
// used before (Bleve's unicode tokenizer and its cjk_width, to_lower,
// possessive_en, stop_en, stemmer_porter and cjk_bigram filters), which a
// test of package bleveindex checks on real chats and by fuzzing. Invalid
// UTF-8 is analyzed as that chain does (an invalid byte becomes U+FFFD in
// the terms). Terms may share memory with text: do not change text while
// the tokens are in use.
func Analyze(text []byte) []Token {
	toks := chatTokenize(text)
	toks = widthFilter(toks)
	toks = identPartsFilter(toks)
	for i := range toks {
		toks[i].Term = toLower(toks[i].Term)
	}
	kept := toks[:0]
	for _, t := range toks {
		t.Term = cutPossessive(t.Term)
		if _, stop := stopWords[string(t.Term)]; stop {
			continue
		}
		if !t.KeyWord {
			t.Term = encodeRunes(porterstemmer.StemWithoutLowerCasing(bytes.Runes(t.Term)))
		}
		kept = append(kept, t)
	}
	return cjkBigrams(kept)
}

// unicodeTokenize splits input into words (UAX #29), numbered from 1.
func unicodeTokenize(input []byte) []Token {
	out := make([]Token, 0, 1+len(input)/6)
	seg := segment.NewWordSegmenterDirect(input)
	start, pos := 0, 1
	for seg.Segment() {
		b := seg.Bytes()
		end := start + len(b)
		if typ := seg.Type(); typ != segment.None {
			out = append(out, Token{Term: b, Start: start, End: end, Position: pos, Type: segmentType(typ)})
			pos++
		}
		start = end
	}
	return out
}

func segmentType(t int) TokenType {
	switch t {
	case segment.Ideo, segment.Kana:
		return Ideographic
	case segment.Number:
		return Numeric
	}
	return AlphaNumeric
}

// maxIdentLen caps whole-identifier tokens (longer ones are left to their
// parts) and the terms a query keeps.
const maxIdentLen = 200

// chatTokenize is unicodeTokenize plus, before the first word of each
// identifier that the segmentation split into several words, the
// identifier itself, as package ident finds it: "src/index/index.go",
// "550e8400-e29b-41d4-a716-446655440000", "user@example.com",
// "https://x.org/a?b=c". (Dashed words and non-ASCII chunks are not
// identifiers: they are indexed by their words only.)
func chatTokenize(input []byte) []Token {
	base := unicodeTokenize(input)
	if len(base) < 2 {
		return base
	}
	var out []Token
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
			out = make([]Token, 0, len(base)+8)
		}
		out = append(out, base[bi:first]...)
		out = append(out, Token{Term: input[s:e], Start: s, End: e, Position: base[first].Position, Type: AlphaNumeric})
		bi = first
	})
	if out == nil {
		return base
	}
	return append(out, base[bi:]...)
}

// widthFilter folds CJK widths in every term: full-width ASCII variants
// (U+FF01..U+FF5E) to ASCII, half-width Katakana (U+FF65..U+FF9F) to
// full-width, a half-width voicing mark joined to the kana before it.
// Invalid UTF-8 becomes U+FFFD.
func widthFilter(toks []Token) []Token {
	for i := range toks {
		if !needsWidth(toks[i].Term) {
			continue
		}
		runes := bytes.Runes(toks[i].Term)
		for j := 0; j < len(runes); j++ {
			ch := runes[j]
			if ch >= 0xFF01 && ch <= 0xFF5E {
				runes[j] -= 0xFEE0
			} else if ch >= 0xFF65 && ch <= 0xFF9F {
				if (ch == 0xFF9E || ch == 0xFF9F) && j > 0 && combineKana(runes, j, ch) {
					runes = append(runes[:j], runes[j+1:]...)
					j--
				} else {
					runes[j] = kanaNorm[ch-0xFF65]
				}
			}
		}
		toks[i].Term = encodeRunes(runes)
	}
	return toks
}

// needsWidth reports whether widthFilter changes b: it holds invalid UTF-8
// or a rune of U+FF01..U+FF9F.
func needsWidth(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || r >= 0xFF01 && r <= 0xFF9F {
			return true
		}
		i += n
	}
	return false
}

var kanaNorm = []rune{
	0x30fb, 0x30f2, 0x30a1, 0x30a3, 0x30a5, 0x30a7, 0x30a9, 0x30e3, 0x30e5,
	0x30e7, 0x30c3, 0x30fc, 0x30a2, 0x30a4, 0x30a6, 0x30a8, 0x30aa, 0x30ab,
	0x30ad, 0x30af, 0x30b1, 0x30b3, 0x30b5, 0x30b7, 0x30b9, 0x30bb, 0x30bd,
	0x30bf, 0x30c1, 0x30c4, 0x30c6, 0x30c8, 0x30ca, 0x30cb, 0x30cc, 0x30cd,
	0x30ce, 0x30cf, 0x30d2, 0x30d5, 0x30d8, 0x30db, 0x30de, 0x30df, 0x30e0,
	0x30e1, 0x30e2, 0x30e4, 0x30e6, 0x30e8, 0x30e9, 0x30ea, 0x30eb, 0x30ec,
	0x30ed, 0x30ef, 0x30f3, 0x3099, 0x309A,
}

var kanaCombineVoiced = []rune{
	78, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
	0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1,
	0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
}

var kanaCombineHalfVoiced = []rune{
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 2, 0, 0, 2,
	0, 0, 2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
}

// combineKana joins the half-width (semi-)voiced mark r at text[pos] to the
// kana before it, if that kana takes it.
func combineKana(text []rune, pos int, r rune) bool {
	prev := text[pos-1]
	if prev >= 0x30A6 && prev <= 0x30FD {
		if r == 0xFF9F {
			text[pos-1] += kanaCombineHalfVoiced[prev-0x30A6]
		} else {
			text[pos-1] += kanaCombineVoiced[prev-0x30A6]
		}
		return text[pos-1] != prev
	}
	return false
}

// encodeRunes is the UTF-8 encoding of runes.
func encodeRunes(runes []rune) []byte {
	b := make([]byte, 0, len(runes))
	for _, r := range runes {
		b = utf8.AppendRune(b, r)
	}
	return b
}

// identPartsFilter adds, after a token such as "parse_json", "parseJSON",
// "HTTPServer2" or "index.go", its parts ("parse", "json"; "parse", "JSON";
// "HTTP", "Server", "2"; "index", "go") at the same position, keeping the
// whole token.
func identPartsFilter(input []Token) []Token {
	var out []Token
	for i, tok := range input {
		if tok.Type == Ideographic || !needsSplit(tok.Term) {
			if out != nil {
				out = append(out, tok)
			}
			continue
		}
		if out == nil {
			out = make([]Token, 0, len(input)+8)
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

func appendParts(out []Token, tok Token) []Token {
	term := tok.Term
	emit := func(s, e int) {
		if e <= s || (s == 0 && e == len(term)) {
			return
		}
		out = append(out, Token{
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

// toLower returns s lower-cased rune by rune (a final 'Σ' of a word of
// two bytes or more becomes 'ς'), in a new slice when anything changes:
// the terms of a token and its parts share memory.
func toLower(s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return lowerInPlace(bytes.Clone(s))
		}
	}
	return s
}

// lowerInPlace lower-cases s in place as Bleve's to_lower filter does.
func lowerInPlace(s []byte) []byte {
	j := 0
	for i := 0; i < len(s); {
		wid := 1
		r := rune(s[i])
		if r >= utf8.RuneSelf {
			r, wid = utf8.DecodeRune(s[i:])
		}
		l := unicode.ToLower(r)
		if l == r {
			i += wid
			j += wid
			continue
		}
		// The final sigma of a word.
		if l == 'σ' && i+2 == len(s) {
			l = 'ς'
		}
		lwid := utf8.RuneLen(l)
		if lwid > wid {
			// A wider lower case (Ⱥ, Ⱦ): the rest by bytes.ToLower.
			rest := bytes.ToLower(s[i:])
			rv := make([]byte, j+len(rest))
			copy(rv[:j], s[:j])
			copy(rv[j:], rest)
			return rv
		}
		utf8.EncodeRune(s[j:], l)
		i += wid
		j += lwid
	}
	return s[:j]
}

// cutPossessive drops a final "'s" ("'", "’" or "＇" before 's' or 'S').
func cutPossessive(term []byte) []byte {
	last, n := utf8.DecodeLastRune(term)
	if last != 's' && last != 'S' {
		return term
	}
	prev, m := utf8.DecodeLastRune(term[:len(term)-n])
	if prev == '’' || prev == '\'' || prev == '＇' {
		return term[:len(term)-n-m]
	}
	return term
}

// cjkBigrams turns each run of adjacent Ideographic tokens into
// overlapping bigrams (Double), a run of one into a unigram (Single), and
// renumbers positions.
func cjkBigrams(input []Token) []Token {
	out := make([]Token, 0, len(input))
	var last Token // the latest CJK character, when held > 0
	held := 0      // characters buffered: 0, 1 or 2 (a pair)
	outPos := 1
	flush := func() {
		if held == 1 {
			out = append(out, Token{Term: last.Term, Start: last.Start, End: last.End, Position: outPos, Type: Single})
			outPos++
		}
		held = 0
	}
	for _, tok := range input {
		if tok.Type != Ideographic {
			flush()
			tok.Position = outPos
			out = append(out, tok)
			outPos++
			continue
		}
		for off := 0; off < len(tok.Term); {
			_, n := utf8.DecodeRune(tok.Term[off:])
			ch := Token{Term: tok.Term[off : off+n], Start: tok.Start + off, End: tok.Start + off + n, Type: tok.Type}
			off += n
			if held > 0 && ch.Start != last.End {
				flush()
			}
			if held > 0 {
				term := make([]byte, 0, len(last.Term)+len(ch.Term))
				term = append(append(term, last.Term...), ch.Term...)
				out = append(out, Token{Term: term, Start: last.Start, End: ch.End, Position: outPos, Type: Double})
				outPos++
				held = 2
			} else {
				held = 1
			}
			last = ch
		}
	}
	if held == 1 {
		out = append(out, Token{Term: last.Term, Start: last.Start, End: last.End, Position: outPos, Type: Single})
	}
	return out
}

// stopWords are the English stop words dropped from the analysis: the
// Snowball English stop list (snowball.tartarus.org, BSD licence), as
// Bleve's stop_en filter has it.
var stopWords = func() map[string]struct{} {
	words := strings.Fields("" +
		"a about above after again against all am an and any are aren't as at be because been " +
		"before being below between both but by can't cannot could couldn't did didn't do does " +
		"doesn't doing don't down during each few for from further had hadn't has hasn't have " +
		"haven't having he he'd he'll he's her here here's hers herself him himself his how how's i " +
		"i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my " +
		"myself no nor not of off on once only or other ought our ours ourselves out over own same " +
		"shan't she she'd she'll she's should shouldn't so some such than that that's the their " +
		"theirs them themselves then there there's these they they'd they'll they're they've this " +
		"those through to too under until up very was wasn't we we'd we'll we're we've were weren't " +
		"what what's when when's where where's which while who who's whom why why's with won't " +
		"would wouldn't you you'd you'll you're you've your yours yourself yourselves")
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}()

// StopWords returns the English stop words the analyzer drops, sorted.
func StopWords() []string {
	out := make([]string, 0, len(stopWords))
	for w := range stopWords {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}
