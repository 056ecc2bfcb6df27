package summarize

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
)

// Extractive is the embedded summarizer: deterministic, no network. It picks
// and trims the sentences that carry asks, constraints, decisions, errors,
// outcomes and identifiers, and lays them out in fixed sections. Every
// sentence is also scored by how much it says: its rare words (weighted by
// inverse frequency within the summarized text), names, numbers, dates and
// times, preferences and plans; greetings, thanks and small talk lose, and a
// sentence whose words the summary already holds is left out. A chat (turns
// of two speakers, no tools and no code) becomes one chronological list of
// facts; a date stamp leading a line ("[7 May 2023] user: …", "(7 May 2023)
// …") is carried onto the facts kept from it. Summaries of summaries split
// their children's sections back into items and keep the most informative
// of all children, not the first. Its output
// is always strictly shorter (in tokens) than its input (Text plus
// PreviousSummary) and never longer than TargetTokens. It is safe for
// concurrent use.
type Extractive struct {
	tc core.TokenCounter
}

// NewExtractive returns an extractive summarizer counting tokens with tc
// (core.DefaultCounter when nil).
func NewExtractive(tc core.TokenCounter) *Extractive {
	if tc == nil {
		tc = core.DefaultCounter()
	}
	return &Extractive{tc: tc}
}

// Name returns "extractive".
func (e *Extractive) Name() string { return KindExtractive }

// Sections of a summary, in output order.
const (
	secGoal = iota
	secConstraints
	secDone
	secInProgress
	secBlocked
	secDecisions
	secNext
	secContext
	numSections
	// secFacts holds statements of no coding section (all of a chat's
	// sentences); it is rendered after the others, only when not empty.
	secFacts = numSections
	secNone  = -1
)

// Label and heading of the facts section.
const (
	factsLabel   = "Facts"
	factsHeading = "## Facts"
)

// sectionBase is the base score of an item taken from a child summary's
// section (secFacts last).
var sectionBase = [numSections + 1]float64{3, 3.5, 2, 1.8, 3, 3, 2.2, 2, 2}

// Headings of the full (compaction) form and labels of the compact form.
var (
	sectionHeadings = [numSections]string{
		"## Goal", "## Constraints and preferences", "### Done", "### In progress", "### Blocked",
		"## Key decisions", "## Next steps", "## Critical context",
	}
	sectionLabels = [numSections]string{
		"Goal", "Constraints", "Done", "In progress", "Blocked", "Decisions", "Next", "Context",
	}
)

// ProgressHeading is printed before the Done/In progress/Blocked headings.
const progressHeading = "## Progress"

// identifiersLabel starts the line listing identifiers kept verbatim.
const identifiersLabel = "Identifiers: "

// Word flags found by the keyword scan.
const (
	fAsk = 1 << iota
	fConstraint
	fDecision
	fError
	fDone
	fProgress
	fBlocked
	fNext
	fTime // a date or time word: yesterday, Monday, May, weeks, ago
	fPref // a preference, plan or life event: love, favorite, started, adopted
)

var keywords = func() map[string]uint16 {
	m := map[string]uint16{}
	add := func(f uint16, words string) {
		for _, w := range strings.Fields(words) {
			m[w] |= f
		}
	}
	add(fAsk, "please can could would want need lets let's make implement add fix create write build help how why what where should")
	add(fConstraint, "must never always don't dont avoid prefer preferably require required requires only without mustn't shouldn't cannot no-")
	add(fDecision, "decided decide decision decisions chose chosen choose instead opted settled approach tradeoff rather switched agreed plan")
	add(fError, "error errors failed fail fails failure failing panic exception traceback unable denied refused timeout crash crashed broken bug undefined enoent eacces fatal invalid mismatch couldn't can't segfault regression")
	add(fDone, "done fixed implemented added created updated completed complete passes passed passing works succeeded success successfully merged committed resolved removed refactored renamed wrote built finished verified")
	add(fProgress, "currently ongoing wip progress started starting continuing working now")
	add(fBlocked, "blocked blocking stuck waiting blocker pending")
	add(fNext, "next todo remaining later follow-up then will tbd afterwards")
	add(fTime, "yesterday today tomorrow tonight weekend week weeks month months year years ago "+
		"monday tuesday wednesday thursday friday saturday sunday january february march april june july "+
		"august september october november december morning evening night birthday anniversary")
	add(fPref, "love loved loves favorite favourite favorites enjoy enjoyed enjoys prefer hate hated passion "+
		"passionate dream hobby hobbies going planning plan plans started joined adopted bought moved visited "+
		"graduated married signed decided learned learning took won finished volunteer volunteering")
	return m
}()

