package recall

import "context"

// Recall defaults (Config).
const (
	// DefaultShare is the share of the token budget recall may use.
	DefaultShare = 0.1
	// DefaultK is the number of recalled turns.
	DefaultK = 8
	// DefaultMinScore is the relevance gate's threshold (Config.MinScore):
	// recall injects a block only when its best hit has an index.Relevance
	// value of at least this, and only items above half of it (with the
	// neighbours of those). Tuned on LoCoMo conv-26 of locomo-dev3.json
	// (see the recall suite of lossless-bench).
	DefaultMinScore = 0.65
	// DefaultQuestionShare is the share of the budget recall may take for
	// a question about the past whose answer lies outside the assembled
	// context (Config.QuestionShare). Tuned on LoCoMo locomo-dev3.json
	// with the window suite of lossless-bench.
	DefaultQuestionShare = 0.7
)

// Config configures cross-session recall (the engine's Config.Recall).
type Config struct {
	// Enabled turns cross-session recall on or off: the Bleve index of
	// every stored message and summary (<StoreDir>/index) and the recalled
	// turns Assemble appends for the prompt. Default (absent, nil): on.
	// "recall": {"enabled": false} turns it off (no index is opened or
	// written; one built earlier is rebuilt when recall is turned on
	// again). Read it with the engine's Config.RecallEnabled.
	Enabled *bool `json:"enabled,omitempty"`
	// Share is the share of the token budget recall may use. Default 0.1.
	Share float64 `json:"share,omitempty"`
	// K is the number of recalled items. Default 8 (a question whose
	// block is given more room ranks more, see QuestionShare).
	K int `json:"k,omitempty"`
	// QuestionShare is the share of the token budget recall may take for
	// a question about the past whose answer lies outside the assembled
	// context (half-way between Share and it for another question); the
	// context is then assembled in what is left, its newest part kept.
	// A task (an instruction, a turn in a tool flow) keeps Share. Default
	// 0.7 (DefaultQuestionShare); negative: always Share. At most 0.9.
	// Whatever the share, a question's recall takes at most 2,560 tokens
	// (or Share of the budget when that is more): a large window keeps its
	// tail.
	QuestionShare float64 `json:"questionShare,omitempty"`
	// CrossAgent lets recall search other agents' history. Default false.
	CrossAgent bool `json:"crossAgent,omitempty"`
	// MinScore is recall's relevance gate: a block is injected only when
	// its best hit's relevance (index.Relevance: the share of the prompt's
	// specific words it holds, about 1 for a hit on the prompt's subject)
	// reaches it; other items need half of it. Default 0.65
	// (DefaultMinScore); negative turns the gate off.
	MinScore float64 `json:"minScore,omitempty"`
}

// On reports whether recall is on: true unless Enabled is set to false.
func (c Config) On() bool { return c.Enabled == nil || *c.Enabled }

// k is the configured K, DefaultK when unset.
func (c Config) k() int {
	if c.K <= 0 {
		return DefaultK
	}
	return c.K
}

// Item is one recalled turn or summary.
type Item struct {
	// ID is the item's id: "<conversation>:<seq>" for a message,
	// "<conversation>/<summary id>" for a summary.
	ID           string  `json:"id"`
	Kind         string  `json:"kind"`
	Conversation string  `json:"conversation"`
	Seq          uint64  `json:"seq,omitempty"`
	SummaryID    string  `json:"summaryId,omitempty"`
	Role         string  `json:"role"`
	Timestamp    int64   `json:"timestamp"`
	Score        float64 `json:"score"`
	// Relevance is what the relevance gate compared with its threshold
	// (index.Relevance.Value; a neighbour carries its hit's).
	Relevance float64 `json:"relevance"`
	// Neighbour is set on turns added as context of a hit.
	Neighbour bool `json:"neighbour,omitempty"`
}

// Options adjust the engine's RecallWith.
type Options struct {
	// K is the number of items wanted (0: Config.K).
	K int
	// MinScore overrides the relevance gate's threshold (0: the configured
	// one, see MinScore; negative: no gate, the bare ranking).
	MinScore float64
}

// MinScore is the relevance gate's threshold for a configured value
// v (Config.MinScore): DefaultMinScore when v is 0, no gate
// (0) when v is negative.
func MinScore(v float64) float64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return DefaultMinScore
	}
	return v
}

// Recall statuses (Report.Status).
const (
	Injected = "injected" // a recall block ends the context
	None     = "none"     // searched; nothing relevant (or nothing fit)
	Off      = "off"      // not searched: disabled, no prompt or no room
	Failed   = "failed"   // the index or a store read failed (Reason)
)

// Details says how an Assemble went, beyond its result
// (the engine's AssembleWithDetails).
type Details struct {
	Recall Report `json:"recall"`
}

// Report is what recall did in one Assemble.
type Report struct {
	// Status is Injected, None, Off or Failed.
	Status string `json:"status"`
	// Items is the number of recalled items in the block.
	Items int `json:"items,omitempty"`
	// Partial is set while the recall index is rebuilt: the old index was
	// searched (with what it holds: nothing when it was missing or
	// corrupt), Assemble did not wait for the new one.
	Partial bool `json:"partial,omitempty"`
	// Rebuilt is, when Partial, the docs the rebuild has indexed so far.
	Rebuilt int64 `json:"rebuilt,omitempty"`
	// Reason explains a status other than Injected.
	Reason string `json:"reason,omitempty"`
}

type detailsCtxKey struct{}

// detailsFrom returns the report WithDetails asked for (nil: none;
// its methods then do nothing).
func detailsFrom(ctx context.Context) *Report {
	d, _ := ctx.Value(detailsCtxKey{}).(*Details)
	if d == nil {
		return nil
	}
	return &d.Recall
}

func (r *Report) set(status, reason string) {
	if r != nil {
		r.Status, r.Reason = status, reason
	}
}

func (r *Report) injected(items int) {
	if r != nil {
		r.Status, r.Items, r.Reason = Injected, items, ""
	}
}

func (r *Report) partial(rebuilt int64) {
	if r != nil {
		r.Partial, r.Rebuilt = true, rebuilt
	}
}

// WithDetails returns ctx carrying d: Assemble under it fills in d.Recall
// (the engine's AssembleWithDetails).
func WithDetails(ctx context.Context, d *Details) context.Context {
	return context.WithValue(ctx, detailsCtxKey{}, d)
}
