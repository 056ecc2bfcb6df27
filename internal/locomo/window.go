package locomo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	contextengine "github.com/lossless-engine/contextengine"
	"github.com/lossless-engine/contextengine/core"
)

// The window measurement (issue #28): is what a question needs in the
// window the model gets when the question is asked?
//
// How a conversation is replayed, as a real host drives an engine: each
// LoCoMo conversation is one OpenClaw-like session of its own agent
// (session id the sample id, session key "agent:<sample>:main"; recall
// never crosses agents, so one conversation's questions never recall
// another's turns), the first speaker the user and the second the
// assistant, each turn's text without the speaker's name (WindowConfig.
// Speaker adds it) and stamped with its session's LoCoMo date. The turns
// go through the root package's Driver in order: a user turn is the
// prompt of Driver.Turn and the assistant turns that follow it are what
// "the model" answers, so every turn runs the host's sequence (assemble
// with the prompt, the overflow precheck, afterTurn / ingestBatch /
// ingest, maintain), at the budget under measurement, and compaction is
// what the engine (or, for an engine that does not own compaction such
// as legacy, the host's overflow recovery) decides at that budget. After
// each turn the suite waits for the engine's background work
// (WindowEngine.Settle): the context is then where it would be when the
// model's reply takes longer than the compaction, and the run is
// deterministic. One session per conversation mirrors a chat kept in one
// thread (the issue's own experiment: one session, compacted to the
// budget); LoCoMo's sessions are days apart, and a host that starts a new
// session per day would leave the questions to recall alone.
//
// Then each question is asked as the prompt of an assemble in that
// session at that budget (what the host's next turn would assemble; the
// question itself is not committed, so questions do not see each other),
// and each of its evidence turns is scored against the window (WindowText:
// verbatim, covered) and against the window's summaries alone.

// Parts of an assembled window (WindowEngine.Assemble labels each message
// with one; the system prompt addition is PartSystem).
const (
	PartTail      = "tail"
	PartSummaries = "summaries"
	PartRecall    = "recall"
	PartSystem    = "system"
)

// RecencyRow is the name of the recency-only baseline's rows: the newest
// turns of the conversation that fit the budget, nothing else.
const RecencyRow = "recency"

// DefaultWindowBudgets are the budgets of the window suite (issue #28's
// targets are set at these).
var DefaultWindowBudgets = []int{2000, 4000, 8000}

// windowReserve is the output reserve of the replaying host: its model
// window is the budget plus this (only the driver's arithmetic sees it).
const windowReserve = 1024

// WindowEngine is an engine the window suite replays conversations
// through.
type WindowEngine struct {
	// Name labels the engine's rows ("lossless").
	Name string
	// Open opens a fresh engine storing under dir (an empty directory),
	// for budget. Required.
	Open func(ctx context.Context, dir string, budget int) (core.Engine, error)
	// Transcript makes the host keep a JSONL session file per conversation
	// in dir (the legacy engine compacts that file).
	Transcript bool
	// Settle, when set, waits for the engine's background work that
	// shapes the context (its compactions); it is called after every turn.
	Settle func(ctx context.Context, e core.Engine) error
	// Ready, when set, waits until everything stored is searchable (the
	// recall index); it is called before the questions.
	Ready func(ctx context.Context, e core.Engine) error
	// Assemble, when set, assembles p and labels each message of the
	// result with its part (PartTail, PartSummaries, PartRecall). Nil:
	// e.Assemble, with compactionSummary and branchSummary messages as
	// summaries and every other message as tail.
	Assemble func(ctx context.Context, e core.Engine, p core.AssembleParams) (core.AssembleResult, []string, error)
	// Variants are further rows measured on the same replayed store: the
	// engine is closed (io.Closer) and each variant opened on its
	// directory in turn to answer the same questions (the lossless engine
	// with recall off: its store is the same, as recall changes nothing
	// stored).
	Variants []WindowVariant
}

