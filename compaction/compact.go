package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
)

// Details is what Compact reports in CompactResult.Result.Details and writes
// in the compaction entry's details.
type Details struct {
	// ReadFiles and ModifiedFiles are the files read and modified in the
	// summarised history (including a previous compaction's lists).
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
	// Trigger is "force" or "threshold".
	Trigger string `json:"trigger"`
	// ContextWindow, ReserveTokens and Threshold (window − reserve) are the
	// figures the trigger used; ContextTokens is the count compared with the
	// threshold (the host's currentTokenCount when given).
	ContextWindow int `json:"contextWindow"`
	ReserveTokens int `json:"reserveTokens"`
	Threshold     int `json:"threshold"`
	ContextTokens int `json:"contextTokens"`
	// KeepRecentTokens is the effective keep budget; KeptTokens what the kept
	// entries take; SummaryTokens what the summary takes.
	KeepRecentTokens int `json:"keepRecentTokens"`
	KeptTokens       int `json:"keptTokens"`
	SummaryTokens    int `json:"summaryTokens"`
	// SummarisedEntries and KeptEntries count transcript entries.
	SummarisedEntries int `json:"summarisedEntries"`
	KeptEntries       int `json:"keptEntries"`
	// FirstKeptEntryKey is the kept entry's id, or "#<index>" in files
	// without ids (then FirstKeptEntryIndex is set too).
	FirstKeptEntryKey   string `json:"firstKeptEntryKey"`
	FirstKeptEntryIndex *int   `json:"firstKeptEntryIndex,omitempty"`
	// SplitTurn is true when the cut fell inside a turn and the turn's
	// prefix got a summary of its own.
	SplitTurn bool `json:"splitTurn"`
	// UpdatedPrevious is true when a previous compaction's summary was
	// updated.
	UpdatedPrevious bool `json:"updatedPrevious"`
	// SummarizerCalls, Chunks (summarizer inputs of the history),
	// OversizeMarkers and Escalations (aggressive retries and truncation
	// fallbacks) describe the summarisation.
	Summarizer      string `json:"summarizer"`
	SummarizerCalls int    `json:"summarizerCalls"`
	Chunks          int    `json:"chunks"`
	OversizeMarkers int    `json:"oversizeMarkers"`
	Escalations     int    `json:"escalations"`
	// IdentifierRetention is the share of distinct identifiers (UUIDs, file
	// paths, URLs) of the summarised messages that the summary keeps.
	IdentifierRetention Retention `json:"identifierRetention"`
	// FitsTarget reports whether tokensAfter <= Threshold.
	FitsTarget bool `json:"fitsTarget"`
	// DurationMs is the wall time of the compaction.
	DurationMs int64 `json:"durationMs"`
}

// Entry is the compaction line Compact appends to the transcript.
// ParentID is the id of the branch's last entry; in old files without ids
// it is null (such files are linear), FirstKeptEntryID is omitted and
// FirstKeptEntryIndex (the kept entry's 0-based index among the file's
// non-empty lines, the header being 0) is written instead.
type Entry struct {
	Type                string  `json:"type"`
	ID                  string  `json:"id"`
	ParentID            *string `json:"parentId"`
	Timestamp           string  `json:"timestamp"`
	Summary             string  `json:"summary"`
	FirstKeptEntryID    string  `json:"firstKeptEntryId,omitempty"`
	FirstKeptEntryIndex *int    `json:"firstKeptEntryIndex,omitempty"`
	TokensBefore        int     `json:"tokensBefore"`
	TokensAfter         int     `json:"tokensAfter"`
	Details             Details `json:"details"`
}

// Reasons Compact gives when it does not compact.
const (
	ReasonBelowThreshold = "context is below the compaction threshold"
	ReasonNothing        = "nothing to compact: the history fits in the kept recent tokens"
	ReasonNoGain         = "compaction would not reduce the context's tokens"
)

var pathLocks sync.Map // path -> *sync.Mutex

