package index

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// TimeSpan is a range of Unix milliseconds [From, To).
type TimeSpan struct {
	From, To int64
}

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3,
	"april": 4, "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7,
	"august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

const monthRE = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?`

var (
	reDayMonthYear = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthRE + `,?\s+(\d{4})\b`)
	reMonthDayYear = regexp.MustCompile(`(?i)\b` + monthRE + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b`)
	reISODate      = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)
	reMonthYear    = regexp.MustCompile(`(?i)\b` + monthRE + `,?\s+(\d{4})\b`)
)

// Margins around a named day or month: time zones, and talk about an event
// shortly after it ("last week").
const (
	dayBefore   = 12 * time.Hour
	dayAfter    = 36 * time.Hour
	monthBefore = 12 * time.Hour
	monthAfter  = 8 * 24 * time.Hour
	maxSpans    = 4
)

// DateSpans finds the dates a text names ("3 June, 2023", "June 3rd 2023",
// "2023-06-03", "July 2023") and returns the time spans they cover (with
// margins), at most a few. Dates are taken as UTC.
func DateSpans(text string) []TimeSpan {
	if len(text) > 4096 {
		text = text[:4096]
	}
	lower := strings.ToLower(text)
	if !strings.ContainsAny(lower, "0123456789") {
		return nil
	}
	var out []TimeSpan
	var taken [][2]int
	overlaps := func(loc []int) bool {
		for _, t := range taken {
			if loc[0] < t[1] && t[0] < loc[1] {
				return true
			}
		}
		return false
	}
	addDay := func(y, m, d int, loc []int) {
		if len(out) >= maxSpans || m < 1 || m > 12 || d < 1 || d > 31 || y < 1900 || y > 2200 {
			return
		}
		t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
		if t.Day() != d {
			return // 31 June
		}
		out = append(out, TimeSpan{t.Add(-dayBefore).UnixMilli(), t.Add(dayAfter).UnixMilli()})
		taken = append(taken, [2]int{loc[0], loc[1]})
	}
	for _, m := range reDayMonthYear.FindAllStringSubmatchIndex(lower, -1) {
		d, _ := strconv.Atoi(lower[m[2]:m[3]])
		y, _ := strconv.Atoi(lower[m[6]:m[7]])
		addDay(y, int(months[lower[m[4]:m[5]]]), d, m)
	}
	for _, m := range reMonthDayYear.FindAllStringSubmatchIndex(lower, -1) {
		if overlaps(m) {
			continue
		}
		d, _ := strconv.Atoi(lower[m[4]:m[5]])
		y, _ := strconv.Atoi(lower[m[6]:m[7]])
		addDay(y, int(months[lower[m[2]:m[3]]]), d, m)
	}
	for _, m := range reISODate.FindAllStringSubmatchIndex(lower, -1) {
		y, _ := strconv.Atoi(lower[m[2]:m[3]])
		mo, _ := strconv.Atoi(lower[m[4]:m[5]])
		d, _ := strconv.Atoi(lower[m[6]:m[7]])
		addDay(y, mo, d, m)
	}
	for _, m := range reMonthYear.FindAllStringSubmatchIndex(lower, -1) {
		if overlaps(m) || len(out) >= maxSpans {
			continue
		}
		y, _ := strconv.Atoi(lower[m[4]:m[5]])
		if y < 1900 || y > 2200 {
			continue
		}
		t := time.Date(y, months[lower[m[2]:m[3]]], 1, 0, 0, 0, 0, time.UTC)
		out = append(out, TimeSpan{t.Add(-monthBefore).UnixMilli(), t.AddDate(0, 1, 0).Add(monthAfter).UnixMilli()})
		taken = append(taken, [2]int{m[0], m[1]})
	}
	return out
}
