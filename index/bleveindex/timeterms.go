package bleveindex

import (
	"strconv"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/lossless-engine/contextengine/index"
)

// Time filters. A doc's timestamp is indexed as one keyword term per
// bucket level (tsLevels: buckets of 2^22 ms ≈ 70 min, 2^27 ≈ 37 h,
// 2^32 ≈ 50 days and 2^37 ≈ 4.4 years), four terms per doc. Bleve's numeric
// field indexes sixteen (a 4-bit precision step over 64 bits); those shift
// terms were ~40% of the indexing cost of a short chat message. A range is
// covered by at most 31 buckets per side per level plus 32 at the top, and
// the hits of the finest, partial buckets are filtered on the exact
// timestamp each hit carries (see inRange).
var tsLevels = [...]uint{22, 27, 32, 37}

// tsMax bounds indexed timestamps: [0, 2^42) ms is 1970 to 2109. A
// timestamp outside is indexed at the nearest bound (its exact value is
// still what inRange checks).
const tsMax = int64(1)<<42 - 1

func clampTS(ts int64) int64 {
	return min(max(ts, 0), tsMax)
}

// tsTerm is the term of bucket b at level i.
func tsTerm(i int, b int64) string {
	return strconv.Itoa(i) + ":" + strconv.FormatInt(b, 36)
}

// tsTerms returns the terms of a doc's timestamp, one per level.
func tsTerms(ts int64) [len(tsLevels)]string {
	ts = clampTS(ts)
	var out [len(tsLevels)]string
	for i, sh := range tsLevels {
		out[i] = tsTerm(i, ts>>sh)
	}
	return out
}

// tsCover returns the terms whose buckets together cover [lo, hi]
// (inclusive, ms) and reach past it by less than one finest bucket on each
// side; nil when the range is empty.
func tsCover(lo, hi int64) []string {
	lo, hi = clampTS(lo), clampTS(hi)
	if lo > hi {
		return nil
	}
	a, b := lo>>tsLevels[0], hi>>tsLevels[0]
	var out []string
	for i := range tsLevels {
		if i == len(tsLevels)-1 {
			for ; a <= b; a++ {
				out = append(out, tsTerm(i, a))
			}
			break
		}
		step := tsLevels[i+1] - tsLevels[i]
		mask := int64(1)<<step - 1
		for a <= b && a&mask != 0 {
			out = append(out, tsTerm(i, a))
			a++
		}
		for a <= b && b&mask != mask {
			out = append(out, tsTerm(i, b))
			b--
		}
		if a > b {
			break
		}
		a, b = a>>step, b>>step
	}
	return out
}

// tsQuery is a filter matching every doc whose timestamp bucket overlaps
// [lo, hi]; nil when the range is empty.
func tsQuery(lo, hi int64) query.Query {
	terms := tsCover(lo, hi)
	if len(terms) == 0 {
		return nil
	}
	return anyTerm(fTS, terms)
}

// tsAnalyzer turns the space-separated terms of a doc's timestamp field
// into tokens, unchanged.
type tsAnalyzer struct{}

// Analyze implements analysis.Analyzer.
func (tsAnalyzer) Analyze(in []byte) analysis.TokenStream {
	out := make(analysis.TokenStream, 0, len(tsLevels))
	start := 0
	for i := 0; i <= len(in); i++ {
		if i == len(in) || in[i] == ' ' {
			if i > start {
				out = append(out, &analysis.Token{Start: start, End: i, Term: in[start:i], Position: len(out) + 1, Type: analysis.AlphaNumeric})
			}
			start = i + 1
		}
	}
	return out
}

// tsValue is the indexed value of a doc's timestamp field.
func tsValue(ts int64) []byte {
	terms := tsTerms(ts)
	b := make([]byte, 0, 48)
	for i, t := range terms {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, t...)
	}
	return b
}

// timeRange is the exact time filter of a query: Since/Until (inclusive)
// and Spans (From inclusive, To exclusive).
type timeRange struct {
	since, until int64
	spans        []index.TimeSpan
}

// timeRangeOf returns q's exact time filter; false when q has none.
func timeRangeOf(q *index.Query) (timeRange, bool) {
	if q.Since == 0 && q.Until == 0 && len(q.Spans) == 0 {
		return timeRange{}, false
	}
	return timeRange{since: q.Since, until: q.Until, spans: q.Spans}, true
}

// inRange reports whether ts passes the exact filter.
func (r timeRange) inRange(ts int64) bool {
	if r.since != 0 && ts < r.since {
		return false
	}
	if r.until != 0 && ts > r.until {
		return false
	}
	if len(r.spans) == 0 {
		return true
	}
	for _, sp := range r.spans {
		if ts >= sp.From && ts < sp.To {
			return true
		}
	}
	return false
}
