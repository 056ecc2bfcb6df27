package index

import (
	"context"
	"hash/fnv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RecallQuery asks for the turns of an agent's history that best match a
// prompt, for assemble's recall (and the LoCoMo recall benchmark, which
// measures this same path).
type RecallQuery struct {
	// Agent scopes the recall (required; recall never crosses agents).
	Agent string
	// Text is the prompt of the turn.
	Text string
	// K is the number of distinct turns wanted, neighbours included
	// (default 10).
	K int
	// Neighbours is how many turns either side of a hit are added after it
	// (default 0). They count toward K.
	Neighbours int
	// NeighbourHits is how many of the best hits get neighbours (default 3).
	NeighbourHits int
	// CurrentSession is the session being assembled: its turns with
	// Seq >= InContextFrom are already in the context and never recalled.
	CurrentSession string
	// InContextFrom: see CurrentSession.
	InContextFrom uint64
	// ExcludeIDs are ids already in the context (e.g. summaries shown).
	ExcludeIDs map[string]bool
	// Conversations, ExcludeConversation, Since and Until narrow the
	// search as in Query.
	Conversations       []string
	ExcludeConversation string
	Since, Until        int64
	// WaitForLag: as in Query.
	WaitForLag bool
}

// recallFetch is how many candidates are fetched per wanted turn.
const recallFetch = 2

// Recall returns up to q.K distinct turns ranked for q.Text: hits without
// those already in context, with near-identical texts collapsed, each
// optionally followed by its neighbours (NeighbourOf set).
func (ix *Index) Recall(ctx context.Context, q RecallQuery) ([]Hit, error) {
	if q.K <= 0 {
		q.K = 10
	}
	if q.Agent == "" {
		return nil, ErrNoAgent
	}
	if q.NeighbourHits <= 0 {
		q.NeighbourHits = 3
	}
	if q.WaitForLag {
		if err := ix.Flush(ctx); err != nil {
			return nil, err
		}
	}
	terms := ix.Terms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	sq := Query{
		Agent:               q.Agent,
		Conversations:       q.Conversations,
		ExcludeConversation: q.ExcludeConversation,
		Since:               q.Since,
		Until:               q.Until,
	}
	fetch := q.K*recallFetch + len(q.ExcludeIDs)
	cands, err := ix.search(ctx, &sq, terms, fetch)
	if err != nil {
		return nil, err
	}
	excluded := func(h *Doc) bool {
		if q.ExcludeIDs[h.ID] {
			return true
		}
		return q.CurrentSession != "" && h.Session == q.CurrentSession && h.Seq >= q.InContextFrom
	}
	out := make([]Hit, 0, q.K)
	seen := make(map[string]bool, q.K*2)
	seenText := make(map[uint64]bool, q.K*2)
	for i := range cands {
		if len(out) >= q.K {
			break
		}
		h := cands[i]
		if seen[h.ID] || excluded(&h.Doc) {
			continue
		}
		if h.Text != "" {
			k := textKey(h.Text)
			if seenText[k] {
				continue
			}
			seenText[k] = true
		}
		seen[h.ID] = true
		out = append(out, h)
	}
	return out, nil
}

// textKey hashes a text with case, punctuation and spacing folded, so that
// near-identical turns collapse.
func textKey(s string) uint64 {
	h := fnv.New64a()
	var buf [4]byte
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n := utf8.EncodeRune(buf[:], r)
			h.Write(buf[:n])
		}
	}
	return h.Sum64()
}