// WindowVariant is a row of WindowEngine.Variants.
type WindowVariant struct {
	// Name labels the row.
	Name string
	// Open opens the engine on the replayed directory.
	Open func(ctx context.Context, dir string, budget int) (core.Engine, error)
	// Assemble is as WindowEngine.Assemble.
	Assemble func(ctx context.Context, e core.Engine, p core.AssembleParams) (core.AssembleResult, []string, error)
	// Ready is as WindowEngine.Ready.
	Ready func(ctx context.Context, e core.Engine) error
}

// WindowConfig configures RunWindow.
type WindowConfig struct {
	// Path is the LoCoMo JSON file (or set Data).
	Path string
	// Data, when set, is used instead of reading Path.
	Data []Conversation
	// Budgets are the token budgets (default DefaultWindowBudgets).
	Budgets []int
	// Engines are replayed in order at each budget; the recency baseline
	// needs none and is always measured.
	Engines []WindowEngine
	// Counter counts the window's tokens in the report and the recency
	// baseline's turns (default core.DefaultCounter(), o200k_base).
	Counter core.TokenCounter
	// Speaker ingests each turn with "Speaker: " before it (TurnText);
	// default without (TurnBody), as a real chat message carries no name.
	Speaker bool
	// Questions, when positive, asks only the first Questions questions
	// with evidence of each conversation.
	Questions int
	// Conversations, when positive, uses only the first Conversations.
	Conversations int
	// Dir holds the engines' stores ("" → a temporary directory, removed
	// after).
	Dir string
	// Detail, when set, gets one JSON line per question and row
	// (WindowDetail).
	Detail io.Writer
	// Progress, when set, gets a line now and then.
	Progress func(msg string)
}

// WindowReport is what RunWindow measured; the benchmark command writes it
// under the top-level key "window".
type WindowReport struct {
	// Budgets are the budgets measured.
	Budgets []int `json:"budgets"`
	// Conversations, Turns and Questions are what was replayed and asked
	// (questions with at least one evidence turn found in the
	// conversation); EvidenceTurns counts their evidence turns, each
	// question's own (a turn cited by two questions counts twice).
	Conversations int `json:"conversations"`
	Turns         int `json:"turns"`
	Questions     int `json:"questions"`
	EvidenceTurns int `json:"evidence_turns"`
	// EvidenceUnknown counts evidence ids that name no turn of their
	// conversation (left out of the figures).
	EvidenceUnknown int `json:"evidence_unknown,omitempty"`
	// Speaker says the turns were ingested with the speaker's name.
	Speaker bool `json:"speaker"`
	// Counter names the counter of the token figures.
	Counter string `json:"counter"`
	// CoveredShare is the share of content words "covered" needs.
	CoveredShare float64 `json:"covered_share"`
	// Rows are the figures per budget and engine, budgets ascending, then
	// the engines in order, the recency baseline last.
	Rows []WindowRow `json:"rows"`
}

// WindowRow is one engine at one budget. Percentages are of the evidence
// turns of all questions (each scored in its own question's window), or of
// the questions.
type WindowRow struct {
	Budget int    `json:"budget"`
	Engine string `json:"engine"`
	// EvidenceVerbatimPct: evidence turns whose whole text is in the
	// window.
	EvidenceVerbatimPct float64 `json:"evidence_verbatim_pct"`
	// EvidenceCoveredPct: evidence turns with at least CoveredShare of
	// their content words in the window.
	EvidenceCoveredPct float64 `json:"evidence_covered_pct"`
	// QuestionsAllEvidencePct: questions whose every evidence turn is
	// covered.
	QuestionsAllEvidencePct float64 `json:"questions_all_evidence_pct"`
	// SummaryCoveredPct: evidence turns covered by the window's summaries
	// alone.
	SummaryCoveredPct float64 `json:"summary_covered_pct"`
	// Tokens is the mean token split of the questions' windows.
	Tokens WindowTokens `json:"tokens"`
	// MaxTokens is the largest window (all parts); OverBudget counts the
	// windows above the budget (in Counter's count: an engine counting
	// otherwise, as legacy's chars/4, may differ).
	MaxTokens  int `json:"max_tokens"`
	OverBudget int `json:"over_budget"`
	// FailedTurns counts turns the host could not run: the context did not
	// fit the budget after the driver's overflow compactions. As with any
	// failed turn, the driver records nothing of it.
	FailedTurns int `json:"failed_turns,omitempty"`
	// Compactions counts the driver's overflow compactions during the
	// replay (the engine's own, in the background, are not counted).
	Compactions int `json:"overflow_compactions,omitempty"`
	// ReplayS and AskS are the wall times of the replay and of the
	// questions.
	ReplayS float64 `json:"replay_s"`
	AskS    float64 `json:"ask_s"`
	// Sets holds the same figures over the questions of each set of the
	// split (SetTuneOn, SetHeldOut) alone; absent when no conversation
	// replayed belongs to the split.
	Sets map[string]WindowSet `json:"sets,omitempty"`
}

