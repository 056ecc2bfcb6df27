package explain

// An assembled context explained: each message with its tokens and part,
// and the totals per part.

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/recalled"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// The parts of an assembled context (ContextMessage.Part, ContextPart).
const (
	// PartSummaries: summaries of older history (lossless.RenderSummary).
	PartSummaries = "summaries"
	// PartTail: the stored messages of the window, newest last.
	PartTail = "tail"
	// PartRecall: the recall block (lossless.IsRecallMessage).
	PartRecall = "recall"
	// PartSystem: the system prompt addition.
	PartSystem = "system"
)

// ContextMessage is one message of an assembled context with its token
// count and the part it belongs to.
type ContextMessage struct {
	Part string `json:"part"`
	// Tokens is the message's count (core.CountMessage, the engine's
	// counter).
	Tokens int `json:"tokens"`
	// SummaryID is the summary a PartSummaries message renders.
	SummaryID string `json:"summaryId,omitempty"`
	// Seq is the stored message a PartTail message is (0 when it is not
	// found by its bytes: a large message shown by its reference).
	Seq     uint64       `json:"seq,omitempty"`
	Message core.Message `json:"message"`
}

// ContextPart is one part's total in an AssembleReport.
type ContextPart struct {
	Part   string `json:"part"`
	Count  int    `json:"count"`
	Tokens int    `json:"tokens"`
}

// AssembleReport is an assembled context explained: the result and how
// recall went (Port.AssembleWithDetails), each message with its tokens and
// part, and the totals per part. `lossless assemble --json` and the
// explorer's context view print it, so their numbers cannot differ.
type AssembleReport struct {
	Result  core.AssembleResult
	Details recalled.Details
	// Budget is the budget assemble used: the call's, else the runtime
	// context's, else Config.DefaultTokenBudget (Port.Budget).
	Budget int
	// SystemPromptAdditionTokens is Result.SystemPromptAddition's count.
	SystemPromptAdditionTokens int
	Messages                   []ContextMessage
	// Parts are the totals of PartSummaries, PartTail, PartRecall and
	// PartSystem, in that order (every part, zero or not).
	Parts []ContextPart
}

// Assemble assembles p (Port.AssembleWithDetails) and explains the
// result (lossless.Engine.AssembleReport). Assemble changes nothing in the
// store.
func Assemble(ctx context.Context, port Port, p core.AssembleParams) (AssembleReport, error) {
	res, details, err := port.AssembleWithDetails(ctx, p)
	if err != nil {
		return AssembleReport{}, err
	}
	rep := AssembleReport{Result: res, Details: details, Budget: port.Budget(p),
		Messages: make([]ContextMessage, len(res.Messages))}
	tc := port.Counter()
	if res.SystemPromptAddition != "" {
		rep.SystemPromptAdditionTokens = tc.CountText(res.SystemPromptAddition)
	}
	for i, m := range res.Messages {
		cm := ContextMessage{Part: PartTail, Tokens: core.CountMessage(tc, m), Message: m}
		if id, ok := recalled.SummaryID(m); ok {
			cm.Part, cm.SummaryID = PartSummaries, id
		} else if recalled.IsMessage(m) {
			cm.Part = PartRecall
		}
		rep.Messages[i] = cm
	}
	if err := tailSeqs(ctx, port, p, rep.Messages); err != nil {
		return AssembleReport{}, err
	}
	rep.Parts = []ContextPart{{Part: PartSummaries}, {Part: PartTail}, {Part: PartRecall},
		{Part: PartSystem, Tokens: rep.SystemPromptAdditionTokens}}
	if res.SystemPromptAddition != "" {
		rep.Parts[3].Count = 1
	}
	for _, m := range rep.Messages {
		for i := range rep.Parts {
			if rep.Parts[i].Part == m.Part {
				rep.Parts[i].Count++
				rep.Parts[i].Tokens += m.Tokens
			}
		}
	}
	return rep, nil
}

// tailSeqs fills in the sequence numbers of the stored messages among
// msgs (found by their bytes' key), when p names a stored conversation.
func tailSeqs(ctx context.Context, port Port, p core.AssembleParams, msgs []ContextMessage) error {
	conv, err := port.Conversation(ctx, p.SessionID, p.SessionKey)
	if err != nil {
		return nil // a pass-through: nothing is stored
	}
	return port.View(ctx, func(r store.Reader) error {
		for i := range msgs {
			if msgs[i].Part != PartTail {
				continue
			}
			seq, err := port.SeqOf(r, conv, msgs[i].Message.Raw())
			switch {
			case err == nil:
				msgs[i].Seq = seq
			case !errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("lossless: assemble report: find message: %w", records.FromStore(err))
			}
		}
		return nil
	})
}
