package config

// Recall defaults (Recall).
const (
	// DefaultRecallShare is the share of the token budget recall may use.
	DefaultRecallShare = 0.1
	// DefaultRecallK is the number of recalled turns.
	DefaultRecallK = 8
	// DefaultRecallMinScore is the relevance gate's threshold (MinScore):
	// recall injects a block only when its best hit has an index.Relevance
	// value of at least this, and only items above half of it (with the
	// neighbours of those). Tuned on LoCoMo conv-26 of locomo-dev3.json
	// (see the recall suite of lossless-bench).
	DefaultRecallMinScore = 0.65
	// DefaultRecallQuestionShare is the share of the budget recall may take for
	// a question about the past whose answer lies outside the assembled
	// context (QuestionShare). Tuned on LoCoMo locomo-dev3.json
	// with the window suite of lossless-bench.
	DefaultRecallQuestionShare = 0.7
)

// Recall configures cross-session recall (Config.Recall; package
// lossless/internal/recall takes it).
type Recall struct {
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
	// 0.7 (DefaultRecallQuestionShare); negative: always Share. At most 0.9.
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
	// (DefaultRecallMinScore); negative turns the gate off.
	MinScore float64 `json:"minScore,omitempty"`
}

// On reports whether recall is on: true unless Enabled is set to false.
func (c Recall) On() bool { return c.Enabled == nil || *c.Enabled }

// KOrDefault is the configured K, DefaultRecallK when unset.
func (c Recall) KOrDefault() int {
	if c.K <= 0 {
		return DefaultRecallK
	}
	return c.K
}
