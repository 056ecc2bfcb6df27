package explore

// A census of the stored summaries, by the method that made them.

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/store"
)

// FallbackMethods are the dag.Summary methods a summarizer's fallback
// makes: the deterministic cut of a summary too long after the aggressive
// retry, the aggressive retry itself, and the extractive summary written
// because the model's answer was refused.
var FallbackMethods = []string{dag.MethodTruncate, dag.MethodAggressive, dag.MethodRefused}

// FallbackSummary is a summary made by a fallback (FallbackMethods).
type FallbackSummary struct {
	Agent        string `json:"agent"`
	Conversation string `json:"conversation"`
	// Session is the conversation's name (lossless.SessionInfo.Name).
	Session   string `json:"session"`
	ID        string `json:"id"`
	Depth     int    `json:"depth"`
	Method    string `json:"method"`
	Tokens    int    `json:"tokens"`
	CreatedAt int64  `json:"createdAt"`
	// Refused says why the model's answer was refused (method "refused").
	Refused string `json:"refused,omitempty"`
}

// SummaryCensus counts the stored summaries.
type SummaryCensus struct {
	Summaries int `json:"summaries"`
	// ByMethod counts them by dag.Summary.Method ("" for none recorded).
	ByMethod map[string]int `json:"byMethod"`
	// Fallbacks are the first summaries made by a fallback (at most the
	// max SummaryCensus was given); Fallback counts them all.
	Fallback  int               `json:"fallback"`
	Fallbacks []FallbackSummary `json:"fallbacks"`
}

// SummaryCensus reads every stored summary of every conversation (the
// whole DAG: slow on a large store) and counts them by method, listing up
// to max of those a fallback made.
func (x *Explorer) SummaryCensus(ctx context.Context, max int) (SummaryCensus, error) {
	out := SummaryCensus{ByMethod: map[string]int{}, Fallbacks: []FallbackSummary{}}
	fallback := map[string]bool{}
	for _, m := range FallbackMethods {
		fallback[m] = true
	}
	err := x.e.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("explore: census: read conversations: %w", lossless.StoreError(err))
			}
			if cr.Summaries == 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("explore: census: %w", err)
			}
			for s, err := range r.Summaries(cr.ID) {
				if err != nil {
					return fmt.Errorf("explore: census: conversation %s: %w", cr.ID, lossless.StoreError(err))
				}
				out.Summaries++
				out.ByMethod[s.Method]++
				if !fallback[s.Method] {
					continue
				}
				out.Fallback++
				if len(out.Fallbacks) < max {
					out.Fallbacks = append(out.Fallbacks, FallbackSummary{Agent: cr.Agent, Conversation: cr.ID.String(),
						Session: inspect.SessionInfo{ID: cr.ID.String(), SessionIDs: cr.SessionIDs, Key: cr.Key}.Name(),
						ID:      s.ID, Depth: s.Depth, Method: s.Method, Tokens: s.Tokens, CreatedAt: s.CreatedAt, Refused: s.Refused})
				}
			}
		}
		return nil
	})
	return out, err
}
