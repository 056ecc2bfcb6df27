package ui

import (
	"context"
	"net/http"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/explain"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// maxMessageText caps the text of one message in /api/context (the whole
// message is at /api/message).
const maxMessageText = 16 << 10

// contextAnswer is /api/context's answer: lossless.AssembleReport as JSON.
type contextAnswer struct {
	Agent      string `json:"agent"`
	Session    string `json:"session"`
	SessionKey string `json:"sessionKey"`
	// Budget is the budget asked for (0: the engine's default);
	// EffectiveBudget the one assemble used.
	Budget                     int             `json:"budget"`
	EffectiveBudget            int             `json:"effectiveBudget"`
	EstimatedTokens            int             `json:"estimatedTokens"`
	SystemPromptAddition       string          `json:"systemPromptAddition"`
	SystemPromptAdditionTokens int             `json:"systemPromptAdditionTokens"`
	PromptAuthority            string          `json:"promptAuthority,omitempty"`
	Recall                     recalled.Report `json:"recall"`
	// Cut says what the budget could not hold (nil: everything fit).
	Cut *core.AssembleCut `json:"cut,omitempty"`
	// Last is the session's last assemble the serving process answered
	// (asked for with last=1; nil when none is recorded): this answer then
	// assembles again with its budget and prompt.
	Last     *LastAssemble         `json:"last,omitempty"`
	Parts    []explain.ContextPart `json:"parts"`
	Messages []contextMessage      `json:"messages"`
}

// contextMessage is one message of the assembled context.
type contextMessage struct {
	Index     int    `json:"index"`
	Role      string `json:"role"`
	Part      string `json:"part"`
	Tokens    int    `json:"tokens"`
	SummaryID string `json:"summaryId,omitempty"`
	Seq       uint64 `json:"seq,omitempty"`
	Timestamp int64  `json:"timestamp,omitempty"`
	// Text is the message as plain text (lossless.MessagePlainText), cut
	// at maxMessageText bytes (Truncated).
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
}

// contextView answers /api/context?agent=&session=&budget=&prompt=: what
// assemble builds, by the code `lossless assemble --json` runs.
func (s *Server) contextView(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error) {
	conv, err := session(ctx, e, r)
	if err != nil {
		return nil, err
	}
	budget, err := intParam(r, "budget", 0, 0)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	agent, sid := conv.Agent, q.Get("session")
	prompt := q.Get("prompt")
	var last *LastAssemble
	if q.Get("last") == "1" && s.last != nil {
		for _, k := range []string{q.Get("key"), sid} {
			if rec, ok := s.last(k); k != "" && ok {
				last = &rec
				break
			}
		}
		if last != nil && budget == 0 && prompt == "" {
			budget, prompt = last.Budget, last.Prompt
		}
	}
	p := core.AssembleParams{SessionID: sid, SessionKey: cliKey(agent), Messages: []core.Message{},
		TokenBudget: budget, Prompt: prompt}
	rep, err := e.AssembleReport(ctx, p)
	if err != nil {
		return nil, err
	}
	out := contextAnswer{Agent: agent, Session: sid, SessionKey: p.SessionKey, Budget: budget, EffectiveBudget: rep.Budget,
		EstimatedTokens: rep.Result.EstimatedTokens, SystemPromptAddition: rep.Result.SystemPromptAddition,
		SystemPromptAdditionTokens: rep.SystemPromptAdditionTokens, PromptAuthority: rep.Result.PromptAuthority,
		Recall: rep.Details.Recall, Cut: rep.Result.Cut, Last: last, Parts: rep.Parts, Messages: make([]contextMessage, len(rep.Messages))}
	for i, m := range rep.Messages {
		text, cut := clipBytes(lossless.MessagePlainText(m.Message), maxMessageText)
		out.Messages[i] = contextMessage{Index: i, Role: m.Message.Role(), Part: m.Part, Tokens: m.Tokens, SummaryID: m.SummaryID,
			Seq: m.Seq, Timestamp: m.Message.Timestamp(), Text: text, Truncated: cut}
	}
	return out, nil
}

// clipBytes cuts s to at most n bytes on a rune boundary.
func clipBytes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}