func lockPath(path string) func() {
	v, _ := pathLocks.LoadOrStore(path, new(sync.Mutex))
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Compact runs the built-in summary compaction over the session transcript
// at sessionFile (see the package documentation). It appends one compaction
// entry and never rewrites earlier lines. It returns OK with Compacted false
// and a Reason when there is nothing to do (below the threshold without
// p.Force, nothing older than the kept tokens, or no gain); errors are I/O
// failures, cancellation, ErrNoSessionFile and ErrTranscriptChanged.
func Compact(ctx context.Context, sessionFile string, p core.CompactParams, opts Options) (core.CompactResult, error) {
	start := time.Now()
	if sessionFile == "" {
		return core.CompactResult{}, ErrNoSessionFile
	}
	o := opts.WithDefaults()
	lockKey := sessionFile
	if abs, err := filepath.Abs(sessionFile); err == nil {
		lockKey = abs
	}
	unlock := lockPath(lockKey)
	defer unlock()
	if err := ctx.Err(); err != nil {
		return core.CompactResult{}, fmt.Errorf("compaction: %w", err)
	}
	st0, err := os.Stat(sessionFile)
	if err != nil {
		return core.CompactResult{}, fmt.Errorf("compaction: %w", err)
	}
	t, err := core.ReadTranscript(sessionFile)
	if err != nil {
		return core.CompactResult{}, fmt.Errorf("compaction: %w", err)
	}
	w := t.Window()
	tc := o.Counter

	// Token counts of the current window.
	entries := w.Entries
	tok := make([]int, len(entries))
	msgs := make([]core.Message, len(entries))
	has := make([]bool, len(entries))
	total := 0
	prevSummary := ""
	if w.Compaction != nil {
		prevSummary = w.Compaction.Summary
		total += tc.CountText(prevSummary)
	}
	for i, e := range entries {
		if m, ok := e.ModelMessage(); ok {
			msgs[i], has[i] = m, true
			tok[i] = core.CountMessage(tc, m)
			total += tok[i]
		}
	}
	d := Details{Summarizer: o.Summarizer.Name()}
	d.ContextWindow = o.Window(p)
	d.ReserveTokens = EffectiveReserve(d.ContextWindow, o.ReserveTokens)
	d.Threshold = d.ContextWindow - d.ReserveTokens
	d.ContextTokens = total
	if p.CurrentTokenCount > 0 {
		d.ContextTokens = p.CurrentTokenCount
	}
	d.Trigger = "threshold"
	if p.Force {
		d.Trigger = "force"
	}
	noop := func(reason string) (core.CompactResult, error) {
		return core.CompactResult{OK: true, Compacted: false, Reason: reason,
			Result: &core.CompactOutcome{TokensBefore: total}}, nil
	}
	if !p.Force && d.ContextTokens <= d.Threshold {
		return noop(ReasonBelowThreshold)
	}

	// Keep budget: the recent tokens, lowered so that kept + summary fit
	// under the threshold.
	keep := o.KeepRecentTokens
	summaryRoom := o.MaxSummaryChars / 3
	if room := d.Threshold - summaryRoom; keep > room {
		keep = room
		if keep < d.Threshold/4 {
			keep = d.Threshold / 4
		}
	}
	d.KeepRecentTokens = keep
	valid := make([]bool, len(entries))
	for i, e := range entries {
		valid[i] = isCutPoint(e, msgs[i], has[i])
	}
	cutAt := FindCut(tok, valid, keep)
	if cutAt <= 0 {
		return noop(ReasonNothing)
	}
	span := entries[:cutAt]
	kept := entries[cutAt:]

	// Split turn: the cut falls inside a turn when the first kept entry is
	// not a user message; the turn's prefix is summarised separately.
	histEnd := cutAt
	if !(has[cutAt] && msgs[cutAt].Role() == core.RoleUser) {
		for i := cutAt - 1; i >= 0; i-- {
			if has[i] && msgs[i].Role() == core.RoleUser {
				if i > 0 {
					histEnd = i
				}
				break
			}
		}
	}
	var hist, prefix []core.Message
	for i := 0; i < cutAt; i++ {
		if !has[i] {
			continue
		}
		if i < histEnd {
			hist = append(hist, msgs[i])
		} else {
			prefix = append(prefix, msgs[i])
		}
	}
	d.SplitTurn = len(prefix) > 0
	d.UpdatedPrevious = prevSummary != ""

	s := &stager{o: o, focus: p.CustomInstructions, d: &d}
	narrative, err := s.summarizeStaged(ctx, hist, prevSummary, o.SummaryTokens, true)
	if err != nil {
		return core.CompactResult{}, err
	}
	var turnSummary string
	if len(prefix) > 0 {
		turnSummary, err = s.summarizeStaged(ctx, prefix, "", o.TurnPrefixTokens, false)
		if err != nil {
			return core.CompactResult{}, err
		}
	}

	spanMsgs := append(append([]core.Message(nil), hist...), prefix...)
	var spanText strings.Builder
	for _, m := range spanMsgs {
		spanText.WriteString(RenderMessage(m, -1))
		spanText.WriteByte('\n')
	}
	ids := Identifiers(spanText.String())
	summary, files := buildSummary(o, prevSummary, narrative, turnSummary, hist, prefix, ids, p.CustomInstructions)
	d.ReadFiles, d.ModifiedFiles = files.Read, files.Modified
	if d.ReadFiles == nil {
		d.ReadFiles = []string{}
	}
	if d.ModifiedFiles == nil {
		d.ModifiedFiles = []string{}
	}
	d.IdentifierRetention = MeasureRetention(ids, summary)

	d.SummaryTokens = tc.CountText(summary)
	for i := cutAt; i < len(entries); i++ {
		d.KeptTokens += tok[i]
	}
	after := d.SummaryTokens + d.KeptTokens
	d.SummarisedEntries, d.KeptEntries = len(span), len(kept)
	d.FitsTarget = after <= d.Threshold
	if after >= total {
		return core.CompactResult{OK: false, Compacted: false, Reason: ReasonNoGain,
			Result: &core.CompactOutcome{TokensBefore: total, TokensAfter: total}}, nil
	}

	first := entries[cutAt]
	ent := Entry{Type: core.EntryCompaction, ID: o.NewID(), Summary: summary,
		Timestamp: o.Now().UTC().Format("2006-01-02T15:04:05.000Z"), TokensBefore: total, TokensAfter: after}
	d.FirstKeptEntryKey = first.Key()
	if first.ID != "" {
		ent.FirstKeptEntryID = first.ID
	} else {
		idx := first.Index
		ent.FirstKeptEntryIndex = &idx
		d.FirstKeptEntryIndex = &idx
	}
	if leaf := leafID(t); leaf != "" {
		ent.ParentID = &leaf
	}
	d.DurationMs = time.Since(start).Milliseconds()
	ent.Details = d

	if err := ctx.Err(); err != nil {
		return core.CompactResult{}, fmt.Errorf("compaction: %w", err)
	}
	if st, err := os.Stat(sessionFile); err != nil {
		return core.CompactResult{}, fmt.Errorf("compaction: %w", err)
	} else if st.Size() != st0.Size() || !st.ModTime().Equal(st0.ModTime()) {
		return core.CompactResult{}, fmt.Errorf("%w: %d bytes before, %d now", ErrTranscriptChanged, st0.Size(), st.Size())
	}
	if err := core.AppendTranscript(sessionFile, ent); err != nil {
		return core.CompactResult{}, fmt.Errorf("compaction: %w", err)
	}
	det, err := json.Marshal(d)
	if err != nil {
		return core.CompactResult{}, fmt.Errorf("compaction: encode details: %w", err)
	}
	return core.CompactResult{OK: true, Compacted: true, Result: &core.CompactOutcome{
		Summary: summary, FirstKeptEntryID: first.Key(), TokensBefore: total, TokensAfter: after,
		Details: det, SessionID: p.SessionID, SessionFile: sessionFile}}, nil
}

// leafID is the id the new entry's parentId names: the last entry's id in a
// file with ids, "" (null) in an old linear file.
func leafID(t *core.Transcript) string {
	if len(t.Entries) == 0 || t.Entries[0].ID == "" {
		return ""
	}
	br := t.ActiveBranch()
	for i := len(br) - 1; i >= 0; i-- {
		if br[i].ID != "" {
			return br[i].ID
		}
	}
	return ""
}

// isCutPoint reports whether the window may start at e: any model-visible
// entry except a toolResult (which would be parted from its call).
func isCutPoint(e core.Entry, m core.Message, isMsg bool) bool {
	if !isMsg {
		return false
	}
	return m.Role() != core.RoleToolResult
}

// FindCut returns the index of the first kept entry: walking back from the
// end, the first index where the kept tokens reach keep, moved forward to
// the next valid cut point (moved back to the previous one when none
// follows). It returns 0 when everything fits in keep or there is no valid
// cut point before which anything would be summarised.
func FindCut(tokens []int, valid []bool, keep int) int {
	acc := 0
	i := len(tokens) - 1
	for ; i >= 0; i-- {
		acc += tokens[i]
		if acc >= keep {
			break
		}
	}
	if i <= 0 {
		return 0
	}
	for j := i; j < len(tokens); j++ {
		if valid[j] {
			return j
		}
	}
	for j := i - 1; j > 0; j-- {
		if valid[j] {
			return j
		}
	}
	return 0
}

// stager runs the summarizer over chunks and merges the partial summaries.
type stager struct {
	o     Options
	focus string
	d     *Details
}

// summarizeStaged summarises msgs (updating prev) in chunks that fit the
// summarizer's window, then merges the partial summaries.
func (s *stager) summarizeStaged(ctx context.Context, msgs []core.Message, prev string, target int, main bool) (string, error) {
	if len(msgs) == 0 {
		return "", nil
	}
	tc := s.o.Counter
	limit := s.o.SummarizerWindowTokens
	prevTokens := tc.CountText(prev)
	chunkLimit := limit - prevTokens
	if chunkLimit < limit/2 {
		chunkLimit = limit / 2
	}
	chunks, markers := Chunk(tc, msgs, chunkLimit, s.o.ToolResultMaxChars)
	if main {
		s.d.Chunks = len(chunks)
	}
	s.d.OversizeMarkers += markers
	if len(chunks) == 0 {
		return "", nil
	}
	if len(chunks) == 1 {
		return s.call(ctx, core.SummarizeRequest{Text: chunks[0], TargetTokens: target,
			PreviousSummary: prev, Focus: s.focus, Kind: core.SummaryCompaction})
	}
	partials := make([]string, 0, len(chunks))
	for _, c := range chunks {
		out, err := s.call(ctx, core.SummarizeRequest{Text: c, TargetTokens: target,
			Focus: s.focus, Kind: core.SummaryCompaction})
		if err != nil {
			return "", err
		}
		partials = append(partials, out)
	}
	// Merge: groups of partials that fit the window, until one input is left.
	for {
		groups := groupTexts(tc, partials, chunkLimit)
		if len(groups) == 1 {
			return s.call(ctx, core.SummarizeRequest{Text: groups[0], TargetTokens: target,
				PreviousSummary: prev, Focus: s.focus, Kind: core.SummaryCompaction})
		}
		next := make([]string, 0, len(groups))
		for _, g := range groups {
			out, err := s.call(ctx, core.SummarizeRequest{Text: g, TargetTokens: target,
				Focus: s.focus, Kind: core.SummaryCondensed})
			if err != nil {
				return "", err
			}
			next = append(next, out)
		}
		if len(next) >= len(partials) {
			// No progress (partials as large as the window): cut and stop.
			return s.call(ctx, core.SummarizeRequest{Text: core.Truncate(tc, strings.Join(next, "\n\n"), chunkLimit),
				TargetTokens: target, PreviousSummary: prev, Focus: s.focus, Kind: core.SummaryCompaction})
		}
		partials = next
	}
}

// groupTexts joins texts into groups of at most limit tokens (a text larger
// than limit is a group of its own, cut to limit).
func groupTexts(tc core.TokenCounter, texts []string, limit int) []string {
	var groups []string
	var cur []string
	n := 0
	for _, t := range texts {
		k := tc.CountText(t) + 2
		if k > limit {
			t = core.Truncate(tc, t, limit-2)
			k = limit
		}
		if n+k > limit && len(cur) > 0 {
			groups = append(groups, strings.Join(cur, "\n\n"))
			cur, n = nil, 0
		}
		cur = append(cur, t)
		n += k
	}
	if len(cur) > 0 {
		groups = append(groups, strings.Join(cur, "\n\n"))
	}
	return groups
}

// call runs one summarization with escalation: the request, then an
// aggressive retry, then deterministic truncation. Cancellation is returned.
func (s *stager) call(ctx context.Context, req core.SummarizeRequest) (string, error) {
	for attempt := 0; attempt < 2; attempt++ {
		req.Aggressive = attempt == 1
		s.d.SummarizerCalls++
		out, err := s.o.Summarizer.Summarize(ctx, req)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", fmt.Errorf("compaction: summarize: %w", ctxErr)
		}
		if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return "", fmt.Errorf("compaction: summarize: %w", err)
		}
		if err == nil && strings.TrimSpace(out) != "" {
			return out, nil
		}
		s.d.Escalations++
	}
	// Deterministic truncation, shorter than the input by construction.
	target := req.TargetTokens
	if half := s.o.Counter.CountText(req.Text) / 2; half < target {
		target = half
	}
	return core.Truncate(s.o.Counter, req.Text, target), nil
}