// WindowSet is a row's figures over the questions of one set of the
// split (WindowRow.Sets).
type WindowSet struct {
	// Questions and EvidenceTurns are the set's questions and their
	// evidence turns.
	Questions     int `json:"questions"`
	EvidenceTurns int `json:"evidence_turns"`
	// The percentages are WindowRow's, over the set's questions.
	EvidenceVerbatimPct     float64 `json:"evidence_verbatim_pct"`
	EvidenceCoveredPct      float64 `json:"evidence_covered_pct"`
	QuestionsAllEvidencePct float64 `json:"questions_all_evidence_pct"`
	SummaryCoveredPct       float64 `json:"summary_covered_pct"`
}

// WindowTokens is a token split of windows (means per question).
type WindowTokens struct {
	// Tail is the raw messages of the conversation.
	Tail float64 `json:"tail"`
	// Summaries are the summaries of older history.
	Summaries float64 `json:"summaries"`
	// Recall is the recall block.
	Recall float64 `json:"recall"`
	// System is the system prompt addition and anything else.
	System float64 `json:"system"`
	// Total is their sum.
	Total float64 `json:"total"`
}

// WindowDetail is one line of WindowConfig.Detail: one question in one
// row's window.
type WindowDetail struct {
	Budget   int      `json:"budget"`
	Engine   string   `json:"engine"`
	Sample   string   `json:"sample"`
	Question string   `json:"question"`
	Category int      `json:"category"`
	Evidence []string `json:"evidence"`
	// Verbatim, Covered and SummaryCovered are the evidence ids found so.
	Verbatim       []string `json:"verbatim"`
	Covered        []string `json:"covered"`
	SummaryCovered []string `json:"summary_covered"`
	// Coverage is each evidence turn's share of content words in the
	// window, in Evidence's order.
	Coverage []float64 `json:"coverage"`
	// Tokens is this window's split.
	Tokens WindowTokens `json:"tokens"`
}

// windowConv is one conversation ready to replay and ask.
type windowConv struct {
	c      *Conversation
	agent  string
	docs   []TurnDoc
	byID   map[string]TurnDoc
	qs     []windowQuestion
	tokens []int // docs' message token counts (Counter)
}

type windowQuestion struct {
	q        QA
	evidence []string // known ids
}

// replayed is a conversation's session after the replay.
type replayed struct {
	sessionID string
	view      []core.Message
}

