package explain

// The recall ranking explained: each item passed by the relevance gate or
// not, the prompt's terms it matched, its session and a snippet.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/internal/recalled"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// RecallItem is an item of the recall ranking (recalled.Item; the field
// name RecallExplanation embeds it by).
type RecallItem = recalled.Item

// RecallExplanation is one item of the recall ranking with why it ranks
// where it does.
type RecallExplanation struct {
	RecallItem
	// Passed is set on the items the relevance gate lets through: those
	// the engine's Recall returns and its Assemble would render.
	Passed bool `json:"passed"`
	// MatchedTerms are the prompt's analysed terms (index.QueryTerms)
	// found in the item's indexed text, in the prompt's order.
	MatchedTerms []string `json:"matchedTerms"`
	// Agent and Session name the item's conversation
	// (lossless.SessionInfo.Name).
	Agent   string `json:"agent"`
	Session string `json:"session"`
	// Snippet is the item's text around its first matched term.
	Snippet string `json:"snippet"`
}

// RecallExplained is what Recall found.
type RecallExplained struct {
	// Terms are the prompt's analysed terms.
	Terms []string `json:"terms"`
	// Threshold is the relevance gate's threshold (0: no gate).
	Threshold float64 `json:"threshold"`
	// Items are the ranking without the gate, best first, then any item
	// the gate passed that the ranking did not reach.
	Items []RecallExplanation `json:"items"`
}

// Recall ranks p.Prompt as the engine's Recall does, twice: without the
// relevance gate (the bare ranking, k items) and with it (what the
// engine's Recall returns), and explains each item: passed or not, the prompt's terms it
// matched, its session and a snippet. p's session (when stored) is the one
// recall runs for: what its last assembled window showed is left out, as
// in Assemble.
func Recall(ctx context.Context, port Port, p core.AssembleParams, k int) (RecallExplained, error) {
	out := RecallExplained{Terms: index.QueryTerms(p.Prompt), Threshold: recalled.MinScore(port.RecallConfig().MinScore),
		Items: []RecallExplanation{}}
	if out.Terms == nil {
		out.Terms = []string{}
	}
	ranked, err := port.RecallWith(ctx, p, recalled.Options{K: k, MinScore: -1})
	if err != nil {
		return out, err
	}
	gated, err := port.RecallWith(ctx, p, recalled.Options{K: k})
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
	err = port.View(ctx, func(r store.Reader) error {
		for i := range out.Items {
			if err := explainItem(port, r, &out.Items[i], out.Terms); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// explainItem fills in x's session, matched terms and snippet from the
// store (an item the store no longer holds keeps them empty).
func explainItem(port Port, r store.Reader, x *RecallExplanation, terms []string) error {
	x.MatchedTerms = []string{}
	c, ok := records.ParseConvID(x.Conversation)
	if !ok {
		return fmt.Errorf("lossless: recall: item %s: bad conversation id %q", x.ID, x.Conversation)
	}
	gone := func(err error) bool { return errors.Is(err, store.ErrNotFound) || errors.Is(err, dag.ErrNotFound) }
	rec, err := r.Conversation(c)
	if gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lossless: recall: item %s: %w", x.ID, records.FromStore(err))
	}
	x.Agent = rec.Agent
	x.Session = port.SessionName(c, rec)
	var text string
	if x.Kind == index.KindSummary {
		s, err := r.Summary(c, x.SummaryID)
		if gone(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lossless: recall: item %s: %w", x.ID, records.FromStore(err))
		}
		text = s.Text
	} else {
		raw, err := port.MessageText(r, c, x.Seq)
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
		text = recalled.IndexedText(m)
	}
	x.MatchedTerms = matchedTerms(terms, text)
	at := -1
	low := strings.ToLower(text)
	for _, t := range x.MatchedTerms {
		if i := strings.Index(low, t); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	x.Snippet = port.Snippet(text, at)
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
