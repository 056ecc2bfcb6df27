package summarize

// The check every model summary passes before it is stored: an answer that
// is no summary (empty, a canned reply, not shorter than its sources, or
// without the sources' identifiers) is refused (CheckSummary). The Guard
// asks the model once more with a stricter prompt that says what was wrong
// (core.SummarizeRequest.Refused), and when that answer is refused too, the
// extractive summarizer writes the summary.

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
)

// ErrSummaryRefused is what a *RefusedError is (errors.Is): the answer is
// no summary of its sources.
var ErrSummaryRefused = errors.New("summarize: summary refused")

// RefusedError is CheckSummary's error: why an answer is no summary.
type RefusedError struct {
	// Reason says what is wrong, in words a model can act on.
	Reason string
}

func (e *RefusedError) Error() string { return ErrSummaryRefused.Error() + ": " + e.Reason }

// Is reports whether target is ErrSummaryRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrSummaryRefused }

func refused(format string, a ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, a...)}
}

// The thresholds of CheckSummary.
const (
	// minSummaryTokens is the shortest answer taken as a summary of
	// sources many times its size: a summary in the prompt's sections
	// (a goal, what was done, what is next) takes more than 24 tokens,
	// while the canned replies seen from models asked to summarize
	// ("Noted. That should not change the schedule much.", "OK, got
	// it.") take about 5 to 15.
	minSummaryTokens = 24
	// shortSourceRatio keeps that floor fair to small sources: it is never
	// above 1/shortSourceRatio of the sources' tokens (a summary of 80
	// tokens may take 10) nor above half the request's target (an
	// aggressive retry at a small target).
	shortSourceRatio = 8
	// cannedMaxTokens bounds the answers that CheckSummary takes for a
	// chat reply when they open like one ("Noted.", "Sure,", "I'm sorry",
	// "As an AI"): a reply to the conversation rather than a summary of
	// it. A summary that merely opens "Sure, here is the summary:" goes on
	// far longer than this.
	cannedMaxTokens = 64
	// identifierShare is the share of the sources' distinctive identifiers
	// (markers such as MARK-03-9d72, file paths, hex ids, UUIDs, URLs,
	// hosts, long numbers) a summary must keep: one in five. The
	// prompt asks for every identifier, but a summary is a tenth of its
	// sources or less: a good model summary of a coding session keeps the
	// files it worked on and the ids that matter, not every path a tool
	// listed.
	identifierShare = 0.2
	// identifierCap caps the identifiers required, so that sources holding
	// hundreds (a directory listing, a test log) do not ask for more than
	// a summary has room for: 12 is what a good summary of one leaf chunk
	// (20,000 tokens of a coding session) names at the least (measured on
	// pi-mono's own compaction summaries, which keep 40 and more of the
	// 200 to 700 of their sources).
	identifierCap = 12
	// tokensPerIdentifier caps the identifiers required by the target
	// as well: one per 40 tokens of it (an identifier and the words that
	// say what it is), so a short aggressive summary is not asked for more
	// than it can hold.
	tokensPerIdentifier = 40
	// maxMissingListed is how many lost identifiers a refusal names.
	maxMissingListed = 8
)

// CheckSummary reports whether summary is a summary of req's sources
// (req.Text and req.PreviousSummary), counting tokens with tc (the engine's
// counter; core.DefaultCounter when nil). It returns nil, or an error
// (a *RefusedError, which is ErrSummaryRefused) that says what is wrong, in words a model can
// act on:
//
//   - empty (after removing reasoning);
//   - not shorter than the sources;
//   - too short to be a summary of them (under minSummaryTokens, lowered
//     for small sources and targets);
//   - a canned chat reply (it opens like one and is under cannedMaxTokens);
//   - it keeps too few of the sources' distinctive identifiers (markers,
//     paths, hex ids, UUIDs, URLs, hosts, long numbers): at least
//     identifierShare of them, capped at identifierCap and at one per
//     tokensPerIdentifier tokens of the target, and at least one when the
//     sources hold any.
//
// It is pure: the same inputs give the same answer.
func CheckSummary(tc core.TokenCounter, req core.SummarizeRequest, summary string) error {
	if tc == nil {
		tc = core.DefaultCounter()
	}
	summary = StripReasoning(summary)
	if summary == "" {
		return refused("the answer is empty")
	}
	sources := req.Text
	if req.PreviousSummary != "" {
		sources = req.PreviousSummary + "\n\n" + req.Text
	}
	srcTokens, n := tc.CountText(sources), tc.CountText(summary)
	if n >= srcTokens {
		return refused("the answer (%d tokens) is not shorter than the transcript it summarizes (%d tokens)", n, srcTokens)
	}
	if floor := shortFloor(srcTokens, req.TargetTokens); n < floor {
		return refused("the answer (%d tokens: %q) is too short to summarize a transcript of %d tokens (at least %d)",
			n, clip(summary, 80), srcTokens, floor)
	}
	if n < cannedMaxTokens && cannedOpening(summary) {
		return refused("the answer (%q) is a reply to the conversation, not a summary of it", clip(summary, 80))
	}
	ids := SourceIdentifiers(sources)
	need := identifiersNeeded(len(ids), req.TargetTokens)
	if need == 0 {
		return nil
	}
	kept, missing := 0, []string(nil)
	for _, id := range ids {
		if keeps(summary, id) {
			kept++
		} else if len(missing) < maxMissingListed {
			missing = append(missing, id.Value)
		}
	}
	if kept >= need {
		return nil
	}
	return refused("the answer keeps %d of the transcript's %d identifiers, at least %d needed (missing, among others: %s)",
		kept, len(ids), need, strings.Join(missing, ", "))
}

