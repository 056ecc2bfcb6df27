package lossless

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/recall"
	"github.com/lossless-engine/contextengine/store"
)

// RecallExplanation is one item of the recall ranking with why it ranks
// where it does.
type RecallExplanation struct {
	RecallItem
	// Passed is set on the items the relevance gate lets through: those
	// Recall returns and Assemble would render.
	Passed bool `json:"passed"`
	// MatchedTerms are the prompt's analysed terms (index.QueryTerms)
	// found in the item's indexed text, in the prompt's order.
	MatchedTerms []string `json:"matchedTerms"`
	// Agent and Session name the item's conversation (SessionInfo.Name).
	Agent   string `json:"agent"`
	Session string `json:"session"`
	// Snippet is the item's text around its first matched term.
	Snippet string `json:"snippet"`
}

// RecallExplained is what ExplainRecall found.
type RecallExplained struct {
	// Terms are the prompt's analysed terms.
	Terms []string `json:"terms"`
	// Threshold is the relevance gate's threshold (0: no gate).
	Threshold float64 `json:"threshold"`
	// Items are the ranking without the gate, best first, then any item
	// the gate passed that the ranking did not reach.
	Items []RecallExplanation `json:"items"`
}

// ExplainRecall ranks p.Prompt as Recall does, twice: without the
// relevance gate (the bare ranking, k items) and with it (what Recall
// returns), and explains each item: passed or not, the prompt's terms it
// matched, its session and a snippet. p's session (when stored) is the one
// recall runs for: what its last assembled window showed is left out, as
// in Assemble.
func (e *Engine) ExplainRecall(ctx context.Context, p core.AssembleParams, k int) (RecallExplained, error) {
	out := RecallExplained{Terms: index.QueryTerms(p.Prompt), Threshold: recallMinScore(configuredMinScore(&e.cfg.Config)),
		Items: []RecallExplanation{}}
	if out.Terms == nil {
		out.Terms = []string{}
	}
	ranked, err := e.RecallWith(ctx, p, RecallOptions{K: k, MinScore: -1})
	if err != nil {
		return out, err
	}
	gated, err := e.RecallWith(ctx, p, RecallOptions{K: k})
	if err != nil {
		return out, err
	}
	passed := make(map[string]bool, len(gated))
	for _, it := range gated {
		passed[it.ID] = true
	}
	seen := make(map[string]bool, len(ranked))
	for _, it := range ranked {
		seen[it.ID] = true
		out.Items = append(out.Items, RecallExplanation{RecallItem: it, Passed: passed[it.ID]})
	}
	for _, it := range gated {
		if !seen[it.ID] {
			out.Items = append(out.Items, RecallExplanation{RecallItem: it, Passed: true})
		}
	}
	done, err := e.enter()
	if err != nil {
		return out, err
	}
	defer done()
	err = e.st.View(ctx, func(r store.Reader) error {
		for i := range out.Items {
			if err := e.explainItem(r, &out.Items[i], out.Terms); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// explainItem fills in x's session, matched terms and snippet from the
// store (an item the store no longer holds keeps them empty).
func (e *Engine) explainItem(r store.Reader, x *RecallExplanation, terms []string) error {
	x.MatchedTerms = []string{}
	c, ok := parseConvID(x.Conversation)
	if !ok {
		return fmt.Errorf("lossless: recall: item %s: bad conversation id %q", x.ID, x.Conversation)
	}
	gone := func(err error) bool { return errors.Is(err, store.ErrNotFound) || errors.Is(err, dag.ErrNotFound) }
	rec, err := r.Conversation(c)
	if gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lossless: recall: item %s: %w", x.ID, fromStore(err))
	}
	x.Agent = rec.Agent
	x.Session = SessionInfo{ID: c.String(), SessionIDs: rec.SessionIDs, Key: rec.Key}.Name()
	var text string
	if x.Kind == index.KindSummary {
		s, err := r.Summary(c, x.SummaryID)
		if gone(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lossless: recall: item %s: %w", x.ID, fromStore(err))
		}
		text = s.Text
	} else {
		_, raw, err := getMsgText(r, c, x.Seq)
		if gone(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lossless: recall: item %s: %w", x.ID, err)
		}
		m, err := core.ParseMessage(raw)
		if err != nil {
			return fmt.Errorf("lossless: recall: item %s: %w", x.ID, err)
		}
		text = recall.IndexedText(m)
	}
	x.MatchedTerms = matchedTerms(terms, text)
	at := -1
	low := strings.ToLower(text)
	for _, t := range x.MatchedTerms {
		if i := strings.Index(low, t); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	x.Snippet = snippet(text, at)
	return nil
}

// matchedTerms returns the terms (analysed, as index.QueryTerms gives
// them) that the analysed text holds, in terms' order.
func matchedTerms(terms []string, text string) []string {
	freqs, _ := index.DocTerms(text)
	out := []string{}
	for _, t := range terms {
		if freqs[t] > 0 {
			out = append(out, t)
		}
	}
	return out
}
