package dag

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/lossless-engine/contextengine/core"
)

// Mode says how far a compaction goes (the contract's compactionTarget).
type Mode string

// Compaction modes.
const (
	// ModeThreshold compacts until the context items take at most
	// ContextThreshold × Budget tokens (what /compact and proactive
	// compaction ask for: room for the next turns).
	ModeThreshold Mode = "threshold"
	// ModeBudget compacts until the context items fit the Budget itself
	// (overflow recovery: the least change that makes the prompt fit).
	ModeBudget Mode = "budget"
)

// Config tunes a Compactor. Zero fields take the documented defaults.
type Config struct {
	// ContextThreshold is the share of the budget that triggers compaction
	// and, in ModeThreshold, the share to get under. Default 0.75.
	ContextThreshold float64
	// FreshTailMessages is how many of the newest raw messages are never
	// compacted (extended back to the newest user message). Default 64.
	FreshTailMessages int
	// FreshTailMaxTokens caps the fresh tail's tokens. Default (0): half the
	// run's goal, so that a tail of huge messages cannot block convergence.
	FreshTailMaxTokens int
	// LeafChunkTokens is the most raw-message tokens one leaf summary
	// covers (a chunk may exceed it to keep a tool call with its results).
	// Default 20000.
	LeafChunkTokens int
	// LeafTargetTokens is the target size of a leaf summary. Default 2400.
	LeafTargetTokens int
	// CondensedTargetTokens is the target size of a condensed summary.
	// Default 2000.
	CondensedTargetTokens int
	// CondensedChunkTokens is the most summary tokens one condensed summary
	// covers. Default LeafChunkTokens.
	CondensedChunkTokens int
	// MinFanIn is the fewest summaries of one depth condensed together.
	// Default 4; relaxed to 2 when the context is over its goal.
	MinFanIn int
	// SummaryShare is the share of the goal the summaries outside the fresh
	// tail may take before they are condensed even without pressure.
	// Default 0.5.
	SummaryShare float64
	// Concurrency bounds the summarizer calls in flight. Default 4.
	Concurrency int
	// MaxRounds bounds the planning rounds of one Run (a round is one leaf
	// pass or one depth of condensation). Default 32.
	MaxRounds int
	// CallTimeout bounds one summarizer call; a call that times out is
	// escalated like a failure. Default 2 minutes.
	CallTimeout time.Duration
	// Render renders a summary as the model sees it; Tokens is counted on
	// its output. Default RenderText.
	Render func(Summary) string
	// NewID returns a fresh summary id. Default "sum_" + 32 hex digits.
	NewID func() string
	// Now is the clock for CreatedAt. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.ContextThreshold <= 0 || c.ContextThreshold > 1 {
		c.ContextThreshold = 0.75
	}
	if c.FreshTailMessages <= 0 {
		c.FreshTailMessages = 64
	}
	if c.LeafChunkTokens <= 0 {
		c.LeafChunkTokens = 20000
	}
	if c.LeafTargetTokens <= 0 {
		c.LeafTargetTokens = 2400
	}
	if c.CondensedTargetTokens <= 0 {
		c.CondensedTargetTokens = 2000
	}
	if c.CondensedChunkTokens <= 0 {
		c.CondensedChunkTokens = c.LeafChunkTokens
	}
	if c.MinFanIn < 2 {
		c.MinFanIn = 4
	}
	if c.SummaryShare <= 0 || c.SummaryShare > 1 {
		c.SummaryShare = 0.5
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.MaxRounds <= 0 {
		c.MaxRounds = 32
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 2 * time.Minute
	}
	if c.Render == nil {
		c.Render = RenderText
	}
	if c.NewID == nil {
		c.NewID = NewSummaryID
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// NewSummaryID returns "sum_" followed by 32 random hex digits.
func NewSummaryID() string {
	return "sum_" + strings.ReplaceAll(uuid.NewString(), "-", "")
}

// Target says what one Run must achieve.
type Target struct {
	// Budget is the model's token budget for the prompt (required).
	Budget int
	// Reserved is the tokens outside the context items that count against
	// the budget (system prompt, tools, the incoming prompt).
	Reserved int
	// Force compacts even under the goal: one leaf pass over everything
	// outside the fresh tail, then condensation as usual.
	Force bool
	// Mode is ModeThreshold (default) or ModeBudget.
	Mode Mode
	// Focus is extra focus text for the summarizer (/compact instructions).
	Focus string
}

// Goal returns the most tokens the context items may take after a Run with
// this target: ContextThreshold × Budget (ModeThreshold) or Budget
// (ModeBudget), minus Reserved.
func (t Target) Goal(threshold float64) int {
	if threshold <= 0 || threshold > 1 {
		threshold = 0.75
	}
	g := t.Budget
	if t.Mode != ModeBudget {
		g = int(float64(t.Budget) * threshold)
	}
	return g - t.Reserved
}

// Result reports one Run.
type Result struct {
	// TokensBefore and TokensAfter are the context items' tokens.
	TokensBefore int
	TokensAfter  int
	// Goal is the target the run worked towards.
	Goal int
	// TailTokens is the fresh tail's tokens at the end of the run.
	TailTokens int
	// Rounds is the number of planning rounds that did work.
	Rounds int
	// NewSummaryIDs lists the summaries made, in the order planned.
	NewSummaryIDs []string
	// TailTooLarge is set when the fresh tail alone leaves no room under the
	// goal: the run stopped there instead of looping.
	TailTooLarge bool
	// Reason explains a run that did nothing or ended above the goal.
	Reason string
	// Calls counts summarizer calls; Aggressive and Truncated count the
	// summaries that needed the second step or deterministic truncation,
	// Refused those the summarizer's fallback wrote because the model's
	// summary was refused (MethodRefused).
	Calls      int
	Aggressive int
	Truncated  int
	Refused    int
	// Conflicts counts replacements refused with ErrConflict (re-planned).
	Conflicts int
}

// Compacted reports whether the run lowered the context's tokens.
func (r Result) Compacted() bool { return r.TokensAfter < r.TokensBefore }

// Compactor plans and runs compactions. It is safe for concurrent use; runs
// on the same store coordinate through Store.Replace's conflict detection.
type Compactor struct {
	cfg      Config
	sum      core.Summarizer
	tc       core.TokenCounter
	overhead int // tokens of a rendered summary with empty text
	minText  int
}

// NewCompactor returns a Compactor. sum may be nil: every summary is then a
// deterministic truncation. tc counts the rendered summaries.
func NewCompactor(cfg Config, sum core.Summarizer, tc core.TokenCounter) (*Compactor, error) {
	if tc == nil {
		return nil, errors.New("dag: compactor needs a token counter")
	}
	c := &Compactor{cfg: cfg.withDefaults(), sum: sum, tc: tc, minText: 8}
	probe := Summary{ID: "sum_" + strings.Repeat("0", 32), Kind: KindCondensed, Depth: 99,
		Earliest: 4102444800000, Latest: 4102444800000, DescendantCount: 9999999, DescendantTokens: 999999999}
	c.overhead = tc.CountText(c.cfg.Render(probe))
	return c, nil
}

// Config returns the compactor's configuration with defaults filled in.
func (c *Compactor) Config() Config { return c.cfg }

// Overhead returns the tokens a rendered summary takes besides its text.
func (c *Compactor) Overhead() int { return c.overhead }

// job is one planned summary.
type job struct {
	kind   string
	depth  int
	items  []Item
	tokens int
	target int
	id     string
}

type jobResult struct {
	s          Summary
	err        error
	calls      int
	aggressive bool
	truncated  bool
	refused    bool
}

// SumTokens is the tokens of all items.
func SumTokens(items []Item) int {
	n := 0
	for _, it := range items {
		n += it.Tokens
	}
	return n
}

// Run compacts st towards tgt. Without Force it does nothing when the items
// already fit the goal (Target.Goal). Otherwise it runs bounded rounds: a
// leaf pass (oldest chunks first, only as many as the goal needs; every
// chunk outside the fresh tail when forced), summarised concurrently; then
// condensation of the shallowest depth while the context is over the goal or
// the summaries exceed their share. Every summary is strictly smaller than
// what it replaces (escalation ends in truncation), so Run always ends: under
// the goal, or with TailTooLarge when the fresh tail leaves no room, or with
// Reason set when MaxRounds ran out.
func (c *Compactor) Run(ctx context.Context, st Store, tgt Target) (Result, error) {
	if tgt.Budget <= 0 {
		return Result{}, fmt.Errorf("dag: compact: budget %d must be positive", tgt.Budget)
	}
	goal := tgt.Goal(c.cfg.ContextThreshold)
	items, err := st.Items(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("dag: compact: %w", err)
	}
	res := Result{Goal: goal, TokensBefore: SumTokens(items)}
	if !tgt.Force && res.TokensBefore <= goal {
		res.TokensAfter = res.TokensBefore
		res.TailTokens = SumTokens(items[c.tailStart(items, goal):])
		res.Reason = fmt.Sprintf("already under target: the context's %d tokens fit the target of %d tokens", res.TokensBefore, goal)
		return res, nil
	}
	leafAll := tgt.Force
	for round := 0; round < c.cfg.MaxRounds; round++ {
		if round > 0 {
			if items, err = st.Items(ctx); err != nil {
				return res, fmt.Errorf("dag: compact: %w", err)
			}
		}
		jobs := c.plan(items, goal, leafAll)
		if len(jobs) == 0 {
			break
		}
		if jobs[0].kind == KindLeaf {
			leafAll = false
		}
		res.Rounds++
		if err := c.runJobs(ctx, st, jobs, tgt.Focus, &res); err != nil {
			return res, err
		}
	}
	if items, err = st.Items(ctx); err != nil {
		return res, fmt.Errorf("dag: compact: %w", err)
	}
	res.TokensAfter = SumTokens(items)
	res.TailTokens = SumTokens(items[c.tailStart(items, goal):])
	switch {
	case res.TokensAfter <= goal:
		if len(res.NewSummaryIDs) == 0 {
			res.Reason = fmt.Sprintf("nothing to compact: the context's %d tokens already fit the target of %d tokens", res.TokensAfter, goal)
		}
	case res.TailTokens+c.overhead+c.minText > goal:
		res.TailTooLarge = true
		res.Reason = fmt.Sprintf("nothing to compact: the context is at its floor, the fresh tail of %d tokens (cut down to the newest messages; what is older is summarised) leaves no room under the target of %d tokens", res.TailTokens, goal)
	default:
		res.Reason = fmt.Sprintf("%d tokens still above the target of %d after %d rounds", res.TokensAfter, goal, res.Rounds)
	}
	return res, nil
}

// tailStart returns the index of the first item of the fresh tail.
func (c *Compactor) tailStart(items []Item, goal int) int {
	capTok := c.cfg.FreshTailMaxTokens
	if capTok <= 0 {
		capTok = goal / 2
	}
	n := len(items)
	start, tok, msgs := n, 0, 0
	for i := n - 1; i >= 0; i-- {
		it := items[i]
		if it.IsSummary() || msgs >= c.cfg.FreshTailMessages {
			break
		}
		if start < n && tok+it.Tokens > capTok {
			break
		}
		start, tok, msgs = i, tok+it.Tokens, msgs+1
	}
	hasUser := false
	for _, it := range items[start:] {
		if it.Role == core.RoleUser {
			hasUser = true
			break
		}
	}
	if !hasUser {
		t := tok
		for j := start - 1; j >= 0 && !items[j].IsSummary(); j-- {
			t += items[j].Tokens
			if t > capTok {
				break
			}
			if items[j].Role == core.RoleUser {
				start, tok = j, t
				break
			}
		}
	}
	if start < n && items[start].Role == core.RoleToolResult {
		// Never part a tool call from its results: take the call into the
		// tail when it fits, else leave the results to be compacted with it.
		j, t := start, tok
		for j > 0 && items[j].Role == core.RoleToolResult && !items[j-1].IsSummary() {
			j--
			t += items[j].Tokens
		}
		if items[j].Role != core.RoleToolResult && !items[j].IsSummary() && t <= capTok {
			start = j
		} else {
			for start < n && items[start].Role == core.RoleToolResult {
				start++
			}
		}
	}
	return start
}

// minChunk is the fewest tokens a run must have to be worth a summary.
func (c *Compactor) minChunk() int { return c.overhead + 2*c.minText }

func (c *Compactor) target(cfgTarget, tokens, goal int) int {
	t := (tokens - c.overhead) / 2
	if t > cfgTarget {
		t = cfgTarget
	}
	// A small budget gets small summaries: one summary never takes more
	// than a quarter of the run's goal, so that the summaries and the
	// newest messages fit a request's budget side by side.
	if g := goal / 4; goal > 0 && t > g {
		t = g
	}
	if t < c.minText {
		t = c.minText
	}
	return t
}

// plan returns the next round's jobs (nil when there is nothing to do).
func (c *Compactor) plan(items []Item, goal int, leafAll bool) []job {
	total := SumTokens(items)
	tail := c.tailStart(items, goal)
	pressure := total > goal
	if leafAll || pressure {
		var jobs []job
		est := total
		for _, ch := range c.leafChunks(items[:tail]) {
			if !leafAll && est <= goal {
				break
			}
			j := job{kind: KindLeaf, items: ch, tokens: SumTokens(ch)}
			j.target = c.target(c.cfg.LeafTargetTokens, j.tokens, goal)
			est -= j.tokens - j.target - c.overhead
			jobs = append(jobs, j)
		}
		if len(jobs) > 0 {
			return c.assignIDs(jobs)
		}
	}
	summaryTokens := 0
	for _, it := range items[:tail] {
		if it.IsSummary() {
			summaryTokens += it.Tokens
		}
	}
	if !pressure && float64(summaryTokens) <= c.cfg.SummaryShare*float64(goal) {
		return nil
	}
	fanIn := c.cfg.MinFanIn
	if pressure {
		fanIn = 2
	}
	if jobs := c.condenseJobs(items[:tail], fanIn, goal); len(jobs) > 0 {
		return c.assignIDs(jobs)
	}
	if !pressure || SumTokens(items[tail:])+c.overhead+c.minText > goal {
		return nil // no pressure, or the tail alone leaves no room: stop
	}
	// Last resort under pressure: re-summarize the shallowest lone
	// summaries one depth up, sized to the room left, so that depths meet
	// and merge (a condensed summary of one source).
	minDepth, nSum := -1, 0
	for _, it := range items[:tail] {
		if it.IsSummary() && it.Tokens >= c.minChunk() {
			nSum++
			if minDepth < 0 || it.Depth < minDepth {
				minDepth = it.Depth
			}
		}
	}
	if minDepth < 0 {
		return nil
	}
	var jobs []job
	for i, it := range items[:tail] {
		if !it.IsSummary() || it.Depth != minDepth || it.Tokens < c.minChunk() {
			continue
		}
		t := c.target(c.cfg.CondensedTargetTokens, it.Tokens, goal)
		if nSum == 1 {
			if room := goal - (total - it.Tokens) - c.overhead; room < t {
				t = room
			}
		}
		if t < 0 {
			t = 0
		}
		jobs = append(jobs, job{kind: KindCondensed, depth: it.Depth + 1, items: items[i : i+1], tokens: it.Tokens, target: t})
	}
	return c.assignIDs(jobs)
}

func (c *Compactor) assignIDs(jobs []job) []job {
	for i := range jobs {
		jobs[i].id = c.cfg.NewID()
	}
	return jobs
}

// leafChunks splits the raw-message runs of items into chunks of at most
// LeafChunkTokens, never ending a chunk right before a tool result, merging
// a too-small last chunk into the one before and dropping runs too small
// to be worth a summary.
func (c *Compactor) leafChunks(items []Item) [][]Item {
	var out [][]Item
	for a := 0; a < len(items); {
		if items[a].IsSummary() {
			a++
			continue
		}
		b := a
		for b < len(items) && !items[b].IsSummary() {
			b++
		}
		var run [][]Item
		start, tok := a, 0
		for i := a; i < b; i++ {
			if i > start && tok+items[i].Tokens > c.cfg.LeafChunkTokens && items[i].Role != core.RoleToolResult {
				run = append(run, items[start:i])
				start, tok = i, 0
			}
			tok += items[i].Tokens
		}
		run = append(run, items[start:b])
		// Merge chunks too small to be worth a summary into a neighbour, so
		// no raw island is left stranded between summaries (it would block
		// condensation for good).
		for k := 0; k < len(run) && len(run) > 1; {
			if SumTokens(run[k]) >= c.minChunk() {
				k++
				continue
			}
			if k+1 < len(run) {
				run[k] = run[k][:len(run[k])+len(run[k+1])]
				run = append(run[:k+1], run[k+2:]...)
			} else {
				run[k-1] = run[k-1][:len(run[k-1])+len(run[k])]
				run = run[:k]
			}
		}
		for _, ch := range run {
			if SumTokens(ch) >= c.minChunk() {
				out = append(out, ch)
			}
		}
		a = b
	}
	return out
}

// condenseJobs plans condensed summaries at the shallowest depth that has a
// run of at least fanIn adjacent summaries.
func (c *Compactor) condenseJobs(items []Item, fanIn, goal int) []job {
	type run struct{ a, b int }
	var runs []run
	for a := 0; a < len(items); {
		if !items[a].IsSummary() {
			a++
			continue
		}
		b := a + 1
		for b < len(items) && items[b].IsSummary() && items[b].Depth == items[a].Depth {
			b++
		}
		if b-a >= fanIn {
			runs = append(runs, run{a, b})
		}
		a = b
	}
	if len(runs) == 0 {
		return nil
	}
	depth := items[runs[0].a].Depth
	for _, r := range runs {
		if d := items[r.a].Depth; d < depth {
			depth = d
		}
	}
	var jobs []job
	for _, r := range runs {
		if items[r.a].Depth != depth {
			continue
		}
		var groups [][]Item
		start, tok := r.a, 0
		for i := r.a; i < r.b; i++ {
			if i-start >= fanIn && tok+items[i].Tokens > c.cfg.CondensedChunkTokens {
				groups = append(groups, items[start:i])
				start, tok = i, 0
			}
			tok += items[i].Tokens
		}
		last := items[start:r.b]
		if len(last) < fanIn && len(groups) > 0 {
			prev := groups[len(groups)-1]
			groups[len(groups)-1] = items[r.b-len(prev)-len(last) : r.b]
		} else {
			groups = append(groups, last)
		}
		for _, g := range groups {
			j := job{kind: KindCondensed, depth: depth + 1, items: g, tokens: SumTokens(g)}
			if j.tokens < c.minChunk() {
				continue
			}
			j.target = c.target(c.cfg.CondensedTargetTokens, j.tokens, goal)
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// runJobs summarizes jobs with at most Concurrency calls in flight and swaps
// each result in as soon as it is ready.
func (c *Compactor) runJobs(ctx context.Context, st Store, jobs []job, focus string, res *Result) error {
	results := make([]jobResult, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	workers := c.cfg.Concurrency
	if workers > len(jobs) {
		workers = len(jobs)
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = c.do(ctx, st, jobs[i], focus)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	var firstErr error
	for i, r := range results {
		res.Calls += r.calls
		if r.err != nil {
			if errors.Is(r.err, ErrConflict) {
				res.Conflicts++
				continue
			}
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		if r.s.ID == "" {
			continue
		}
		if r.aggressive {
			res.Aggressive++
		}
		if r.truncated {
			res.Truncated++
		}
		if r.refused {
			res.Refused++
		}
		res.NewSummaryIDs = append(res.NewSummaryIDs, jobs[i].id)
	}
	return firstErr
}

// do makes one summary and swaps it in.
func (c *Compactor) do(ctx context.Context, st Store, j job, focus string) jobResult {
	var r jobResult
	if err := ctx.Err(); err != nil {
		r.err = fmt.Errorf("dag: compact: %w", err)
		return r
	}
	base := Summary{ID: j.id, Kind: j.kind, Depth: j.depth, CreatedAt: c.cfg.Now().UnixMilli()}
	var parts []string
	if j.kind == KindLeaf {
		meta, _ := st.(MessageMetaReader)
		day := ""
		for k, it := range j.items {
			text, err := st.MessageText(ctx, it.Ref.Seq)
			if err != nil {
				r.err = fmt.Errorf("dag: compact: %w", err)
				return r
			}
			// Roll-ups count the messages themselves (a store may show a
			// large message by a shorter reference item).
			tokens, ts := it.Tokens, it.Timestamp
			if meta != nil {
				m, err := meta.MessageMeta(ctx, it.Ref.Seq)
				if err != nil {
					r.err = fmt.Errorf("dag: compact: %w", err)
					return r
				}
				tokens, ts = m.Tokens, m.Timestamp
			}
			// A date stamp line where the day changes: the summarizer
			// carries it onto what it keeps ("(7 May 2023) …").
			if d := dayStamp(ts); d != "" && d != day {
				day = d
				text = "[" + d + "]\n" + text
			}
			parts = append(parts, text)
			base.Sources = append(base.Sources, it.Ref)
			base.DescendantTokens += tokens
			if k == 0 {
				base.Earliest = ts
			}
			base.Latest = ts
		}
		base.DescendantCount = len(j.items)
	} else {
		for k, it := range j.items {
			s, err := st.Summary(ctx, it.Ref.ID)
			if err != nil {
				r.err = fmt.Errorf("dag: compact: %w", err)
				return r
			}
			parts = append(parts, s.Text)
			base.Sources = append(base.Sources, it.Ref)
			base.DescendantCount += s.DescendantCount
			base.DescendantTokens += s.DescendantTokens
			if k == 0 {
				base.Earliest = s.Earliest
			}
			base.Latest = s.Latest
		}
	}
	input := strings.Join(parts, "\n\n")
	s, err := c.produce(ctx, base, input, j, focus, &r)
	if err != nil {
		r.err = err
		return r
	}
	if s.Tokens >= j.tokens {
		return r // no gain possible: leave the items as they are
	}
	item := Item{Pos: j.items[0].Pos, Ref: SummaryRef(s.ID), Tokens: s.Tokens, Depth: s.Depth, Timestamp: s.Latest}
	if err := st.Replace(ctx, j.items, s, item); err != nil {
		r.err = fmt.Errorf("dag: compact: %w", err)
		return r
	}
	r.s = s
	return r
}

// produce escalates: normal summary, aggressive summary, then deterministic
// truncation, which is shorter than the input by construction.
func (c *Compactor) produce(ctx context.Context, base Summary, input string, j job, focus string, r *jobResult) (Summary, error) {
	try := func(text, method string) (Summary, bool) {
		s := base
		s.Text, s.Method = text, method
		s.Tokens = c.tc.CountText(c.cfg.Render(s))
		return s, s.Tokens < j.tokens
	}
	kind := core.SummaryLeaf
	if j.kind == KindCondensed {
		kind = core.SummaryCondensed
	}
	if c.sum != nil && j.target > 0 {
		for _, aggressive := range []bool{false, true} {
			req := core.SummarizeRequest{Text: input, TargetTokens: j.target, Aggressive: aggressive, Kind: kind}
			if !aggressive {
				req.Focus = focus
			}
			callCtx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
			var rep core.SummarizeReport
			out, err := c.sum.Summarize(core.WithSummarizeReport(callCtx, &rep), req)
			cancel()
			r.calls++
			if ctxErr := ctx.Err(); ctxErr != nil {
				return Summary{}, fmt.Errorf("dag: compact: %w", ctxErr)
			}
			if err != nil {
				continue
			}
			text := StripThinking(out)
			if text == "" {
				continue
			}
			method := MethodNormal
			if aggressive {
				method = MethodAggressive
			}
			if rep.Refused != "" {
				method = MethodRefused
			}
			if s, ok := try(text, method); ok {
				r.aggressive = aggressive && method == MethodAggressive
				if method == MethodRefused {
					r.refused, s.Refused = true, rep.Refused
				}
				return s, nil
			}
		}
	}
	r.truncated = true
	t := j.target
	if room := j.tokens - c.overhead - 1; room < t {
		t = room
	}
	for attempt := 0; attempt < 8; attempt++ {
		if t < 0 {
			t = 0
		}
		s, ok := try(core.Truncate(c.tc, input, t), MethodTruncate)
		if ok || t == 0 {
			return s, nil
		}
		excess := s.Tokens - j.tokens + 1
		if excess < 1 {
			excess = 1
		}
		t -= excess
	}
	s, _ := try("", MethodTruncate)
	return s, nil
}

// dayStamp is the day of a timestamp (Unix ms, UTC) as a leaf summary's
// input marks it, "7 May 2023"; "" for none (0).
func dayStamp(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2 January 2006")
}
