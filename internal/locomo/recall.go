package locomo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/index/bleveindex"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// DefaultKs are the k of recall@k reported by default: the LoCoMo paper's
// 5, 10, 25 and 50, and 8, the number of items assemble's recall renders
// (InjectK), i.e. what reaches the model.
var DefaultKs = []int{5, 8, 10, 25, 50}

// TurnDoc is one turn as the benchmark ingests it.
type TurnDoc struct {
	// DiaID is the turn's LoCoMo id ("D3:7").
	DiaID string
	// Speaker is who said it.
	Speaker string
	// Role is "user" for the conversation's first speaker, "assistant" for
	// the other.
	Role string
	// Text is the message text: the speaker's name (unless
	// RecallConfig.NoSpeaker), what was said, and the caption of a shared
	// image.
	Text string
	// Timestamp is the session date plus the turn's index in seconds (ms).
	Timestamp int64
}

// Retriever is the recall path under measurement. The benchmark ingests each
// session of a conversation as its own session of one agent (one agent per
// conversation), then asks each question as the prompt of a fresh session.
type Retriever interface {
	// IngestSession stores one session's turns, in order.
	IngestSession(ctx context.Context, agent, session string, turns []TurnDoc) error
	// Ready waits until everything ingested is searchable.
	Ready(ctx context.Context) error
	// Recall returns the dia ids of the turns the recall path ranks for
	// prompt, best first, at most k distinct (neighbour turns it adds
	// included).
	Recall(ctx context.Context, agent, prompt string, k int) ([]string, error)
	// Close releases the retriever.
	Close() error
}

// GatedRetriever is a Retriever whose recall has a relevance gate: RecallGated
// returns what recall injects for prompt (the dia ids of the items that
// pass the gate, at most k; none when nothing is relevant).
type GatedRetriever interface {
	Retriever
	RecallGated(ctx context.Context, agent, prompt string, k int) ([]string, error)
}

// InjectK is the number of items recall injects (lossless.DefaultRecallK):
// the gated figures are measured at it.
const InjectK = config.DefaultRecallK

// RecallConfig configures RunRecall.
type RecallConfig struct {
	// Path is the LoCoMo JSON file (or set Data).
	Path string
	// Data, when set, is used instead of reading Path.
	Data []Conversation
	// Ks are the k of recall@k (default DefaultKs).
	Ks []int
	// Dir is where the store/index is built ("" → a temporary directory,
	// removed after).
	Dir string
	// Conversations limits how many conversations are used (0: all).
	Conversations int
	// Categories limits the question categories (nil: all five, as the
	// LoCoMo paper counts them).
	Categories []int
	// Neighbours is passed to index.RecallQuery (turns ranked in either side
	// of the best hits; they count toward k): 0 for the default, negative
	// for none.
	Neighbours int
	// NewRetriever builds the recall path in dir (default: the lossless
	// engine's recall, see EngineRetriever; IndexRetriever measures the
	// index package's Recall alone).
	NewRetriever func(dir string) (Retriever, error)
	// IndexOnly measures the index package's Recall directly (no engine).
	IndexOnly bool
	// Progress, when set, gets a line of progress now and then.
	Progress func(msg string)
	// MinScore is the relevance gate's threshold for the gated figures (0:
	// lossless.DefaultRecallMinScore; negative: no gate).
	MinScore float64
	// NoSpeaker ingests each turn without the "Speaker: " prefix
	// (TurnBody instead of TurnText): real chat messages carry no name, and
	// the prefix lets a question naming a speaker match every turn of that
	// speaker.
	NoSpeaker bool
}