// RunWindow replays the conversations through each engine at each budget,
// asks every question with evidence, and reports what the windows hold.
func RunWindow(ctx context.Context, cfg WindowConfig) (WindowReport, error) {
	rep := WindowReport{Speaker: cfg.Speaker, CoveredShare: CoveredShare}
	convs := cfg.Data
	if convs == nil {
		if cfg.Path == "" {
			return rep, errors.New("locomo: window: no LoCoMo file given")
		}
		var err error
		if convs, err = Load(cfg.Path); err != nil {
			return rep, err
		}
	}
	if cfg.Conversations > 0 && cfg.Conversations < len(convs) {
		convs = convs[:cfg.Conversations]
	}
	budgets := slices.Clone(cfg.Budgets)
	if len(budgets) == 0 {
		budgets = slices.Clone(DefaultWindowBudgets)
	}
	for _, b := range budgets {
		if b <= 0 {
			return rep, fmt.Errorf("locomo: window: budget %d is not positive", b)
		}
	}
	slices.Sort(budgets)
	budgets = slices.Compact(budgets)
	rep.Budgets = budgets
	for i, e := range cfg.Engines {
		if e.Open == nil || e.Name == "" {
			return rep, fmt.Errorf("locomo: window: engine %d has no name or Open", i)
		}
	}
	tc := cfg.Counter
	if tc == nil {
		tc = core.DefaultCounter()
	}
	rep.Counter = tc.Name()

	wcs := make([]windowConv, 0, len(convs))
	for ci := range convs {
		c := &convs[ci]
		wc := windowConv{c: c, agent: agentOf(c, ci), byID: map[string]TurnDoc{}}
		for si := range c.Sessions {
			wc.docs = append(wc.docs, sessionDocs(c, &c.Sessions[si], !cfg.Speaker)...)
		}
		for _, d := range wc.docs {
			wc.byID[d.DiaID] = d
			wc.tokens = append(wc.tokens, core.CountMessage(tc, docMessage(d)))
		}
		for _, q := range c.QA {
			var known []string
			for _, id := range q.Evidence {
				if _, ok := wc.byID[id]; ok {
					known = append(known, id)
				} else {
					rep.EvidenceUnknown++
				}
			}
			if len(known) == 0 {
				continue
			}
			if cfg.Questions > 0 && len(wc.qs) >= cfg.Questions {
				break
			}
			wc.qs = append(wc.qs, windowQuestion{q: q, evidence: known})
			rep.EvidenceTurns += len(known)
		}
		rep.Turns += len(wc.docs)
		rep.Questions += len(wc.qs)
		wcs = append(wcs, wc)
	}
	rep.Conversations = len(wcs)
	if rep.Questions == 0 {
		return rep, errors.New("locomo: window: no question with evidence")
	}

	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "locomo-window-*")
		if err != nil {
			return rep, fmt.Errorf("locomo: window: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	w := &windowRun{cfg: cfg, tc: tc, convs: wcs}
	if cfg.Detail != nil {
		w.detail = json.NewEncoder(cfg.Detail)
		w.detail.SetEscapeHTML(false)
	}
	for _, b := range budgets {
		for ei, eng := range cfg.Engines {
			d := filepath.Join(dir, fmt.Sprintf("%d-%d-%s", b, ei, safeName(eng.Name)))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return rep, fmt.Errorf("locomo: window: %w", err)
			}
			rows, err := w.engine(ctx, eng, d, b)
			if err != nil {
				return rep, fmt.Errorf("locomo: window: %s at %d: %w", eng.Name, b, err)
			}
			rep.Rows = append(rep.Rows, rows...)
		}
		row, err := w.recency(b)
		if err != nil {
			return rep, fmt.Errorf("locomo: window: recency at %d: %w", b, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// docMessage is the message a turn is ingested as.
func docMessage(d TurnDoc) core.Message {
	if d.Role == core.RoleUser {
		return core.UserText(d.Text, d.Timestamp)
	}
	return core.AssistantText(d.Text, d.Timestamp)
}

type windowRun struct {
	cfg    WindowConfig
	tc     core.TokenCounter
	convs  []windowConv
	detail *json.Encoder
}

func (w *windowRun) progress(format string, args ...any) {
	if w.cfg.Progress != nil {
		w.cfg.Progress(fmt.Sprintf(format, args...))
	}
}

// engine replays every conversation through eng at budget, asks the
// questions, then asks them again through each variant on the same store.
func (w *windowRun) engine(ctx context.Context, eng WindowEngine, dir string, budget int) ([]WindowRow, error) {
	row := WindowRow{Budget: budget, Engine: eng.Name}
	e, err := eng.Open(ctx, dir, budget)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			closeEngine(e)
		}
	}()
	t0 := time.Now()
	sessions := make([]replayed, len(w.convs))
	for ci := range w.convs {
		s, err := w.replay(ctx, eng, e, dir, budget, &w.convs[ci], &row)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.convs[ci].agent, err)
		}
		sessions[ci] = s
	}
	row.ReplayS = round3(time.Since(t0).Seconds())
	w.progress("window: %s at %d: replayed %d conversations in %.1fs (%d failed turns)", eng.Name, budget, len(w.convs), row.ReplayS, row.FailedTurns)
	if err := w.ask(ctx, e, eng.Ready, eng.Assemble, budget, sessions, &row); err != nil {
		return nil, err
	}
	rows := []WindowRow{row}
	if len(eng.Variants) == 0 {
		return rows, nil
	}
	if err := closeEngine(e); err != nil {
		return nil, fmt.Errorf("close: %w", err)
	}
	closed = true
	for _, v := range eng.Variants {
		vrow := WindowRow{Budget: budget, Engine: v.Name, FailedTurns: row.FailedTurns, Compactions: row.Compactions, ReplayS: row.ReplayS}
		ve, err := v.Open(ctx, dir, budget)
		if err != nil {
			return nil, fmt.Errorf("%s: open: %w", v.Name, err)
		}
		err = w.ask(ctx, ve, v.Ready, v.Assemble, budget, sessions, &vrow)
		if cerr := closeEngine(ve); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name, err)
		}
		rows = append(rows, vrow)
	}
	return rows, nil
}