var reConstraint = regexp.MustCompile(`(?i)\b(always|never|don't|do not|dont|must|should|shouldn't|prefer|avoid|make sure|instead of|rather than|no need|only)\b`)

// buildSummary assembles the final summary: the previous summary's
// sections, the summarizer's narrative, what can be read off the messages
// deterministically (goal, constraints, errors, next request, files,
// identifiers), the split turn's prefix summary and the focus text, capped
// at MaxSummaryChars.
func buildSummary(o Options, prev, narrative, turn string, hist, prefix []core.Message, ids []ident.Identifier, focus string) (string, FileOps) {
	s := Summary{Sections: map[string][]string{}}
	prevS, prevFree, _ := ParseSummary(prev)
	all := append(append([]core.Message(nil), hist...), prefix...)
	s.Files = CollectFileOps(all, prevS.Files)

	// Goal: the previous goal, else the summarizer's, else the first request.
	s.add(SecGoal, prevS.Sections[SecGoal]...)
	narS, narFree, narOK := ParseSummary(narrative)
	if len(s.Sections[SecGoal]) == 0 {
		s.add(SecGoal, narS.Sections[SecGoal]...)
	}
	users := userTexts(all)
	if len(s.Sections[SecGoal]) == 0 && len(users) > 0 {
		s.add(SecGoal, bullet(users[0], 600))
	}
	if strings.TrimSpace(focus) != "" {
		s.add(SecGoal, bullet("Additional focus (from /compact): "+focus, 1000))
	}
	for _, key := range []string{SecConstraints, SecDone, SecInProgress, SecBlocked, SecDecisions, SecNextSteps, SecCritical} {
		s.add(key, prevS.Sections[key]...)
	}
	for _, l := range prevFree {
		s.add(SecDone, bullet(l, 500))
	}
	// Constraints stated by the user.
	n := 0
	for _, u := range users {
		for _, sent := range sentences(u) {
			if n < 8 && reConstraint.MatchString(sent) && len(sent) < 400 {
				s.add(SecConstraints, bullet(sent, 300))
				n++
			}
		}
	}
	// The summarizer's narrative.
	if narOK {
		for _, key := range []string{SecConstraints, SecDone, SecInProgress, SecBlocked, SecDecisions, SecNextSteps, SecCritical} {
			s.add(key, narS.Sections[key]...)
		}
	}
	for _, l := range narFree {
		s.add(SecDone, bullet(l, 500))
	}
	// Work in progress: the last assistant text of the summarised span.
	if last := lastAssistantText(hist); last != "" {
		s.add(SecInProgress, bullet("Last reported: "+last, 500))
	}
	// Blocked: the most recent errors.
	for _, e := range lastErrors(all, 3) {
		s.add(SecBlocked, bullet(e, 300))
	}
	// Next steps: the latest request.
	if len(users) > 0 {
		s.add(SecNextSteps, bullet("Latest request: "+users[len(users)-1], 600))
	}
	if turn != "" {
		if len(prefix) > 0 && prefix[0].Role() == core.RoleUser {
			s.add(SecTurn, bullet("Turn request: "+prefix[0].Text(), 600))
		}
		for _, l := range strings.Split(turn, "\n") {
			s.add(SecTurn, bullet(l, 500))
		}
	}
	// Identifiers the summary does not yet contain, most important first.
	have := s.Render()
	missing := missingIdentifiers(ids, prevS, have)
	s.setIDs(missing)
	return s.capTo(o.MaxSummaryChars, &missing), s.Files
}

