package explain

// The recall ranking explained: each item passed by the relevance gate or
// not, the prompt's terms it matched, its session and a snippet.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/recalled"
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

// NewRecall is the explanation of prompt before its items: its analysed
// terms and the relevance gate's threshold of cfg.
func NewRecall(prompt string, cfg config.Recall) RecallExplained {
	out := RecallExplained{Terms: index.QueryTerms(prompt), Threshold: recalled.MinScore(cfg.MinScore),
		Items: []RecallExplanation{}}
	if out.Terms == nil {
		out.Terms = []string{}
	}
	return out
}

// Source is what Items read of an item for the engine to describe: its
// conversation's record (HaveRec false: the store no longer holds it) and
// its text with the byte offset of its first matched term (HaveText false:
// the item is gone; At -1: no term matched). The engine names the session
// from Rec and cuts the snippet around At.
type Source struct {
	Conv     store.ConvID
	Rec      store.Conversation
	HaveRec  bool
	Text     string
	HaveText bool
	At       int
}

// Items explains the engine's recall of out's prompt: ranked is its bare
// ranking (without the relevance gate, best first), gated what the gate
// passed (what the engine's Recall returns and its Assemble would render).
// out.Items become the ranking, then what only the gate passed, each
// marked passed or not with the prompt's terms it matched and its agent,
// read from r; the sources (one per item) are what the engine describes
// them by (the session's name, a snippet).
func Items(r store.Reader, out *RecallExplained, ranked, gated []recalled.Item) ([]Source, error) {
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
	src := make([]Source, len(out.Items))
	for i := range out.Items {
		if err := explainItem(r, &out.Items[i], out.Terms, &src[i]); err != nil {
			return src, err
		}
	}
	return src, nil
}

// explainItem fills in x's agent and matched terms, and src, from the
// store (an item the store no longer holds keeps them empty).
func explainItem(r store.Reader, x *RecallExplanation, terms []string, src *Source) error {
	x.MatchedTerms = []string{}
	c, ok := records.ParseConvID(x.Conversation)
	if !ok {
		return fmt.Errorf("lossless: recall: item %s: bad conversation id %q", x.ID, x.Conversation)
	}
	src.Conv = c
	gone := func(err error) bool { return errors.Is(err, store.ErrNotFound) || errors.Is(err, dag.ErrNotFound) }
	rec, err := r.Conversation(c)
	if gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lossless: recall: item %s: %w", x.ID, records.FromStore(err))
	}
	x.Agent = rec.Agent
	src.Rec, src.HaveRec = rec, true
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
		_, raw, err := records.GetMsgText(r, c, x.Seq)
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
	src.Text, src.HaveText, src.At = text, true, at
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