var roleWords = map[string]byte{
	"user": 'u', "human": 'u', "assistant": 'a', "ai": 'a', "model": 'a',
	"tool": 't', "toolresult": 't', "tool_result": 't', "bash": 't', "bashexecution": 't', "output": 't',
	"system": 's', "summary": 'p', "compactionsummary": 'p', "branchsummary": 'p',
}

// sent is one candidate sentence.
type sent struct {
	text    string
	order   int
	section int
	score   float64
	cost    int // estimated tokens
	prev    bool
	w0, w1  int32  // its content words: plan.arena[w0:w1]
	when    string // the date stamp it was said under, if the input gave one
}

// smallTalk are words that carry no fact: greetings, thanks, praise,
// agreement. They count neither as content nor as rare words.
var smallTalk = setOf("hi hey hello thanks thank congrats congratulations wow awesome great amazing cool glad bye " +
	"nice lol haha yeah yes yep okay sure totally absolutely good really sounds proud happy hear see take care " +
	"catch talk chat soon definitely appreciate super fun wonderful incredible cheers sweet true well know think " +
	"glad lovely beautiful fantastic exciting excited stuff things thing something anything much lot lots way " +
	"feel feels felt like just get got going doing done make made can could would should will shall might " +
	"there here how what why who whom whose its it's that's i'm i've you're we're they're don't can't won't " +
	"didn't doesn't isn't aren't wasn't let's gonna wanna also too very")

// maxSentBytes caps one kept sentence; longer ones are cut at a space.
const maxSentBytes = 360

// chatTurnBytes is the longest line of a chat kept as one candidate; longer
// ones are split into sentences.
const chatTurnBytes = 240

// Summarize returns an extractive summary of req. It fails (wrapping
// core.ErrSummarizerFailed) only when the input is too small to shorten.
func (e *Extractive) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("summarize: extractive: %w", err)
	}
	return e.SummarizeCounted(ctx, req, -1)
}

// SummarizeCounted is Summarize for a caller that already knows the input's
// token count under the same counter (inputTokens: Text plus
// PreviousSummary, as the lossless engine stores them at ingest), which saves
// counting the input again, the most expensive step. A negative inputTokens
// means unknown.
func (e *Extractive) SummarizeCounted(ctx context.Context, req core.SummarizeRequest, inputTokens int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("summarize: extractive: %w", err)
	}
	in := inputTokens
	if in < 0 {
		in = e.tc.CountText(req.Text)
		if req.PreviousSummary != "" {
			in += e.tc.CountText(req.PreviousSummary)
		}
	}
	if in <= 1 || len(req.Text)+len(req.PreviousSummary) == 0 {
		return "", fmt.Errorf("summarize: extractive: input of %d tokens is too small to shorten: %w", in, core.ErrSummarizerFailed)
	}
	target := req.TargetTokens
	if target <= 0 || target >= in {
		target = in - 1
	}
	if req.Aggressive && target > 64 {
		target = target * 2 / 3
	}
	// tokens per byte, to estimate sentence costs without counting each one.
	nBytes := len(req.Text) + len(req.PreviousSummary)
	ratio := float64(in) / float64(nBytes)

	p := plan{req: req, ratio: ratio, compact: req.Kind != core.SummaryCompaction || target < 160 || req.Aggressive}
	p.collect()

	budget := target
	var out string
	for attempt := 0; attempt < 4; attempt++ {
		out = p.render(budget)
		got := e.tc.CountText(out)
		if got <= target {
			break
		}
		budget = int(float64(budget) * float64(target) / float64(got) * 0.95)
		if attempt == 2 {
			out = core.Truncate(e.tc, out, target)
			break
		}
	}
	if strings.TrimSpace(out) == "" {
		out = core.Truncate(e.tc, strings.TrimSpace(req.PreviousSummary+"\n"+req.Text), target)
	}
	if strings.TrimSpace(out) == "" {
		return "", fmt.Errorf("summarize: extractive: nothing fits in %d tokens: %w", target, core.ErrSummarizerFailed)
	}
	return out, nil
}

