package locomo

import (
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
)

// How the window suite decides that an evidence turn is in a window.
//
// A turn is verbatim in a window when its whole text, as ingested (TurnBody,
// or TurnText with the speaker's name), appears in the window's text with
// runs of white space collapsed to one space (case kept): in a message of
// the tail, quoted inside a summary, or in the recall block.
//
// Its content words are its lower-cased word tokens (maximal runs of
// letters and digits, with an apostrophe inside a word kept: "don't",
// "caroline's"; ’ is read as ') less the English stop words of the recall
// index (bleve's stop_en list, the Snowball list the index's analyzer
// drops), each counted once. No stemming: the window must hold the word as
// it was said. A turn is covered when at least CoveredShare of its content
// words are among the window's words; a turn without content words ("Yes!
// Thanks.") is covered only when it is verbatim.

// CoveredShare is the share of an evidence turn's content words that a
// window must hold for the turn to count as covered.
const CoveredShare = 0.8

// stopWords is the recall index's English stop list (bleve's stop_en).
var stopWords = func() analysis.TokenMap {
	m := analysis.NewTokenMap()
	if err := m.LoadBytes(en.EnglishStopWords); err != nil {
		panic("locomo: stop words: " + err.Error())
	}
	return m
}()

// IsStopWord reports whether the lower-cased word w is on the stop list
// content words leave out.
func IsStopWord(w string) bool { return stopWords[w] }

// words calls fn with each lower-cased word token of s, in order.
func words(s string, fn func(w string)) {
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := strings.TrimRight(b.String(), "'")
		b.Reset()
		if w != "" {
			fn(w)
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		case (r == '\'' || r == '’') && b.Len() > 0:
			b.WriteByte('\'')
		default:
			flush()
		}
	}
	flush()
}

// ContentWords returns the distinct content words of s, in the order of
// their first occurrence.
func ContentWords(s string) []string {
	var out []string
	seen := map[string]bool{}
	words(s, func(w string) {
		if !stopWords[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	})
	return out
}

// collapse returns s with every run of white space made one space, trimmed.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// WindowText is the text of a window (or of a part of it: its summaries),
// ready to score turns against.
type WindowText struct {
	text  string
	words map[string]bool
}

// NewWindowText makes the window text of texts (each message's text, the
// system prompt addition), in order.
func NewWindowText(texts ...string) *WindowText {
	w := &WindowText{words: map[string]bool{}}
	parts := make([]string, 0, len(texts))
	for _, t := range texts {
		if t = collapse(t); t != "" {
			parts = append(parts, t)
		}
		words(t, func(s string) { w.words[s] = true })
	}
	w.text = strings.Join(parts, "\n")
	return w
}

// Verbatim reports whether turn's whole text is in the window (white space
// runs collapsed). An empty turn is not.
func (w *WindowText) Verbatim(turn string) bool {
	t := collapse(turn)
	return t != "" && strings.Contains(w.text, t)
}

// Coverage returns the share of turn's content words that the window
// holds (1 for a turn without content words that is verbatim, 0 for one
// that is not).
func (w *WindowText) Coverage(turn string) float64 {
	cw := ContentWords(turn)
	if len(cw) == 0 {
		if w.Verbatim(turn) {
			return 1
		}
		return 0
	}
	n := 0
	for _, x := range cw {
		if w.words[x] {
			n++
		}
	}
	return float64(n) / float64(len(cw))
}

// Covers reports whether the window covers turn: at least CoveredShare of
// its content words, or, without content words, the turn verbatim.
func (w *WindowText) Covers(turn string) bool { return w.Coverage(turn) >= CoveredShare }
