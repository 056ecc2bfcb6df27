package explain

// An assembled context explained: each message with its tokens and part,
// and the totals per part.

import (
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/recalled"
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
// recall went (the engine's AssembleWithDetails), each message with its
// tokens and part, and the totals per part. `lossless assemble --json` and the
// explorer's context view print it, so their numbers cannot differ.
type AssembleReport struct {
	Result  core.AssembleResult
	Details recalled.Details
	// Budget is the budget assemble used: the call's, else the runtime
	// context's, else Config.DefaultTokenBudget.
	Budget int
	// SystemPromptAdditionTokens is Result.SystemPromptAddition's count.
	SystemPromptAdditionTokens int
	Messages                   []ContextMessage
	// Parts are the totals of PartSummaries, PartTail, PartRecall and
	// PartSystem, in that order (every part, zero or not).
	Parts []ContextPart
}

// Assemble explains res, what the engine's AssembleWithDetails returned
// with details for a call whose budget was budget, its messages counted
// with tc (the engine's counter). The tail's sequence numbers are
// TailSeqs's (the engine's AssembleReport calls it when the call's
// session is stored).
func Assemble(res core.AssembleResult, details recalled.Details, budget int, tc core.TokenCounter) AssembleReport {
	rep := AssembleReport{Result: res, Details: details, Budget: budget,
		Messages: make([]ContextMessage, len(res.Messages))}
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
	return rep
}

// TailSeqs fills in the sequence numbers of the messages of conversation c
// among msgs' tail (found by the key of their bytes, records.HashRaw),
// read from r; a message c does not hold (a large one shown by its
// reference) keeps 0.
func TailSeqs(r store.Reader, c store.ConvID, msgs []ContextMessage) error {
	for i := range msgs {
		if msgs[i].Part != PartTail {
			continue
		}
		seq, err := r.SeqByHash(c, records.HashRaw(msgs[i].Message.Raw()))
		switch {
		case err == nil:
			msgs[i].Seq = seq
		case !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("lossless: assemble report: find message: %w", records.FromStore(err))
		}
	}
	return nil
}