func closeEngine(e core.Engine) error {
	if c, ok := e.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// replay drives one conversation through e as a host does, turn by turn.
func (w *windowRun) replay(ctx context.Context, eng WindowEngine, e core.Engine, dir string, budget int, wc *windowConv, row *WindowRow) (replayed, error) {
	var answer []core.Message
	opts := contextengine.DriverOptions{
		Engine: e, SessionID: wc.agent, SessionKey: "agent:" + wc.agent + ":main", AgentID: wc.agent,
		ContextWindow: budget + windowReserve, ReserveTokens: windowReserve,
		Model: func(ctx context.Context, req contextengine.ModelRequest) ([]core.Message, error) {
			return answer, nil
		},
	}
	if eng.Transcript {
		opts.SessionFile = filepath.Join(dir, safeName(wc.agent)+".jsonl")
	}
	d, err := contextengine.NewDriver(opts)
	if err != nil {
		return replayed{}, err
	}
	docs := wc.docs
	for i := 0; i < len(docs); {
		// A turn: a prompt (the user's turn; a leading assistant turn of
		// the conversation stands in for it) and the assistant turns
		// after it, the model's answer.
		prompt := docMessage(docs[i])
		j := i + 1
		answer = nil
		for ; j < len(docs) && docs[j].Role != core.RoleUser; j++ {
			answer = append(answer, docMessage(docs[j]))
		}
		i = j
		res, err := d.Turn(ctx, prompt)
		row.Compactions += res.Compactions
		switch {
		case errors.Is(err, contextengine.ErrOverflowUnrecovered):
			row.FailedTurns++
		case err != nil:
			return replayed{}, fmt.Errorf("turn ending at %s: %w", docs[j-1].DiaID, err)
		}
		if eng.Settle != nil {
			if err := eng.Settle(ctx, e); err != nil {
				return replayed{}, fmt.Errorf("settle: %w", err)
			}
		}
	}
	return replayed{sessionID: d.SessionID(), view: d.Messages()}, nil
}

// ask asks every question of every conversation through e and scores the
// windows into row.
func (w *windowRun) ask(ctx context.Context, e core.Engine, ready func(context.Context, core.Engine) error,
	assemble func(context.Context, core.Engine, core.AssembleParams) (core.AssembleResult, []string, error),
	budget int, sessions []replayed, row *WindowRow) error {
	if ready != nil {
		if err := ready(ctx, e); err != nil {
			return fmt.Errorf("ready: %w", err)
		}
	}
	if assemble == nil {
		assemble = plainAssemble
	}
	t0 := time.Now()
	var acc windowAcc
	proj := contextengine.ProjectionFor(e.Info())
	for ci := range w.convs {
		wc := &w.convs[ci]
		s := sessions[ci]
		// The host's pipeline over its session view, as Driver.Turn runs it.
		msgs, _ := contextengine.Sanitize(s.view)
		msgs = contextengine.Validate(msgs, contextengine.ValidateOptions{})
		for _, q := range wc.qs {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("locomo: window: %w", err)
			}
			p := proj.Assemble(core.AssembleParams{SessionID: s.sessionID, SessionKey: "agent:" + wc.agent + ":main",
				Messages: msgs, TokenBudget: budget, Prompt: q.q.Question})
			res, parts, err := assemble(proj.Context(ctx, contextengine.OpAssemble), e, p)
			if err != nil {
				return fmt.Errorf("assemble %q: %w", q.q.Question, err)
			}
			if len(parts) != len(res.Messages) {
				return fmt.Errorf("assemble %q: %d parts for %d messages", q.q.Question, len(parts), len(res.Messages))
			}
			var all, sums []string
			var tok WindowTokens
			for i, m := range res.Messages {
				text := m.Text()
				all = append(all, text)
				n := float64(core.CountMessage(w.tc, m))
				switch parts[i] {
				case PartSummaries:
					sums = append(sums, text)
					tok.Summaries += n
				case PartRecall:
					tok.Recall += n
				case PartTail:
					tok.Tail += n
				default:
					tok.System += n
				}
			}
			if res.SystemPromptAddition != "" {
				all = append(all, res.SystemPromptAddition)
				tok.System += float64(w.tc.CountText(res.SystemPromptAddition))
			}
			tok.Total = tok.Tail + tok.Summaries + tok.Recall + tok.System
			w.score(&acc, wc, q, NewWindowText(all...), NewWindowText(sums...), tok, row)
		}
	}
	acc.into(row)
	row.AskS = round3(time.Since(t0).Seconds())
	return w.flushDetail(&acc)
}