// RecallReport is the result of RunRecall; the benchmark command writes it
// under the top-level key "recall".
type RecallReport struct {
	// RecallAt maps k (as a string) to recall@k in percent.
	RecallAt map[string]float64 `json:"recall_at"`
	// PerCategory maps a category (as a string) to its recall_at map.
	PerCategory map[string]map[string]float64 `json:"per_category"`
	// Questions is the number of questions asked.
	Questions int `json:"questions"`
	// PerCategoryQuestions maps a category to its number of questions.
	PerCategoryQuestions map[string]int `json:"per_category_questions"`
	// QueryP50Ms and QueryP99Ms are recall latencies (milliseconds).
	QueryP50Ms float64 `json:"query_p50_ms"`
	QueryP99Ms float64 `json:"query_p99_ms"`
	// Turns is the number of turns ingested.
	Turns int `json:"turns"`
	// IndexDocsPerSec is the ingest+index rate (turns per second, until
	// everything is searchable).
	IndexDocsPerSec float64 `json:"index_docs_per_s"`
	// Path says which recall path was measured.
	Path string `json:"path"`
	// NoSpeaker says the turns were ingested without the speaker's name.
	NoSpeaker bool `json:"no_speaker,omitempty"`
	// Gate holds the figures of the relevance gate (nil when the retriever
	// has none).
	Gate *GateReport `json:"gate,omitempty"`
	// Sets holds the figures of the split's sets (SetTuneOn, SetHeldOut):
	// the same run's questions of those conversations alone. Absent when
	// the data holds no conversation of the split.
	Sets map[string]SetRecall `json:"sets,omitempty"`
}

// SetRecall is the recall of one set of the split (RecallReport.Sets).
type SetRecall struct {
	// Samples are the set's conversations found in the data.
	Samples []string `json:"samples"`
	// Questions is the number of their questions asked.
	Questions int `json:"questions"`
	// RecallAt maps k to recall@k in percent over those questions.
	RecallAt map[string]float64 `json:"recall_at"`
	// InjectedRecallAt8 is GateReport.InjectedRecallAt8 over those
	// questions (when the retriever has a gate).
	InjectedRecallAt8 float64 `json:"injected_recall_at_8,omitempty"`
}

// GateReport measures recall's relevance gate: what is actually injected
// (the items that pass it, at most InjectK), on the questions and on
// prompts that have nothing to recall. Percentages.
type GateReport struct {
	// MinScore is the gate's threshold (0: no gate).
	MinScore float64 `json:"min_score"`
	// InjectedRecallAt8 is recall@8 of the injected items (an empty block
	// counts 0), to compare with UngatedRecallAt8, recall@8 before the
	// gate.
	InjectedRecallAt8 float64 `json:"injected_recall_at_8"`
	UngatedRecallAt8  float64 `json:"ungated_recall_at_8"`
	// BlockShare is the share of questions that get a recall block.
	BlockShare float64 `json:"block_share"`
	// NoEvidenceShare is the share of the questions given a block whose
	// injected items hold no evidence turn.
	NoEvidenceShare float64 `json:"no_evidence_share"`
	// UngatedNoEvidenceShare is the same for the top InjectK before the
	// gate (every question gets a block then).
	UngatedNoEvidenceShare float64 `json:"ungated_no_evidence_share"`
	// UnrelatedBlockShare is the share of unrelated prompts given a block:
	// GenericPrompts asked of every conversation, and the questions of the
	// other conversations asked of each (the speakers and events they ask
	// about are not in its history).
	UnrelatedBlockShare float64 `json:"unrelated_block_share"`
	// UnrelatedGenericBlockShare and UnrelatedCrossBlockShare split it.
	UnrelatedGenericBlockShare float64 `json:"unrelated_generic_block_share"`
	UnrelatedCrossBlockShare   float64 `json:"unrelated_cross_block_share"`
	// UnrelatedPrompts is the number of unrelated prompts asked.
	UnrelatedPrompts int `json:"unrelated_prompts"`
}

// TurnText renders a turn as the benchmark ingests it by default: the
// speaker's name, then TurnBody.
func TurnText(t Turn) string {
	return t.Speaker + ": " + TurnBody(t)
}

// TurnBody renders a turn without the speaker's name (RecallConfig.NoSpeaker):
// what was said, and the caption of a shared image.
func TurnBody(t Turn) string {
	if t.BlipCaption != "" {
		return t.Text + " [shared an image: " + t.BlipCaption + "]"
	}
	return t.Text
}

// SessionDocs returns the turns of one session as ingested by default (with
// the speaker's name, TurnText).
func SessionDocs(c *Conversation, s *Session) []TurnDoc {
	return sessionDocs(c, s, false)
}

// sessionDocs returns the turns of one session as ingested, without the
// speaker's name when noSpeaker.
func sessionDocs(c *Conversation, s *Session, noSpeaker bool) []TurnDoc {
	base := s.Time.UnixMilli()
	if s.Time.IsZero() {
		base = int64(s.Num) * 86_400_000
	}
	out := make([]TurnDoc, len(s.Turns))
	for i, t := range s.Turns {
		role := "assistant"
		if t.Speaker == c.SpeakerA {
			role = "user"
		}
		text := TurnText(t)
		if noSpeaker {
			text = TurnBody(t)
		}
		out[i] = TurnDoc{DiaID: t.DiaID, Speaker: t.Speaker, Role: role, Text: text, Timestamp: base + int64(i)*1000}
	}
	return out
}

