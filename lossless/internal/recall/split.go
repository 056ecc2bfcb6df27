package recall

// The budget split of an assemble with recall (issue #28, point 3): how
// much of the budget goes to the recalled turns, and how much stays with
// the assembled context (summaries and fresh tail).
//
// Every assemble with a prompt first assembles the context within the
// budget less Config.Share (the base split) and ranks recall
// against that window (the probe). When the probe finds turns outside the
// window that pass the relevance gate and the prompt is a question (a
// question about the past most of all: past tense, a date, "remember"),
// the split moves: recall may take up to Config.QuestionShare of
// the budget, the context is assembled again in what is left (its newest
// part stays; older tail turns become recallable), recall is ranked again
// against that window with K scaled to the room, and the block takes all
// the room the context leaves. A continuing task (an imperative prompt, a
// turn in the middle of a tool flow) keeps the base split and its tail.

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

const (
	// recallItemTokens is the tokens one recalled item is expected to take
	// (a chat turn and its wrapper): K grows with the room by it. Tuned
	// on locomo-dev3.json.
	recallItemTokens = 40
	// maxRecallK bounds the recalled items of an expanded block.
	maxRecallK = 64
	// maxQuestionRoom bounds the room a question's recall may take, in
	// tokens, whatever the budget (the items maxRecallK holds at
	// recallItemTokens each): past it, the items ranked further down bring
	// less than the context they would displace (on locomo-dev3.json at
	// 8K, a block of ~3,100 tokens kept less of the evidence than one of
	// ~2,800), and a large window keeps its tail.
	maxQuestionRoom = maxRecallK * recallItemTokens
	// maxQuestionChars: a longer prompt (pasted code, a log, a long
	// instruction) is taken for a task whatever its form.
	maxQuestionChars = 1500
)

// promptIntent is what a prompt asks of the window.
type promptIntent int

const (
	// intentTask: a continuing task; the tail stays (the base split).
	intentTask promptIntent = iota
	// intentQuestion: a question (it may be about the present).
	intentQuestion
	// intentPast: a question about the past (past tense, a date, a word
	// like "remember" or "ago").
	intentPast
)

func (i promptIntent) String() string {
	switch i {
	case intentQuestion:
		return "question"
	case intentPast:
		return "past"
	}
	return "task"
}

// questionWords open a question (without a "?"); imperativeWords open an
// instruction.
var (
	questionWords = wordSet("what when where who whom whose which why how")
	// pastWords mark a question about the past ("-ed" words count too,
	// see pastTense).
	pastWords = wordSet("did was were had ago yesterday last earlier before previously once remember remembered recall recalled mentioned said told talked discussed decided agreed when used went got made took gave saw met came began bought wrote")
	// imperativeWords are verbs that open an instruction ("fix the
	// test", "run it again"): a task, unless the prompt is a question.
	imperativeWords = wordSet("fix run add implement write make update change refactor create remove delete continue build test try go use install rename move commit push deploy open edit replace rewrite apply merge revert retry proceed keep start stop finish debug format lint generate")
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// classifyPrompt says what a prompt asks of the window: a task when it is
// long, when the host is in the middle of a tool flow (the last message is
// a tool result or an assistant's tool call) or when it opens with an
// imperative; a question when it holds a "?" or opens with a question
// word; about the past when it also has past tense, a
// date (index.DateSpans) or a word like "remember".
func classifyPrompt(prompt string, msgs []core.Message) promptIntent {
	if n := len(msgs); n > 0 {
		last := msgs[n-1]
		if last.Role() == core.RoleToolResult {
			return intentTask
		}
		if last.Role() == core.RoleAssistant {
			for _, b := range last.Blocks() {
				if b.Type == core.BlockToolCall {
					return intentTask
				}
			}
		}
	}
	prompt = strings.TrimSpace(prompt)
	if prompt == "" || len(prompt) > maxQuestionChars {
		return intentTask
	}
	words := promptWords(prompt)
	if len(words) == 0 {
		return intentTask
	}
	if imperativeWords[words[0]] {
		return intentTask
	}
	if !strings.Contains(prompt, "?") && !questionWords[words[0]] {
		return intentTask
	}
	past := len(index.DateSpans(prompt)) > 0
	for _, w := range words {
		if past {
			break
		}
		past = pastWords[w] || pastTense(w)
	}
	if past {
		return intentPast
	}
	return intentQuestion
}

// promptWords returns the prompt's words, lower-cased (runs of letters,
// an apostrophe inside a word kept; possessives cut).
func promptWords(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' && r != '’' }) {
		f = strings.Trim(f, "'’")
		if f == "" {
			continue
		}
		f = strings.ToLower(f)
		if i := strings.IndexAny(f, "'’"); i > 0 {
			f = f[:i]
		}
		out = append(out, f)
	}
	return out
}

// pastTense reports a regular past-tense word ("visited", "painted"): at
// least five letters ending in "ed" ("need", "bed", "speed" are too short
// or end otherwise; "seed" is not, a rare miss).
func pastTense(w string) bool {
	return utf8.RuneCountInString(w) >= 5 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed")
}

// questionShare is the share recall may take for a prompt of intent i
// (the base share for a task; Config.QuestionShare for a question
// about the past, and midway between the two for another question).
// Never below base.
func questionShare(cfg config.Recall, i promptIntent, base float64) float64 {
	q := cfg.QuestionShare
	switch {
	case q < 0 || i == intentTask:
		return base
	case q == 0:
		q = config.DefaultRecallQuestionShare
	}
	if i == intentQuestion {
		q = (q + base) / 2
	}
	return max(base, min(q, 0.9))
}

// expandedK is the number of items recall ranks for room tokens: k, or
// more when the room holds more (recallItemTokens each), at most
// maxRecallK.
func expandedK(k, room int) int {
	return max(k, min(maxRecallK, room/recallItemTokens))
}

// questionRoom returns the room recall may take for the call's prompt
// (want: the reserve for a task; for a question its share of the budget,
// at most maxQuestionRoom unless the reserve is larger) and the K to rank it with (the
// configured K, scaled to want when want is larger than the reserve).
func questionRoom(cfg config.Recall, call *Call, budget, reserve int) (want, k int) {
	k = kOf(cfg)
	if budget <= 0 {
		return reserve, k
	}
	intent := classifyPrompt(call.Params.Prompt, call.Params.Messages)
	base := float64(reserve) / float64(budget)
	want = min(int(float64(budget)*questionShare(cfg, intent, base)), max(reserve, maxQuestionRoom))
	if want <= reserve {
		return reserve, k
	}
	return want, expandedK(k, want)
}

// recallNeed returns the tokens the recall block of items takes within
// max (0: none).
func recallNeed(ctx context.Context, d Deps, call *Call, items []recalled.Item, max int, bodies *Bodies) (int, error) {
	p := call.Params
	_, n, err := Render(ctx, d, items, p.CitationsMode, call.GrepTool, max, 0, call.here(), bodies)
	return n, err
}