// plainAssemble is WindowEngine.Assemble's default.
func plainAssemble(ctx context.Context, e core.Engine, p core.AssembleParams) (core.AssembleResult, []string, error) {
	res, err := e.Assemble(ctx, p)
	if err != nil {
		return res, nil, err
	}
	parts := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		parts[i] = PartTail
		if r := m.Role(); r == core.RoleCompactionSummary || r == core.RoleBranchSummary {
			parts[i] = PartSummaries
		}
	}
	return res, parts, nil
}

// windowCounts are the counts behind a row's percentages.
type windowCounts struct {
	questions, allCovered                  int
	evidence, verbatim, covered, sumCovers int
}

func (c *windowCounts) add(o windowCounts) {
	c.questions += o.questions
	c.allCovered += o.allCovered
	c.evidence += o.evidence
	c.verbatim += o.verbatim
	c.covered += o.covered
	c.sumCovers += o.sumCovers
}

// windowAcc accumulates a row's figures.
type windowAcc struct {
	windowCounts
	sets      map[string]*windowCounts // by split set
	tok       WindowTokens
	maxTokens int
	over      int
	details   []WindowDetail
}

func (c windowCounts) set() WindowSet {
	return WindowSet{Questions: c.questions, EvidenceTurns: c.evidence,
		EvidenceVerbatimPct: pctOf(c.verbatim, c.evidence), EvidenceCoveredPct: pctOf(c.covered, c.evidence),
		QuestionsAllEvidencePct: pctOf(c.allCovered, c.questions), SummaryCoveredPct: pctOf(c.sumCovers, c.evidence)}
}

func pctOf(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return round1(100 * float64(n) / float64(of))
}

func (a *windowAcc) into(row *WindowRow) {
	all := a.windowCounts.set()
	row.EvidenceVerbatimPct = all.EvidenceVerbatimPct
	row.EvidenceCoveredPct = all.EvidenceCoveredPct
	row.SummaryCoveredPct = all.SummaryCoveredPct
	row.QuestionsAllEvidencePct = all.QuestionsAllEvidencePct
	for name, c := range a.sets {
		if row.Sets == nil {
			row.Sets = map[string]WindowSet{}
		}
		row.Sets[name] = c.set()
	}
	if a.questions > 0 {
		n := float64(a.questions)
		row.Tokens = WindowTokens{Tail: round1(a.tok.Tail / n), Summaries: round1(a.tok.Summaries / n),
			Recall: round1(a.tok.Recall / n), System: round1(a.tok.System / n), Total: round1(a.tok.Total / n)}
	}
	row.MaxTokens, row.OverBudget = a.maxTokens, a.over
}