// RunRecall ingests the conversations, asks every question that lists
// evidence, and reports recall@k of the evidence turns: per question, the
// share of its evidence turns among the first k distinct turns ranked; the
// mean over questions, overall and per category.
func RunRecall(ctx context.Context, cfg RecallConfig) (RecallReport, error) {
	var rep RecallReport
	convs := cfg.Data
	if convs == nil {
		var err error
		if convs, err = Load(cfg.Path); err != nil {
			return rep, err
		}
	}
	if cfg.Conversations > 0 && cfg.Conversations < len(convs) {
		convs = convs[:cfg.Conversations]
	}
	ks := cfg.Ks
	if len(ks) == 0 {
		ks = DefaultKs
	}
	maxK := 0
	for _, k := range ks {
		if k <= 0 {
			return rep, fmt.Errorf("locomo: bad k %d", k)
		}
		maxK = max(maxK, k)
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "locomo-recall-*")
		if err != nil {
			return rep, fmt.Errorf("locomo: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	newR := cfg.NewRetriever
	switch {
	case newR != nil:
	case cfg.IndexOnly:
		nb, ms := cfg.Neighbours, cfg.MinScore
		newR = func(dir string) (Retriever, error) {
			r, err := NewIndexRetriever(dir, nb)
			if r != nil {
				r.MinScore = ms
			}
			return r, err
		}
	default:
		ms := cfg.MinScore
		newR = func(dir string) (Retriever, error) {
			r, err := NewEngineRetriever(ctx, dir)
			if r != nil {
				r.MinScore = ms
			}
			return r, err
		}
	}
	r, err := newR(dir)
	if err != nil {
		return rep, err
	}
	defer r.Close()
	rep.Path = fmt.Sprintf("%T", r)
	rep.NoSpeaker = cfg.NoSpeaker

	start := time.Now()
	for ci := range convs {
		c := &convs[ci]
		agent := agentOf(c, ci)
		for si := range c.Sessions {
			s := &c.Sessions[si]
			docs := sessionDocs(c, s, cfg.NoSpeaker)
			rep.Turns += len(docs)
			if err := r.IngestSession(ctx, agent, agent+"/session_"+strconv.Itoa(s.Num), docs); err != nil {
				return rep, fmt.Errorf("locomo: ingest: %w", err)
			}
		}
	}
	if err := r.Ready(ctx); err != nil {
		return rep, fmt.Errorf("locomo: ready: %w", err)
	}
	if el := time.Since(start).Seconds(); el > 0 {
		rep.IndexDocsPerSec = float64(rep.Turns) / el
	}
	if cfg.Progress != nil {
		cfg.Progress(fmt.Sprintf("ingested %d turns in %s", rep.Turns, time.Since(start).Round(time.Millisecond)))
	}

	wantCat := map[int]bool{}
	for _, c := range cfg.Categories {
		wantCat[c] = true
	}
	sums := map[int][]float64{} // category → per-k sums (index 0 = all)
	counts := map[int]int{}
	total := make([]float64, len(ks))
	var lat []time.Duration
	gr, gated := r.(GatedRetriever)
	var g gateCounts
	sets := map[string]*setAcc{}
	askK := maxK
	if gated {
		askK = max(askK, InjectK, 8)
	}
	for ci := range convs {
		c := &convs[ci]
		agent := agentOf(c, ci)
		for _, q := range c.QA {
			if len(q.Evidence) == 0 || (len(wantCat) > 0 && !wantCat[q.Category]) {
				continue
			}
			t0 := time.Now()
			ids, err := r.Recall(ctx, agent, q.Question, askK)
			lat = append(lat, time.Since(t0))
			if err != nil {
				return rep, fmt.Errorf("locomo: recall: %w", err)
			}
			ids = distinct(ids)
			if sums[q.Category] == nil {
				sums[q.Category] = make([]float64, len(ks))
			}
			counts[q.Category]++
			rep.Questions++
			set := sets[SetOf(c.SampleID)]
			if name := SetOf(c.SampleID); name != "" && set == nil {
				set = &setAcc{sums: make([]float64, len(ks))}
				sets[name] = set
			}
			if set != nil {
				set.questions++
				if !slices.Contains(set.samples, c.SampleID) {
					set.samples = append(set.samples, c.SampleID)
				}
			}
			for i, k := range ks {
				v := RecallAtK(ids, q.Evidence, k)
				total[i] += v
				sums[q.Category][i] += v
				if set != nil {
					set.sums[i] += v
				}
			}
			if gated {
				inj, err := gr.RecallGated(ctx, agent, q.Question, InjectK)
				if err != nil {
					return rep, fmt.Errorf("locomo: recall: %w", err)
				}
				inj = distinct(inj)
				g.question(distinct(ids), inj, q.Evidence)
				if set != nil {
					set.injected += RecallAtK(inj, q.Evidence, 8)
				}
			}
		}
	}
	if rep.Questions == 0 {
		return rep, errors.New("locomo: no question with evidence")
	}
	if gated {
		if err := g.unrelated(ctx, gr, convs); err != nil {
			return rep, err
		}
		rep.Gate = g.report(cfg.MinScore)
	}
	rep.RecallAt = map[string]float64{}
	for i, k := range ks {
		rep.RecallAt[strconv.Itoa(k)] = round1(100 * total[i] / float64(rep.Questions))
	}
	for name, set := range sets {
		if rep.Sets == nil {
			rep.Sets = map[string]SetRecall{}
		}
		sr := SetRecall{Samples: set.samples, Questions: set.questions, RecallAt: map[string]float64{}}
		for i, k := range ks {
			sr.RecallAt[strconv.Itoa(k)] = round1(100 * set.sums[i] / float64(set.questions))
		}
		if gated {
			sr.InjectedRecallAt8 = round1(100 * set.injected / float64(set.questions))
		}
		rep.Sets[name] = sr
	}
	rep.PerCategory = map[string]map[string]float64{}
	rep.PerCategoryQuestions = map[string]int{}
	for cat, s := range sums {
		m := map[string]float64{}
		for i, k := range ks {
			m[strconv.Itoa(k)] = round1(100 * s[i] / float64(counts[cat]))
		}
		rep.PerCategory[strconv.Itoa(cat)] = m
		rep.PerCategoryQuestions[strconv.Itoa(cat)] = counts[cat]
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	rep.QueryP50Ms = ms(lat[len(lat)/2])
	rep.QueryP99Ms = ms(lat[min(len(lat)-1, len(lat)*99/100)])
	return rep, nil
}

// setAcc accumulates the recall of one set of the split.
type setAcc struct {
	samples   []string
	questions int
	sums      []float64 // per k
	injected  float64
}

// gateCounts accumulates the figures of GateReport.
type gateCounts struct {
	questions, blocks, noEvidence, ungatedNoEvidence int
	injected, ungated                                float64
	generic, genericBlocks, cross, crossBlocks       int
}

func hasAny(ids, evidence []string) bool { return RecallAtK(ids, evidence, len(ids)) > 0 }

func (g *gateCounts) question(ranked, injected, evidence []string) {
	g.questions++
	g.injected += RecallAtK(injected, evidence, 8)
	g.ungated += RecallAtK(ranked, evidence, 8)
	if len(injected) > 0 {
		g.blocks++
		if !hasAny(injected, evidence) {
			g.noEvidence++
		}
	}
	if !hasAny(ranked[:min(len(ranked), InjectK)], evidence) {
		g.ungatedNoEvidence++
	}
}

// unrelated asks each conversation's history the GenericPrompts and the
// other conversations' questions, and counts those given a block.
func (g *gateCounts) unrelated(ctx context.Context, r GatedRetriever, convs []Conversation) error {
	ask := func(agent, prompt string) (bool, error) {
		ids, err := r.RecallGated(ctx, agent, prompt, InjectK)
		if err != nil {
			return false, fmt.Errorf("locomo: recall: %w", err)
		}
		return len(ids) > 0, nil
	}
	for ci := range convs {
		agent := agentOf(&convs[ci], ci)
		for _, p := range GenericPrompts {
			b, err := ask(agent, p)
			if err != nil {
				return err
			}
			g.generic++
			if b {
				g.genericBlocks++
			}
		}
		for cj := range convs {
			if cj == ci {
				continue
			}
			for _, q := range convs[cj].QA {
				if len(q.Evidence) == 0 {
					continue
				}
				b, err := ask(agent, q.Question)
				if err != nil {
					return err
				}
				g.cross++
				if b {
					g.crossBlocks++
				}
			}
		}
	}
	return nil
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return round1(100 * float64(n) / float64(of))
}

func (g *gateCounts) report(minScore float64) *GateReport {
	if minScore == 0 {
		minScore = config.DefaultRecallMinScore
	}
	return &GateReport{
		MinScore:                   max(minScore, 0),
		InjectedRecallAt8:          round1(100 * g.injected / float64(max(g.questions, 1))),
		UngatedRecallAt8:           round1(100 * g.ungated / float64(max(g.questions, 1))),
		BlockShare:                 pct(g.blocks, g.questions),
		NoEvidenceShare:            pct(g.noEvidence, g.blocks),
		UngatedNoEvidenceShare:     pct(g.ungatedNoEvidence, g.questions),
		UnrelatedBlockShare:        pct(g.genericBlocks+g.crossBlocks, g.generic+g.cross),
		UnrelatedGenericBlockShare: pct(g.genericBlocks, g.generic),
		UnrelatedCrossBlockShare:   pct(g.crossBlocks, g.cross),
		UnrelatedPrompts:           g.generic + g.cross,
	}
}

func agentOf(c *Conversation, i int) string {
	if c.SampleID != "" {
		return c.SampleID
	}
	return "conv-" + strconv.Itoa(i)
}

func ms(d time.Duration) float64 { return round3(float64(d) / 1e6) }

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

func distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// RecallAtK is the share of evidence among the first k of ranked (distinct
// ids).
func RecallAtK(ranked, evidence []string, k int) float64 {
	if len(evidence) == 0 {
		return 0
	}
	if k > len(ranked) {
		k = len(ranked)
	}
	top := make(map[string]bool, k)
	for _, id := range ranked[:k] {
		top[id] = true
	}
	n := 0
	for _, e := range evidence {
		if top[e] {
			n++
		}
	}
	return float64(n) / float64(len(evidence))
}

// IndexRetriever drives a recall index directly (package index's Bleve
// index, or any index.Recall, such as PostgreSQL's): each turn is an
// index.Doc (id "<agent>/<dia id>"), and Recall is index.Recall's Recall,
// the method assemble's recall calls.
type IndexRetriever struct {
	// MinScore is the relevance gate of RecallGated (0:
	// lossless.DefaultRecallMinScore; negative: none).
	MinScore float64

	ix         index.Recall
	neighbours int
}

// NewIndexRetriever opens a fresh Bleve index in dir.
func NewIndexRetriever(dir string, neighbours int) (*IndexRetriever, error) {
	ix, err := bleveindex.Open(filepath.Join(dir, "index"), bleveindex.Options{})
	if err != nil {
		return nil, err
	}
	return NewRecallRetriever(ix, neighbours), nil
}

// NewRecallRetriever drives rc, an empty recall index (Close closes it).
func NewRecallRetriever(rc index.Recall, neighbours int) *IndexRetriever {
	return &IndexRetriever{ix: rc, neighbours: neighbours}
}

// IngestSession implements Retriever.
func (r *IndexRetriever) IngestSession(_ context.Context, agent, session string, turns []TurnDoc) error {
	docs := make([]index.Doc, len(turns))
	for i, t := range turns {
		docs[i] = index.Doc{
			ID: agent + "/" + t.DiaID, Agent: agent, Conversation: session, Session: session,
			Role: t.Role, Kind: index.KindMessage, Seq: uint64(i), Timestamp: t.Timestamp, Text: t.Text,
		}
	}
	r.ix.AddGeneration(0, docs...)
	return nil
}

// Ready implements Retriever.
func (r *IndexRetriever) Ready(ctx context.Context) error { return r.ix.Flush(ctx) }

// Recall implements Retriever.
func (r *IndexRetriever) Recall(ctx context.Context, agent, prompt string, k int) ([]string, error) {
	hits, err := r.ix.Recall(ctx, index.RecallQuery{Agent: agent, Text: prompt, K: k, Neighbours: r.neighbours})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = strings.TrimPrefix(h.ID, agent+"/")
	}
	return out, nil
}

// RecallGated implements GatedRetriever.
func (r *IndexRetriever) RecallGated(ctx context.Context, agent, prompt string, k int) ([]string, error) {
	ms := r.MinScore
	if ms == 0 {
		ms = config.DefaultRecallMinScore
	}
	hits, err := r.ix.Recall(ctx, index.RecallQuery{Agent: agent, Text: prompt, K: k, Neighbours: r.neighbours, MinRelevance: max(ms, 0)})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = strings.TrimPrefix(h.ID, agent+"/")
	}
	return out, nil
}

// Close implements Retriever.
func (r *IndexRetriever) Close() error { return r.ix.Close() }

// EngineRetriever drives the lossless engine: each LoCoMo session is
// ingested as its own session (sessionKey "agent:<agent>:<session>", every
// turn a user or assistant message carrying its dia id in an extra
// "dia_id" field, which the engine keeps), and each question goes through
// lossless.Engine.Recall — the method Assemble's recall calls to rank what
// it renders — as the prompt of a fresh session of the agent.
type EngineRetriever struct {
	// MinScore is the relevance gate of RecallGated (0: the engine's
	// configured one; negative: none). Recall measures the ranking before
	// the gate.
	MinScore float64

	e    *lossless.Engine
	dias map[string]string // recall item id → dia id
	q    int
}

// NewEngineRetriever opens a lossless engine with recall in dir.
func NewEngineRetriever(ctx context.Context, dir string) (*EngineRetriever, error) {
	cfg := config.Default()
	cfg.StoreDir = dir // recall is on by default
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &EngineRetriever{e: e, dias: map[string]string{}}, nil
}

// Engine returns the engine under measurement.
func (r *EngineRetriever) Engine() *lossless.Engine { return r.e }

// IngestSession implements Retriever.
func (r *EngineRetriever) IngestSession(ctx context.Context, agent, session string, turns []TurnDoc) error {
	msgs := make([]core.Message, 0, len(turns))
	for _, t := range turns {
		content := []map[string]string{{"type": "text", "text": t.Text}}
		m, err := core.NewMessage(map[string]any{"role": t.Role, "content": content, "timestamp": t.Timestamp, "dia_id": t.DiaID})
		if err != nil {
			return fmt.Errorf("locomo: message %s: %w", t.DiaID, err)
		}
		msgs = append(msgs, m)
	}
	key := "agent:" + agent + ":" + session
	if _, err := r.e.IngestBatch(ctx, core.IngestBatchParams{SessionID: session, SessionKey: key, Messages: msgs}); err != nil {
		return err
	}
	conv, err := r.e.Conversation(ctx, agent, session)
	if err != nil {
		return err
	}
	return r.e.Messages(ctx, agent, session, func(seq uint64, m core.Message) error {
		raw, ok := m.Field("dia_id")
		if !ok {
			return fmt.Errorf("locomo: stored message %d lost its dia_id", seq)
		}
		var dia string
		if err := json.Unmarshal(raw, &dia); err != nil {
			return fmt.Errorf("locomo: dia_id: %w", err)
		}
		r.dias[conv.ID()+":"+strconv.FormatUint(seq, 10)] = dia
		return nil
	})
}

// Ready implements Retriever.
func (r *EngineRetriever) Ready(ctx context.Context) error { return r.e.WaitRecallIndex(ctx) }

// Recall implements Retriever: the ranking before the relevance gate.
func (r *EngineRetriever) Recall(ctx context.Context, agent, prompt string, k int) ([]string, error) {
	return r.recall(ctx, agent, prompt, recalled.Options{K: k, MinScore: -1})
}

// RecallGated implements GatedRetriever: what assemble injects.
func (r *EngineRetriever) RecallGated(ctx context.Context, agent, prompt string, k int) ([]string, error) {
	return r.recall(ctx, agent, prompt, recalled.Options{K: k, MinScore: r.MinScore})
}

func (r *EngineRetriever) recall(ctx context.Context, agent, prompt string, o recalled.Options) ([]string, error) {
	r.q++
	sid := "question-" + strconv.Itoa(r.q)
	items, err := r.e.RecallWith(ctx, core.AssembleParams{SessionID: sid, SessionKey: "agent:" + agent + ":" + sid,
		Prompt: prompt, Messages: []core.Message{core.UserText(prompt, 0)}}, o)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		if d, ok := r.dias[it.ID]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// Close implements Retriever.
func (r *EngineRetriever) Close() error { return r.e.Close() }