// plan holds the candidates of one request.
type plan struct {
	req      core.SummarizeRequest
	ratio    float64
	compact  bool
	sents    []sent
	ids      []string // identifiers, most frequent first
	prevIDs  []string // identifiers listed by the previous summary
	focus    map[string]struct{}
	seenUser bool    // a user sentence of Text was seen
	frac     float64 // position in Text of the sentence being added, 0..1
	chat     bool    // Text is a chat: turns without tools or code
	when     string  // the date stamp of the line being added

	// content words: each distinct word an id, the number of sentences
	// holding it (df), and every sentence's ids in one arena.
	wordID   map[string]int32
	df       []int32
	lastSent []int32 // the last sentence (1-based) that counted the word
	arena    []int32
	nSents   int // sentences seen, kept or not: the span for df
}

// collect splits the inputs into scored candidate sentences.
func (p *plan) collect() {
	p.focus = map[string]struct{}{}
	p.wordID = map[string]int32{}
	p.chat = isChat(p.req.Text)
	forEachWord(p.req.Focus, func(w string) {
		if len(w) >= 3 && !stopword(w) {
			p.focus[w] = struct{}{}
		}
	})
	if p.req.PreviousSummary != "" {
		p.collectPrevious(p.req.PreviousSummary)
	}
	p.collectText(p.req.Text)
	// identifiers by frequency, then first appearance
	count := map[string]int{}
	var order []string
	text := p.req.Text
	ident.Scan(text, func(start, end int, _ ident.Kind) {
		id := text[start:end]
		if _, marker := roleWords[strings.ToLower(id)]; marker {
			return // a rendered role marker, not content
		}
		if count[id] == 0 {
			order = append(order, id)
		}
		count[id]++
	})
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	p.ids = order
	p.scoreInformation()
	// diminishing returns within a section: the k-th best loses 0.35*k.
	idx := make([]int, len(p.sents))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p.sents[idx[a]].score > p.sents[idx[b]].score })
	var rank [numSections + 1]int
	for _, i := range idx {
		s := &p.sents[i]
		if s.section >= 0 && s.section < numSections {
			s.score -= 0.35 * float64(rank[s.section])
			rank[s.section]++
		}
	}
}

// collectPrevious turns a previous summary into candidates that keep their
// section when it is in this package's format.
func (p *plan) collectPrevious(prev string) {
	section := secNone
	for _, line := range strings.Split(prev, "\n") {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if s, rest, ok := parseHeading(t); ok {
			section = s
			if rest == "" {
				continue
			}
			t = rest
		}
		if strings.HasPrefix(t, identifiersLabel) || strings.HasPrefix(t, "- "+identifiersLabel) {
			for _, id := range strings.Split(t[strings.Index(t, identifiersLabel)+len(identifiersLabel):], ", ") {
				if id = strings.TrimSpace(id); id != "" {
					p.prevIDs = append(p.prevIDs, id)
				}
			}
			continue
		}
		if strings.HasPrefix(t, "Focus: ") {
			continue
		}
		t = strings.TrimPrefix(strings.TrimPrefix(t, "- "), "* ")
		if t == "(none)" || t == "" {
			continue
		}
		for _, item := range strings.Split(t, " · ") {
			if when, rest, ok := stamp(strings.TrimSpace(item)); ok {
				p.when, item = when, rest
			}
			p.add(item, 'p', section, true)
		}
	}
}

// parseHeading recognises a section heading of either form ("## Goal",
// "Goal: ...") and returns the section and any text after it.
func parseHeading(t string) (int, string, bool) {
	if strings.HasPrefix(t, "#") {
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(t, "#")))
		h = strings.TrimSuffix(h, ":")
		switch {
		case h == "progress":
			return secNone, "", true
		case strings.HasPrefix(h, "goal"):
			return secGoal, "", true
		case strings.HasPrefix(h, "constraint"):
			return secConstraints, "", true
		case h == "done" || strings.HasPrefix(h, "completed"):
			return secDone, "", true
		case strings.HasPrefix(h, "in progress"):
			return secInProgress, "", true
		case strings.HasPrefix(h, "blocked"):
			return secBlocked, "", true
		case strings.Contains(h, "decision"):
			return secDecisions, "", true
		case strings.HasPrefix(h, "next"):
			return secNext, "", true
		case strings.Contains(h, "context"):
			return secContext, "", true
		case strings.HasPrefix(h, "facts"):
			return secFacts, "", true
		}
		return secNone, "", true
	}
	for s, l := range sectionLabels {
		if len(t) > len(l)+1 && strings.HasPrefix(t, l) && t[len(l)] == ':' {
			return s, strings.TrimSpace(t[len(l)+1:]), true
		}
	}
	if len(t) > len(factsLabel)+1 && strings.HasPrefix(t, factsLabel) && t[len(factsLabel)] == ':' {
		return secFacts, strings.TrimSpace(t[len(factsLabel)+1:]), true
	}
	return 0, "", false
}