// shortFloor is the fewest tokens a summary of srcTokens tokens for a
// target of target tokens (0: none) must take.
func shortFloor(srcTokens, target int) int {
	f := min(minSummaryTokens, srcTokens/shortSourceRatio)
	if target > 0 {
		f = min(f, target/2)
	}
	return max(f, 1)
}

// identifiersNeeded is how many of total distinctive identifiers a
// summary for target tokens (0: none) must keep.
func identifiersNeeded(total, target int) int {
	if total == 0 {
		return 0
	}
	need := min(int(math.Ceil(identifierShare*float64(total))), identifierCap)
	if target > 0 {
		need = min(need, target/tokensPerIdentifier)
	}
	return max(need, 1)
}

// cannedOpenings are how chat replies open, lower case; a summary opens
// with its content or a heading.
var cannedOpenings = []string{
	"noted", "ok", "okay", "sure", "got it", "understood", "thanks", "thank you", "certainly", "of course",
	"sounds good", "great", "i'm sorry", "i am sorry", "sorry", "i can't", "i cannot", "i can not", "i won't",
	"i'm unable", "i am unable", "as an ai", "as a language model", "hello", "hi ", "yes", "no problem", "will do",
	"i'll", "i will", "let me",
}

// cannedOpening reports whether s opens like a chat reply.
func cannedOpening(s string) bool {
	s = strings.ToLower(strings.TrimLeft(s, " \t\r\n*#>-_\"'`"))
	s = strings.ReplaceAll(s, "’", "'")
	for _, o := range cannedOpenings {
		if !strings.HasPrefix(s, o) {
			continue
		}
		rest := s[len(o):]
		if rest == "" || !isWordByte(rest[0]) || strings.HasSuffix(o, " ") {
			return true
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' || b >= 0x80
}

// SourceIdentifiers returns the distinctive identifiers of text that
// CheckSummary asks a summary to keep, distinct, in order of first
// appearance: package ident's UUIDs, URLs, paths and file names, hex
// hashes and hosts (not its code names, too many in code to ask for),
// markers (words of letters and digits joined by '-' or '_' with a capital
// letter or a part mixing letters and digits: MARK-03-9d72, HOSTSUM-TURN-01,
// JIRA-1234), and numbers of five digits or more.
func SourceIdentifiers(text string) []ident.Identifier {
	var out []ident.Identifier
	seen := map[string]bool{}
	add := func(k ident.Kind, v string) {
		if !seen[v] {
			seen[v] = true
			out = append(out, ident.Identifier{Kind: k, Value: v})
		}
	}
	ident.Scan(text, func(start, end int, kind ident.Kind) {
		if kind != ident.Name {
			add(kind, text[start:end])
		}
	})
	for _, w := range strings.FieldsFunc(text, isMarkerDelim) {
		w = strings.Trim(w, "-_.:#")
		switch {
		case isMarker(w):
			add(KindMarker, w)
		case len(w) >= 5 && allDigits(w):
			add(KindNumber, w)
		}
	}
	return out
}

// Identifier kinds SourceIdentifiers adds to package ident's.
const (
	KindMarker ident.Kind = "marker" // MARK-03-9d72, HOSTSUM-TURN-01
	KindNumber ident.Kind = "number" // numbers of five digits or more
)

// isMarkerDelim splits text into the words isMarker looks at: anything
// but letters, digits, '-', '_' (and '.', ':' and '#', trimmed from the
// ends) ends a word.
func isMarkerDelim(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':' || r == '#')
}

// isMarker reports whether w is a marker: at least two parts of ASCII
// letters and digits joined by '-' or '_', six characters or more, with a
// digit, and a capital letter or a part that mixes letters and digits.
func isMarker(w string) bool {
	if len(w) < 6 || len(w) > 64 || strings.ContainsAny(w, ".:#") {
		return false
	}
	parts := strings.FieldsFunc(w, func(r rune) bool { return r == '-' || r == '_' })
	if len(parts) < 2 {
		return false
	}
	digit, upper, mixed := false, false, false
	for _, p := range parts {
		l, d := false, false
		for i := 0; i < len(p); i++ {
			switch b := p[i]; {
			case b >= '0' && b <= '9':
				d = true
			case b >= 'A' && b <= 'Z':
				l, upper = true, true
			case b >= 'a' && b <= 'z':
				l = true
			default:
				return false
			}
		}
		digit = digit || d
		mixed = mixed || (l && d)
	}
	return digit && (upper || mixed)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// keeps reports whether summary keeps id: verbatim, or for a path its
// file name when it has an extension (a summary may name src/core/x.ts
// where the tool printed the absolute path; a directory's last name is a
// word like any other), for a hex hash its first seven digits (git's
// short form).
func keeps(summary string, id ident.Identifier) bool {
	if strings.Contains(summary, id.Value) {
		return true
	}
	switch id.Kind {
	case ident.Path:
		v := strings.TrimRight(id.Value, "/\\")
		base := v[strings.LastIndexAny(v, "/\\")+1:]
		return len(base) >= 4 && strings.Contains(base, ".") && strings.Contains(summary, base)
	case ident.Hash:
		return len(id.Value) > 7 && strings.Contains(summary, id.Value[:7])
	}
	return false
}

// clip returns s cut to n bytes (at a rune boundary) with "…" when cut,
// on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
