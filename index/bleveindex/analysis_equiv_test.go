package bleveindex_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	bleveunicode "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/index/bleveindex"
	"github.com/lossless-engine/contextengine/internal/locomo"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// The chat analyzer as it was built from Bleve's analysis packages before
// package index had its own (index.Analyze): Bleve's unicode tokenizer
// plus whole identifiers, then Bleve's cjk_width, the identifier parts,
// to_lower, possessive_en, stop_en, stemmer_porter and cjk_bigram. It is
// the reference the tests below hold index.Analyze to, token for token.
func referenceAnalyzer(tb testing.TB) analysis.Analyzer {
	tb.Helper()
	cache := registry.NewCache()
	filters := []analysis.TokenFilter{cjk.NewCJKWidthFilter(), refIdentParts{}, lowercase.NewLowerCaseFilter(), en.NewPossessiveFilter()}
	stopMap, err := cache.TokenMapNamed(en.StopName)
	if err != nil {
		tb.Fatal(err)
	}
	filters = append(filters, stop.NewStopTokensFilter(stopMap), porter.NewPorterStemmer(), cjk.NewCJKBigramFilter(false))
	return &analysis.DefaultAnalyzer{Tokenizer: refTokenizer{base: bleveunicode.NewUnicodeTokenizer()}, TokenFilters: filters}
}

// refTokenizer is the chat tokenizer as it was (Bleve tokens).
type refTokenizer struct{ base analysis.Tokenizer }

func (t refTokenizer) Tokenize(input []byte) analysis.TokenStream {
	base := t.base.Tokenize(input)
	if len(base) < 2 {
		return base
	}
	var out analysis.TokenStream
	bi := 0
	ident.Scan(string(input), func(s, e int, _ ident.Kind) {
		if e-s > 200 {
			return
		}
		first, n := -1, 0
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
		out = append(out, &analysis.Token{Term: input[s:e], Start: s, End: e, Position: base[first].Position, Type: analysis.AlphaNumeric})
		bi = first
	})
	if out == nil {
		return base
	}
	return append(out, base[bi:]...)
}

// refIdentParts is the identifier-parts filter as it was (Bleve tokens).
type refIdentParts struct{}

func (refIdentParts) Filter(input analysis.TokenStream) analysis.TokenStream {
	var out analysis.TokenStream
	for i, tok := range input {
		if tok.Type == analysis.Ideographic || !refNeedsSplit(tok.Term) {
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
		out = refAppendParts(out, tok)
	}
	if out == nil {
		return input
	}
	return out
}

func refNeedsSplit(term []byte) bool {
	if len(term) < 3 {
		return false
	}
	prevClass := 0
	for i := 0; i < len(term); i++ {
		c := term[i]
		if c >= utf8.RuneSelf {
			return false
		}
		cl := refClass(c)
		if cl == 0 {
			if i > 0 && i < len(term)-1 {
				return true
			}
			continue
		}
		if prevClass != 0 && cl != prevClass && !(prevClass == 2 && cl == 1) {
			return true
		}
		prevClass = cl
	}
	return false
}

func refClass(c byte) int {
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

func refAppendParts(out analysis.TokenStream, tok *analysis.Token) analysis.TokenStream {
	term := tok.Term
	emit := func(s, e int) {
		if e <= s || (s == 0 && e == len(term)) {
			return
		}
		out = append(out, &analysis.Token{Term: term[s:e], Start: tok.Start + s, End: tok.Start + e, Position: tok.Position, Type: tok.Type})
	}
	s := 0
	for i := 0; i < len(term); i++ {
		cl := refClass(term[i])
		if cl == 0 {
			emit(s, i)
			s = i + 1
			continue
		}
		if i == s {
			continue
		}
		pc := refClass(term[i-1])
		switch {
		case pc == 1 && cl == 2, pc == 3 && cl != 3, pc != 3 && cl == 3:
			emit(s, i)
			s = i
		case pc == 2 && cl == 2 && i+1 < len(term) && refClass(term[i+1]) == 1:
			emit(s, i)
			s = i
		}
	}
	emit(s, len(term))
	return out
}

// tokenString renders a token with everything an index may read from it.
func tokenString(term []byte, start, end, pos, typ int, kw bool) string {
	return fmt.Sprintf("%q@%d[%d:%d]t%d k%v", term, pos, start, end, typ, kw)
}

func refTokens(a analysis.Analyzer, text string) []string {
	toks := a.Analyze([]byte(text)) // its own copy of the input
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = tokenString(t.Term, t.Start, t.End, t.Position, int(t.Type), t.KeyWord)
	}
	return out
}

func newTokens(text string) []string {
	toks := index.Analyze([]byte(text))
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = tokenString(t.Term, t.Start, t.End, t.Position, int(t.Type), t.KeyWord)
	}
	return out
}