// score scores one question's window into acc.
func (w *windowRun) score(acc *windowAcc, wc *windowConv, q windowQuestion, win, sums *WindowText, tok WindowTokens, row *WindowRow) {
	var n windowCounts
	n.questions++
	all := true
	d := WindowDetail{Budget: row.Budget, Engine: row.Engine, Sample: wc.agent, Question: q.q.Question,
		Category: q.q.Category, Evidence: q.evidence, Verbatim: []string{}, Covered: []string{}, SummaryCovered: []string{},
		Tokens: tok}
	for _, id := range q.evidence {
		text := wc.byID[id].Text
		n.evidence++
		if win.Verbatim(text) {
			n.verbatim++
			d.Verbatim = append(d.Verbatim, id)
		}
		cov := win.Coverage(text)
		d.Coverage = append(d.Coverage, round3(cov))
		if cov >= CoveredShare {
			n.covered++
			d.Covered = append(d.Covered, id)
		} else {
			all = false
		}
		if sums.Covers(text) {
			n.sumCovers++
			d.SummaryCovered = append(d.SummaryCovered, id)
		}
	}
	if all {
		n.allCovered++
	}
	acc.add(n)
	if set := SetOf(wc.c.SampleID); set != "" {
		if acc.sets == nil {
			acc.sets = map[string]*windowCounts{}
		}
		if acc.sets[set] == nil {
			acc.sets[set] = &windowCounts{}
		}
		acc.sets[set].add(n)
	}
	acc.tok.Tail += tok.Tail
	acc.tok.Summaries += tok.Summaries
	acc.tok.Recall += tok.Recall
	acc.tok.System += tok.System
	acc.tok.Total += tok.Total
	total := int(tok.Total)
	acc.maxTokens = max(acc.maxTokens, total)
	if total > row.Budget {
		acc.over++
	}
	if w.detail != nil {
		acc.details = append(acc.details, d)
	}
}

func (w *windowRun) flushDetail(acc *windowAcc) error {
	if w.detail == nil {
		return nil
	}
	for _, d := range acc.details {
		if err := w.detail.Encode(d); err != nil {
			return fmt.Errorf("locomo: window: detail: %w", err)
		}
	}
	acc.details = nil
	return nil
}

// recency is the recency-only baseline at budget: each conversation's
// newest turns whose messages fit the budget together, for every question.
func (w *windowRun) recency(budget int) (WindowRow, error) {
	row := WindowRow{Budget: budget, Engine: RecencyRow}
	t0 := time.Now()
	var acc windowAcc
	for ci := range w.convs {
		wc := &w.convs[ci]
		used, from := 0, len(wc.docs)
		for from > 0 && used+wc.tokens[from-1] <= budget {
			from--
			used += wc.tokens[from]
		}
		texts := make([]string, 0, len(wc.docs)-from)
		for _, d := range wc.docs[from:] {
			texts = append(texts, d.Text)
		}
		win, none := NewWindowText(texts...), NewWindowText()
		tok := WindowTokens{Tail: float64(used), Total: float64(used)}
		for _, q := range wc.qs {
			w.score(&acc, wc, q, win, none, tok, &row)
		}
	}
	acc.into(&row)
	row.AskS = round3(time.Since(t0).Seconds())
	return row, w.flushDetail(&acc)
}

// String formats a row's main figures (for logs).
func (r WindowRow) String() string {
	return r.Engine + "@" + strconv.Itoa(r.Budget) + fmt.Sprintf(": verbatim %.1f%% covered %.1f%% all-evidence %.1f%% summary-covered %.1f%% tokens %.0f (tail %.0f, summaries %.0f, recall %.0f, system %.0f)",
		r.EvidenceVerbatimPct, r.EvidenceCoveredPct, r.QuestionsAllEvidencePct, r.SummaryCoveredPct,
		r.Tokens.Total, r.Tokens.Tail, r.Tokens.Summaries, r.Tokens.Recall, r.Tokens.System)
}