var kindRank = map[ident.Kind]int{ident.UUID: 0, ident.URL: 1, ident.Path: 2, ident.Host: 3, ident.Hash: 4}

func missingIdentifiers(ids []ident.Identifier, prev Summary, have string) []string {
	// Identifiers of the previous summary's identifier line stay listed.
	var prevIDs []string
	for _, l := range prev.Sections[SecCritical] {
		if strings.HasPrefix(l, idsPrefix) {
			prevIDs = strings.Split(strings.TrimPrefix(l, idsPrefix), ", ")
		}
	}
	type ranked struct {
		v    string
		rank int
		pos  int
	}
	var list []ranked
	seen := map[string]bool{}
	for i := len(ids) - 1; i >= 0; i-- { // most recent first within a kind
		id := ids[i]
		if seen[id.Value] || strings.Contains(have, id.Value) || strings.ContainsAny(id.Value, ",\n") {
			continue
		}
		seen[id.Value] = true
		list = append(list, ranked{id.Value, kindRank[id.Kind], len(list)})
	}
	for _, v := range prevIDs {
		if v != "" && !seen[v] {
			seen[v] = true
			list = append(list, ranked{v, 5, len(list)})
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].rank < list[j].rank })
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.v
	}
	return out
}

func userTexts(msgs []core.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role() == core.RoleUser {
			if t := strings.TrimSpace(m.Text()); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

func lastAssistantText(msgs []core.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role() == core.RoleAssistant {
			if t := strings.TrimSpace(msgs[i].Text()); t != "" {
				return t
			}
		}
	}
	return ""
}

func lastErrors(msgs []core.Message, n int) []string {
	var out []string
	for i := len(msgs) - 1; i >= 0 && len(out) < n; i-- {
		m := msgs[i]
		switch {
		case m.Role() == core.RoleToolResult && m.IsError():
			out = append(out, m.ToolName()+" failed: "+firstLine(m.Text()))
		case m.Role() == core.RoleAssistant && m.StopReason() == "error" && m.ErrorMessage() != "":
			out = append(out, "model error: "+firstLine(m.ErrorMessage()))
		case m.Role() == core.RoleBashExecution && m.ExitCode() != nil && *m.ExitCode() != 0:
			out = append(out, fmt.Sprintf("`%s` exited %d: %s", m.Command(), *m.ExitCode(), firstLine(m.Output())))
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

var reSentence = regexp.MustCompile(`[^.!?\n]+[.!?]?`)

func sentences(s string) []string {
	var out []string
	for _, m := range reSentence.FindAllString(s, -1) {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}