// isChat reports whether text is a chat: turns marked by role, none of them
// a tool's, no tool calls, and (almost) no code.
func isChat(text string) bool {
	if strings.Contains(text, "[tool call") {
		return false
	}
	lines, code, marked, facts := 0, 0, 0, 0
	for len(text) > 0 {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		if _, rest, ok := stamp(strings.TrimSpace(line)); ok {
			line = rest
		}
		t := strings.TrimSpace(line)
		if len(t) < 3 {
			continue
		}
		lines++
		if r, rest, ok := roleMarker(line); ok {
			if r == 't' || r == 's' {
				return false
			}
			marked++
			line = rest
			if t = strings.TrimSpace(line); t == "" {
				continue
			}
		} else if strings.HasPrefix(t, factsLabel+": ") || strings.HasPrefix(t, factsHeading) {
			facts++
		}
		if isCode(line, t) {
			code++
		}
	}
	return (marked > 0 || facts > 0) && code*10 <= lines
}

// isCode is a stricter isCodeLike: indented, or braces and semicolons
// (chat lines end with ")" and "]" too: smileys, image captions).
func isCode(line, t string) bool {
	if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "    ") {
		return true
	}
	switch t[len(t)-1] {
	case '{', '}', ';':
		return true
	}
	switch t[0] {
	case '{', '}', '<', '|', '=':
		return true
	}
	return false
}

// months are the month names a date stamp may hold (three-letter prefixes).
var months = setOf("jan feb mar apr may jun jul aug sep oct nov dec")

// stamp recognises a date stamp leading t: "[7 May 2023]", "(2023-05-07
// 13:56)", "[1:56 pm on 8 May, 2023]". It holds a digit and a month name or
// an ISO date. It returns the stamp's inside and the text after it.
func stamp(t string) (string, string, bool) {
	if len(t) < 5 || (t[0] != '[' && t[0] != '(') {
		return "", "", false
	}
	closer := byte(']')
	if t[0] == '(' {
		closer = ')'
	}
	end := strings.IndexByte(t[:min(len(t), 48)], closer)
	if end < 4 {
		return "", "", false
	}
	in := strings.TrimSpace(t[1:end])
	if !strings.ContainsAny(in, "0123456789") {
		return "", "", false
	}
	dated := false
	forEachWord(in, func(w string) {
		if len(w) >= 3 {
			if _, ok := months[w[:3]]; ok {
				dated = true
			}
		}
	})
	if !dated {
		// an ISO date: dddd-dd-dd
		for i := 0; i+10 <= len(in) && !dated; i++ {
			d := in[i : i+10]
			dated = isDigit(d[0]) && isDigit(d[1]) && isDigit(d[2]) && isDigit(d[3]) && d[4] == '-' &&
				isDigit(d[5]) && isDigit(d[6]) && d[7] == '-' && isDigit(d[8]) && isDigit(d[9])
		}
	}
	if !dated {
		return "", "", false
	}
	return in, strings.TrimSpace(t[end+1:]), true
}

// collectText splits the rendered messages into sentences, tracking the
// speaker from role markers at line starts ("user:", "[assistant]", ...).
func (p *plan) collectText(text string) {
	role := byte('?')
	total := float64(len(text))
	section := secNone // the section of a child summary's "## heading"
	for len(text) > 0 {
		p.frac = 1 - float64(len(text))/total
		var line string
		line, text, _ = strings.Cut(text, "\n")
		if when, rest, ok := stamp(strings.TrimSpace(line)); ok {
			p.when, line = when, rest
		}
		if r, rest, ok := roleMarker(line); ok {
			role, line, section = r, rest, secNone
			if when, rest, ok := stamp(strings.TrimSpace(line)); ok {
				p.when, line = when, rest
			}
		}
		t := strings.TrimSpace(line)
		if t == "" {
			section = secNone // children of a condensed input are apart by a blank line
		}
		if len(t) < 3 {
			continue
		}
		// a child summary's lines (a condensed input): its sections and
		// items, the identifiers line left to the identifier scan.
		if strings.HasPrefix(t, identifiersLabel) || strings.HasPrefix(t, "- "+identifiersLabel) || strings.HasPrefix(t, "Focus: ") {
			continue
		}
		if s, rest, ok := parseHeading(t); ok && role != 't' {
			section = s
			if rest != "" {
				p.addItems(rest, s)
			}
			continue
		}
		if section != secNone && strings.HasPrefix(t, "- ") {
			if item := strings.TrimSpace(t[2:]); item != "(none)" {
				p.addItems(item, section)
			}
			continue
		}
		codeLike := isCodeLike(line, t)
		if p.chat && len(t) <= chatTurnBytes && len(t) >= 8 {
			// a chat's short turn is one fact: kept whole, its
			// greeting and thanks with it, or not at all
			p.add(t, role, secNone, false)
			continue
		}
		for len(t) > 0 {
			end := sentenceEnd(t)
			s := strings.TrimSpace(t[:end])
			t = strings.TrimSpace(t[end:])
			if len(s) >= 8 {
				if codeLike {
					p.add(s, role|0x80, secNone, false)
				} else {
					p.add(s, role, secNone, false)
				}
			}
		}
	}
}