// registeredTokens analyzes text with the analyzer the Bleve index's
// mapping resolves index.AnalyzerChat to.
func registeredTokens(tb testing.TB, text string) []string {
	a, err := registry.NewCache().AnalyzerNamed(index.AnalyzerChat)
	if err != nil {
		tb.Fatal(err)
	}
	return refTokens(a, text)
}

// checkSame fails when index.Analyze, or the analyzer registered with
// Bleve, differs from the reference chain on text.
func checkSame(tb testing.TB, ref analysis.Analyzer, text string) {
	tb.Helper()
	want := refTokens(ref, text)
	if got := newTokens(text); !slices.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		tb.Fatalf("index.Analyze(%q) differs from the Bleve chain at token %d of %d/%d:\n got  %v\n want %v",
			clipText(text), i, len(got), len(want), got[i:min(len(got), i+3)], want[i:min(len(want), i+3)])
	}
	if got := registeredTokens(tb, text); !slices.Equal(got, want) {
		tb.Fatalf("registered %s analyzer differs from the Bleve chain on %q", index.AnalyzerChat, clipText(text))
	}
}

func clipText(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

var trickyTexts = []string{
	"",
	"a",
	"The user's file isn't John's; it’s the bosses' and Ｊｏｈｎ＇ｓ",
	"I'd like, we'll see, they're here, you've been, can't won't shan't",
	"北京大学 東京タワー 中文分词 한국어 텍스트 日本語のテキスト",
	"混合text中文mixed 中 文 单字 カタカナ ﾊﾝｶｸｶﾀｶﾅ ｶﾞｷﾞｸﾞ ﾊﾟﾋﾟ ｳﾞ",
	"ＦＵＬＬ－ＷＩＤＴＨ　ＡＳＣＩＩ １２３ ｆｏｏ＿ｂａｒ",
	"parse_json parseJSON HTTPServer2 index.go src/index/index.go snake_case_name CamelCaseName",
	"see https://example.org/a/b?c=d&e=f#frag and http://x.y/z, mail user@example.com",
	"550e8400-e29b-41d4-a716-446655440000 commit 0894b93 host db.internal:5432 v1.2.3",
	"the and of a an to in it is was were be been being have has had do does did",
	"Running runners ran easily; generalizations, relational, conditional, hopefulness",
	"ΣΊΣΥΦΟΣ ὈΔΥΣΣΕΎΣ İstanbul straße ẞ Ⱥ Ⱦ ǅ",
	"emoji 😀👍🏽 and zwj 👨‍👩‍👧 and flags 🇫🇷",
	"invalid \xff\xfe bytes \xc3 and \xed\xa0\x80 surrogate",
	"tabs\tand\nnewlines\r\nand  spaces",
	"numbers 3.14 1,000,000 -42 +7 2023-06-03 12:30",
	"a.b.c.d.e.f.g.h.i.j.k ___---/// ... ,,, '''",
	"'s ’s ＇s s' x's X'S",
	strings.Repeat("long_identifier_part", 12) + " " + strings.Repeat("x", 250),
	"ａｂｃ中文ｄｅｆ",
	"C++ C# F# .NET node.js Node.JS package.json go.mod",
}

// TestAnalyzerSameAsBleveChain: index.Analyze gives the reference Bleve
// chain's tokens (terms, offsets, positions, types) on hand-picked tricky
// texts: possessives, CJK, full and half width, identifiers, URLs, stop
// words, stemming, invalid UTF-8.
func TestAnalyzerSameAsBleveChain(t *testing.T) {
	ref := referenceAnalyzer(t)
	for _, s := range trickyTexts {
		checkSame(t, ref, s)
	}
}

// TestAnalyzerSameOnRealData: the same on every message text of the
// pi-mono transcripts and every turn of locomo-dev3.json.
func TestAnalyzerSameOnRealData(t *testing.T) {
	ref := referenceAnalyzer(t)
	texts, tokens := 0, 0
	for _, p := range testutil.PiMono(t) {
		tr, err := core.ReadTranscript(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tr.Entries {
			m, ok := e.ModelMessage()
			if !ok {
				continue
			}
			for _, s := range []string{m.SearchText(false), m.SearchText(true)} {
				checkSame(t, ref, s)
				texts++
				tokens += len(index.Analyze([]byte(s)))
			}
		}
	}
	convs, err := locomo.Load(testutil.SharedFile(t, "data/locomo/locomo-dev3.json"))
	if err != nil {
		t.Fatal(err)
	}
	for ci := range convs {
		for _, s := range convs[ci].Sessions {
			for _, turn := range s.Turns {
				checkSame(t, ref, locomo.TurnText(turn))
				texts++
			}
		}
	}
	if texts < 1000 || tokens < 100_000 {
		t.Fatalf("only %d texts, %d tokens compared", texts, tokens)
	}
	t.Logf("%d texts (%d pi-mono tokens) analyzed alike", texts, tokens)
}

// FuzzAnalyzer: index.Analyze gives the reference Bleve chain's tokens for
// any input, invalid UTF-8 included.
func FuzzAnalyzer(f *testing.F) {
	for _, s := range trickyTexts {
		f.Add(s)
	}
	ref := referenceAnalyzer(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkSame(t, ref, s)
	})
}

// TestTokenTypesAsBleve: index's token types are Bleve's, value for value
// (the registered analyzer converts one to the other by number).
func TestTokenTypesAsBleve(t *testing.T) {
	pairs := []struct {
		ours  index.TokenType
		bleve analysis.TokenType
	}{
		{index.AlphaNumeric, analysis.AlphaNumeric}, {index.Ideographic, analysis.Ideographic},
		{index.Numeric, analysis.Numeric}, {index.DateTime, analysis.DateTime}, {index.Shingle, analysis.Shingle},
		{index.Single, analysis.Single}, {index.Double, analysis.Double}, {index.Boolean, analysis.Boolean},
		{index.IP, analysis.IP},
	}
	for _, p := range pairs {
		if int(p.ours) != int(p.bleve) {
			t.Errorf("type %d is Bleve's %d", p.ours, p.bleve)
		}
	}
}

// TestStopWordsAsBleve: the analyzer's stop words are Bleve's stop_en list.
func TestStopWordsAsBleve(t *testing.T) {
	m, err := registry.NewCache().TokenMapNamed(en.StopName)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for w := range m {
		want = append(want, w)
	}
	slices.Sort(want)
	if got := index.StopWords(); !slices.Equal(got, want) {
		t.Fatalf("stop words %v, Bleve's %v", got, want)
	}
}

var _ = bleveindex.Open // the registered analyzer comes with the package

// BenchmarkAnalyzer: index.Analyze (through the registered Bleve analyzer,
// as the index runs it, and alone) against the Bleve chain it replaces, on
// the pi-mono message texts (MB/s of text).
func BenchmarkAnalyzer(b *testing.B) {
	var texts [][]byte
	size := 0
	for _, p := range testutil.PiMono(b) {
		tr, err := core.ReadTranscript(p)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range tr.Entries {
			if m, ok := e.ModelMessage(); ok {
				s := m.SearchText(false)
				texts = append(texts, []byte(s))
				size += len(s)
			}
		}
	}
	registered, err := registry.NewCache().AnalyzerNamed(index.AnalyzerChat)
	if err != nil {
		b.Fatal(err)
	}
	ref := referenceAnalyzer(b)
	for _, c := range []struct {
		name string
		run  func([]byte) int
	}{
		{"bleve-chain", func(t []byte) int { return len(ref.Analyze(t)) }},
		{"registered", func(t []byte) int { return len(registered.Analyze(t)) }},
		{"index.Analyze", func(t []byte) int { return len(index.Analyze(t)) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, t := range texts {
					c.run(t)
				}
			}
		})
	}
}