// addItems adds the " · "-separated items of one section of a child
// summary, each keeping its section and its leading date stamp.
func (p *plan) addItems(line string, section int) {
	for _, item := range strings.Split(line, " · ") {
		item = strings.TrimSpace(item)
		if when, rest, ok := stamp(item); ok {
			p.when, item = when, rest
		}
		if len(item) >= 3 {
			p.add(item, 'p', section, false)
		}
	}
}

// roleMarker recognises "user:", "[user]", "<assistant>", "## tool (read):".
func roleMarker(line string) (byte, string, bool) {
	i := 0
	for i < len(line) && i < 4 && (line[i] == '[' || line[i] == '#' || line[i] == '<' || line[i] == '*' || line[i] == ' ') {
		i++
	}
	j := i
	for j < len(line) && j-i < 20 && (isLetter(line[j]) || line[j] == '_') {
		j++
	}
	if j == i || j >= len(line) {
		return 0, "", false
	}
	word := line[i:j]
	if j+1 < len(line) && line[j] == ' ' && line[j+1] == '(' {
		j++
	}
	switch line[j] {
	case ':', ']', '>', '(', '*':
	default:
		return 0, "", false
	}
	var buf [20]byte
	w := buf[:0]
	for k := 0; k < len(word); k++ {
		w = append(w, word[k]|0x20)
	}
	r, ok := roleWords[string(w)]
	if !ok {
		return 0, "", false
	}
	// skip to the end of the marker
	k := j
	if line[k] == '(' {
		if c := strings.IndexByte(line[k:], ')'); c > 0 && c < 60 {
			k += c + 1
		}
	}
	for k < len(line) && (line[k] == ':' || line[k] == ']' || line[k] == '>' || line[k] == '*') {
		k++
	}
	return r, line[k:], true
}

// isCodeLike guesses whether a line is source code or data rather than prose.
func isCodeLike(line, t string) bool {
	if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "    ") {
		return true
	}
	switch t[len(t)-1] {
	case '{', '}', ';', ')', ',', '(', '[', ']':
		return true
	}
	switch t[0] {
	case '{', '}', '/', '<', '|', '+', '=':
		return true
	}
	return false
}

// sentenceEnd returns the end of the first sentence of t: after ". ", "? ",
// "! " followed by an upper-case letter, a digit or a quote, or the whole of
// t, capped near maxSentBytes*2 at a space.
func sentenceEnd(t string) int {
	lim := len(t)
	if lim > maxSentBytes*2 {
		lim = maxSentBytes * 2
	}
	for i := 1; i+2 < lim; i++ {
		c := t[i]
		if (c == '.' || c == '?' || c == '!') && t[i+1] == ' ' {
			n := t[i+2]
			if isUpper(n) || isDigit(n) || n == '"' || n == '`' || n == '*' {
				return i + 1
			}
		}
	}
	if lim < len(t) {
		if k := strings.LastIndexByte(t[:lim], ' '); k > lim/2 {
			return k
		}
		for lim < len(t) && !isRuneStartByte(t[lim]) {
			lim++
		}
	}
	return lim
}

func isRuneStartByte(b byte) bool { return b&0xC0 != 0x80 }

// Weights of the information score (see add and scoreInformation).
const (
	infoWeight    = 0.2 // per unit of summed inverse frequency of content words
	infoCap       = 12  // the most summed inverse frequency counted
	entityWeight  = 0.3 // per name (a capitalised word inside a sentence), at most 3
	timeBonus     = 0.4 // a date or time word
	prefBonus     = 0.5 // a preference, plan or life event (chat)
	digitBonus    = 0.3 // a number
	smallTalkLoss = 2   // at most one content word beside greetings and thanks
	questionLoss  = 0.7 // a question in a chat
	factsBase     = 2   // a chat sentence
	proseBase     = 0.8 // a coding session's prose of no section
	chatRecency   = 0   // weight of the position in a chat (1 in a coding session)
	chatCostDiv   = 60  // a chat candidate loses its estimated tokens / chatCostDiv (60 in a coding session)
)

// add scores one sentence and appends it as a candidate. Its content words
// are counted for the inverse frequencies that scoreInformation adds later.
func (p *plan) add(s string, role byte, section int, prev bool) {
	code := role&0x80 != 0
	role &^= 0x80
	if len(s) > maxSentBytes {
		cut := maxSentBytes
		if k := strings.LastIndexByte(s[:cut], ' '); k > cut/2 {
			cut = k
		}
		for cut > 0 && !isRuneStartByte(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	p.nSents++
	sentNo := int32(p.nSents)
	w0 := len(p.arena)
	var flags uint16
	focus := false
	words, content := 0, 0
	forEachWord(s, func(w string) {
		words++
		flags |= keywords[w]
		if !focus {
			if _, ok := p.focus[w]; ok {
				focus = true
			}
		}
		if len(w) < 3 || stopword(w) {
			return
		}
		if _, ok := smallTalk[w]; ok {
			return
		}
		content++
		id, ok := p.wordID[w]
		if !ok {
			id = int32(len(p.df))
			p.wordID[w] = id
			p.df = append(p.df, 0)
			p.lastSent = append(p.lastSent, 0)
		}
		if p.lastSent[id] == sentNo {
			return
		}
		p.lastSent[id] = sentNo
		p.df[id]++
		p.arena = append(p.arena, id)
	})
	ids := 0
	ident.Scan(s, func(int, int, ident.Kind) { ids++ })
	digits := strings.ContainsAny(s, "0123456789")
	if strings.Contains(s, "✅") {
		flags |= fDone
	}

	score := 0.0
	if section == secNone {
		if code || role == 't' {
			// tool output and code: only errors and identifiers matter
			flags &= fError
		}
		switch {
		case p.chat && !code && role != 't':
			section, score = secFacts, factsBase
		default:
			section, score = classify(flags, role, ids)
			if section == secNone && !code && role != 't' && content > 0 {
				section, score = secFacts, proseBase
			}
		}
		if section == secGoal {
			if !p.seenUser {
				score += 1.5 // the first ask: the original goal
				p.seenUser = true
			} else if flags&^(fTime|fPref) == 0 && ids == 0 && words < 6 {
				score = 0.5 // chatter: "sounds good", "ok"
			}
		}
		if code && section != secNone {
			score = 0.5
		} else if role == 't' && section != secNone {
			score -= 1
		}
	} else if prev {
		score = 3
	} else {
		score = sectionBase[section]
	}
	if section == secNone {
		p.arena = p.arena[:w0]
		return
	}
	switch {
	case prev:
		score += 2.5
	case p.chat:
		score += chatRecency * p.frac
	default:
		score += p.frac // the latest state matters most
	}
	if ids > 4 {
		ids = 4
	}
	if code {
		score += 0.25 * float64(ids)
	} else {
		score += 0.6 * float64(ids)
		score += entityWeight * float64(min(entities(s), 3))
	}
	if digits {
		score += digitBonus
	}
	if flags&fTime != 0 {
		score += timeBonus
	}
	if p.chat && flags&fPref != 0 {
		score += prefBonus
	}
	if ids == 0 && !digits && (content <= 1 || (content <= 2 && words >= 3*content)) {
		// "Hey Mel! Good to see you! How have you been?", "Thanks so much!"
		if p.chat && !prev {
			p.arena = p.arena[:w0]
			return // a chat's small talk is no fact
		}
		score -= smallTalkLoss
	}
	if p.chat && strings.HasSuffix(strings.TrimRight(s, " \"'”)"), "?") {
		score -= questionLoss
	}
	if focus && code {
		score += 1
	} else if focus {
		score += 4
	}
	cost := int(float64(len(s)+3)*p.ratio) + 1
	if p.when != "" {
		cost += int(float64(len(p.when)+3)*p.ratio) + 1 // the "(stamp) " it may be shown with
	}
	if p.chat {
		score -= float64(cost) / chatCostDiv
	} else {
		score -= float64(cost) / 60
	}
	score += float64(len(p.sents)) * 1e-6 // later sentences win ties: the latest state
	p.sents = append(p.sents, sent{text: s, order: len(p.sents), section: section, score: score, cost: cost, prev: prev,
		w0: int32(w0), w1: int32(len(p.arena)), when: p.when})
}

// scoreInformation adds to every candidate the summed inverse frequency of
// its content words within the summarized text (rare words, the specific
// facts, weigh most), capped so that length alone does not win.
func (p *plan) scoreInformation() {
	if len(p.sents) == 0 {
		return
	}
	n := float64(p.nSents)
	idf := make([]float64, len(p.df))
	for i, d := range p.df {
		idf[i] = math.Log(1 + n/float64(d))
	}
	for i := range p.sents {
		s := &p.sents[i]
		sum := 0.0
		for _, w := range p.arena[s.w0:s.w1] {
			sum += idf[w]
		}
		s.score += infoWeight * math.Min(sum, infoCap)
	}
}

// entities counts the capitalised words of s that do not start a sentence
// (names of people, places, products), "I" aside.
func entities(s string) int {
	n := 0
	start := true
	for i := 0; i < len(s); {
		c := s[i]
		if isLetter(c) {
			j := i
			for j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || s[j] == '\'' || s[j] == '-') {
				j++
			}
			if isUpper(c) && !start && s[i:j] != "I" && !strings.HasPrefix(s[i:j], "I'") {
				n++
			}
			start = false
			i = j
			continue
		}
		switch c {
		case '.', '!', '?', ':', '"', '\n':
			start = true
		}
		i++
	}
	return n
}

// classify picks a sentence's section and base score from its keywords.
func classify(f uint16, role byte, ids int) (int, float64) {
	switch {
	case f&fBlocked != 0:
		return secBlocked, 3
	case role == 'u' && f&fConstraint != 0:
		return secConstraints, 3.5
	case role == 'u':
		return secGoal, 3
	case f&fDecision != 0:
		return secDecisions, 3
	case f&fError != 0:
		return secContext, 2.5
	case f&fDone != 0:
		return secDone, 2
	case f&fNext != 0:
		return secNext, 2.2
	case f&fProgress != 0:
		return secInProgress, 1.8
	case ids > 0:
		return secContext, 1.2
	}
	return secNone, 0
}

// forEachWord calls fn with every ASCII word of s, lower-cased (apostrophes
// and inner hyphens kept). The string passed to fn is only valid during the
// call.
func forEachWord(s string, fn func(string)) {
	var buf [24]byte
	n := 0
	long := false
	flush := func() {
		if n > 0 && !long {
			fn(string(buf[:n]))
		}
		n, long = 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLetter(c) || (n > 0 && (c == '\'' || c == '-')) {
			if n < len(buf) {
				buf[n] = c | 0x20
				n++
			} else {
				long = true
			}
			continue
		}
		flush()
	}
	flush()
}

var stopwords = setOf("the and for with that this from into what when where which while have has had was were are " +
	"you your our their them they then than also just only about please keep focus more most some any all")

func stopword(w string) bool { _, ok := stopwords[w]; return ok }

// render lays out the best candidates that fit in about budget tokens.
func (p *plan) render(budget int) string {
	var headCost int
	focusLine := ""
	if f := strings.TrimSpace(p.req.Focus); f != "" {
		f = strings.Join(strings.Fields(f), " ")
		if len(f) > 200 {
			f = f[:200]
			for len(f) > 0 && !isRuneStartByte(f[len(f)-1]) {
				f = f[:len(f)-1]
			}
		}
		focusLine = "Focus: " + f
		headCost += int(float64(len(focusLine)+1)*p.ratio) + 2
	}
	if !p.compact && !p.chat {
		headCost += 45 + 3*numSections // headings and "(none)" lines
	}
	avail := budget - headCost
	if avail < 1 {
		avail = budget / 2
	}

	// pick sentences for ~80% of the room, then identifiers, then more sentences.
	order := make([]int, len(p.sents))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p.sents[order[a]].score > p.sents[order[b]].score })
	chosen := make([]bool, len(p.sents))
	seen := map[string]struct{}{}
	have := make([]bool, len(p.df)) // content words the chosen sentences hold
	used := 0
	pick := func(limit int) {
		misses := 0
		for _, i := range order {
			if chosen[i] {
				continue
			}
			s := p.sents[i]
			if used+s.cost > limit {
				misses++
				if misses > 64 {
					return
				}
				continue
			}
			if _, dup := seen[s.text]; dup {
				continue
			}
			seen[s.text] = struct{}{}
			// a near-duplicate: the summary already holds 80% of its words
			if words := p.arena[s.w0:s.w1]; len(words) >= 3 {
				old := 0
				for _, w := range words {
					if have[w] {
						old++
					}
				}
				if old*5 >= len(words)*4 {
					continue
				}
			}
			for _, w := range p.arena[s.w0:s.w1] {
				have[w] = true
			}
			chosen[i] = true
			used += s.cost
		}
	}
	pick(avail * 4 / 5)

	var keptText strings.Builder
	for i, c := range chosen {
		if c {
			keptText.WriteString(p.sents[i].text)
			keptText.WriteByte('\n')
		}
	}
	kept := keptText.String()
	var idLine []string
	idSeen := map[string]struct{}{}
	addID := func(id string) bool {
		if _, ok := idSeen[id]; ok {
			return true
		}
		idSeen[id] = struct{}{}
		if strings.Contains(kept, id) {
			return true
		}
		c := int(float64(len(id)+2)*p.ratio) + 1
		if used+c > avail {
			return false
		}
		used += c
		idLine = append(idLine, id)
		return true
	}
	for _, id := range p.prevIDs {
		if !addID(id) {
			break
		}
	}
	for _, id := range p.ids {
		if !addID(id) {
			break
		}
	}
	pick(avail)

	var bySec [numSections + 1][]string
	var lastWhen [numSections + 1]string
	for i, c := range chosen {
		if c {
			s := p.sents[i]
			label := factsLabel
			if s.section < numSections {
				label = sectionLabels[s.section]
			}
			text := trimLabel(s.text, label)
			if s.when != "" && s.when != lastWhen[s.section] {
				text = "(" + s.when + ") " + text
				lastWhen[s.section] = s.when
			}
			bySec[s.section] = append(bySec[s.section], text)
		}
	}
	var b strings.Builder
	if focusLine != "" {
		b.WriteString(focusLine)
		b.WriteByte('\n')
	}
	if p.compact {
		for s := 0; s < numSections; s++ {
			if len(bySec[s]) == 0 {
				continue
			}
			b.WriteString(sectionLabels[s])
			b.WriteString(": ")
			b.WriteString(strings.Join(bySec[s], " · "))
			b.WriteByte('\n')
		}
		if len(bySec[secFacts]) > 0 {
			b.WriteString(factsLabel)
			b.WriteString(": ")
			b.WriteString(strings.Join(bySec[secFacts], " · "))
			b.WriteByte('\n')
		}
		if len(idLine) > 0 {
			b.WriteString(identifiersLabel)
			b.WriteString(strings.Join(idLine, ", "))
			b.WriteByte('\n')
		}
		return strings.TrimRight(b.String(), "\n")
	}
	for s := 0; s < numSections; s++ {
		if p.chat && len(bySec[s]) == 0 && (s != secContext || len(idLine) == 0) {
			continue // a chat shows only the sections it has
		}
		if s == secDone {
			b.WriteString(progressHeading)
			b.WriteByte('\n')
		}
		b.WriteString(sectionHeadings[s])
		b.WriteByte('\n')
		items := bySec[s]
		if s == secContext && len(idLine) > 0 {
			items = append(items, identifiersLabel+strings.Join(idLine, ", "))
		}
		if len(items) == 0 {
			b.WriteString("- (none)\n")
		}
		for _, it := range items {
			b.WriteString("- ")
			b.WriteString(it)
			b.WriteByte('\n')
		}
	}
	if len(bySec[secFacts]) > 0 {
		b.WriteString(factsHeading)
		b.WriteByte('\n')
		for _, it := range bySec[secFacts] {
			b.WriteString("- ")
			b.WriteString(it)
			b.WriteByte('\n')
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// trimLabel drops a leading "label:" that repeats the section's own label.
func trimLabel(s, label string) string {
	if len(s) > len(label)+1 && s[len(label)] == ':' && strings.EqualFold(s[:len(label)], label) {
		if t := strings.TrimSpace(s[len(label)+1:]); t != "" {
			return t
		}
	}
	return s
}

func isLetter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }
func isDigit(b byte) bool  { return b >= '0' && b <= '9' }
func isUpper(b byte) bool  { return b >= 'A' && b <= 'Z' }

func setOf(words string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(words) {
		m[w] = struct{}{}
	}
	return m
}
