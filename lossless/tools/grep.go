package tools

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Grep scopes and sorts.
const (
	ScopeConversation = "conversation"
	ScopeAgent        = "agent"
	SortRelevance     = "relevance"
	SortRecency       = "recency"
)

// GrepParams are the arguments of Grep.
type GrepParams struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	// Query is the text to find: every word must occur (case-insensitive),
	// or a regular expression when Regex is set.
	Query string `json:"query"`
	Regex bool   `json:"regex,omitempty"`
	// Scope is ScopeConversation (default: the session's conversation) or
	// ScopeAgent (every conversation of the agent).
	Scope string `json:"scope,omitempty"`
	// Since and Until bound the timestamps (Unix ms; 0: open).
	Since int64 `json:"since,omitempty"`
	Until int64 `json:"until,omitempty"`
	// Sort is SortRelevance (default) or SortRecency.
	Sort string `json:"sort,omitempty"`
	// Limit is the most hits returned (default 20, at most 200).
	Limit int `json:"limit,omitempty"`
	// Kind restricts the hits to "message" or "summary" ("": both).
	Kind string `json:"kind,omitempty"`
}

// GrepHit is one match.
type GrepHit struct {
	Kind string `json:"kind"` // "message" or "summary"
	// ID is a message hit's id, "<conv>:<seq>" (MessageID): lcm_describe
	// and lcm_expand take it.
	ID           string `json:"id,omitempty"`
	Conversation string `json:"conversation"`
	Seq          uint64 `json:"seq,omitempty"`
	// SummaryID is a summary hit's summary.
	SummaryID string `json:"summaryId,omitempty"`
	// CoveredBy is, for a message hit, the leaf summary that covers the
	// message (the smallest, should several), "" when none does (a
	// message not summarised yet, as in the fresh tail): lcm_expand of it
	// returns the message among the others it covers. Grep sets it;
	// Matcher.MessageHit does not.
	CoveredBy string  `json:"coveredBy,omitempty"`
	Role      string  `json:"role,omitempty"`
	Timestamp int64   `json:"timestamp"`
	Score     float64 `json:"score"`
	Snippet   string  `json:"snippet"`
}

// The bounds on GrepParams.Limit: the default and the most.
const (
	DefaultGrepLimit = 20
	MaxGrepLimit     = 200
)

const snippetRadius = 100

// Matcher finds a query in text: the words of a query, all of which must
// occur, or a regular expression.
type Matcher struct {
	re    *regexp.Regexp
	words []string
	// rawParts are the ASCII letter-and-digit runs of the words: a
	// message's raw JSON holds each of them whenever its plain text holds
	// the word (JSON escapes no ASCII letter or digit, and the plain
	// text's own additions — role, tool name, "tool call", "error" — are
	// in the raw JSON too). A message whose raw bytes lack one is not
	// parsed (rawMayMatch).
	rawParts [][]byte
}

// NewMatcher returns the matcher of p.Query (p.Regex: a regular
// expression), matching messages on their plain text (records.PlainText);
// a bad query is an error wrapping ErrBadArgs.
func NewMatcher(p GrepParams) (*Matcher, error) {
	q := strings.TrimSpace(p.Query)
	if q == "" {
		return nil, fmt.Errorf("%w: empty query", ErrBadArgs)
	}
	if p.Regex {
		re, err := regexp.Compile("(?i)" + q)
		if err != nil {
			return nil, fmt.Errorf("%w: regex: %v", ErrBadArgs, err)
		}
		return &Matcher{re: re}, nil
	}
	m := &Matcher{words: strings.Fields(strings.ToLower(q))}
	for _, w := range m.words {
		for _, part := range strings.FieldsFunc(w, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
			m.rawParts = append(m.rawParts, []byte(part))
		}
	}
	return m, nil
}

// rawMayMatch reports whether a message of raw JSON may match: false when
// a part of a word (rawParts) is missing from its lower-cased bytes. (A
// text that spells a letter with a \u-escape of a character that
// lower-cases to ASCII, such as the Kelvin sign, is the one it misses.)
func (m *Matcher) rawMayMatch(raw []byte) bool {
	if len(m.rawParts) == 0 {
		return true
	}
	low := bytes.ToLower(raw)
	for _, w := range m.rawParts {
		if !bytes.Contains(low, w) {
			return false
		}
	}
	return true
}

// match returns the score of text (0: no match) and the byte offset of the
// first match.
func (m *Matcher) match(text string) (float64, int) {
	if m.re != nil {
		locs := m.re.FindAllStringIndex(text, 100)
		if len(locs) == 0 {
			return 0, -1
		}
		return float64(len(locs)) / math.Sqrt(1+float64(len(text))/400), locs[0][0]
	}
	low := strings.ToLower(text)
	score, first := 0.0, -1
	for _, w := range m.words {
		n := strings.Count(low, w)
		if n == 0 {
			return 0, -1
		}
		if i := strings.Index(low, w); first < 0 || i < first {
			first = i
		}
		score += 1 + math.Log(float64(n))
	}
	return score / math.Sqrt(1+float64(len(text))/400), first
}

// MessageHit returns the hit of stored message rec (read with its body) of
// conversation c, matched on its plain text, when it matches; a message
// that does not parse never matches.
func (m *Matcher) MessageHit(c store.ConvID, rec store.Message) (GrepHit, bool) {
	if !m.rawMayMatch(rec.Raw) {
		return GrepHit{}, false
	}
	msg, err := core.ParseMessage(rec.Raw)
	if err != nil {
		return GrepHit{}, false
	}
	text := records.PlainText(msg)
	score, at := m.match(text)
	if score <= 0 {
		return GrepHit{}, false
	}
	return GrepHit{Kind: "message", ID: MessageID(c, rec.Seq), Conversation: c.String(), Seq: rec.Seq, Role: rec.Role,
		Timestamp: rec.Timestamp, Score: score, Snippet: Snippet(text, at)}, true
}

// SummaryHit returns the hit of summary s of conversation c, matched on
// its text, when it matches.
func (m *Matcher) SummaryHit(c store.ConvID, s dag.Summary) (GrepHit, bool) {
	score, at := m.match(s.Text)
	if score <= 0 {
		return GrepHit{}, false
	}
	return GrepHit{Kind: "summary", Conversation: c.String(), SummaryID: s.ID,
		Timestamp: s.Latest, Score: score, Snippet: Snippet(s.Text, at)}, true
}

// Snippet returns the text around byte offset at of text (a hit's
// snippet): up to 100 bytes either side, on rune boundaries, its white
// space collapsed, with "…" where it was cut.
func Snippet(text string, at int) string {
	if at < 0 {
		at = 0
	}
	// ToLower may change byte lengths; clamp to text.
	if at > len(text) {
		at = len(text)
	}
	from, to := at-snippetRadius, at+snippetRadius
	if from < 0 {
		from = 0
	}
	if to > len(text) {
		to = len(text)
	}
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	s := strings.Join(strings.Fields(text[from:to]), " ")
	if from > 0 {
		s = "…" + s
	}
	if to < len(text) {
		s += "…"
	}
	return s
}

// CheckSort refuses a sort Grep does not know (an error wrapping
// ErrBadArgs).
func CheckSort(sort string) error {
	switch sort {
	case "", SortRelevance, SortRecency:
		return nil
	}
	return fmt.Errorf("%w: sort %q (want relevance or recency)", ErrBadArgs, sort)
}

// AgentScope reports whether scope is ScopeAgent (every conversation of
// the agent) rather than ScopeConversation (the session's and its ended
// subagents'); another scope is an error wrapping ErrBadArgs.
func AgentScope(scope string) (bool, error) {
	switch scope {
	case "", ScopeConversation:
		return false, nil
	case ScopeAgent:
		return true, nil
	}
	return false, fmt.Errorf("%w: scope %q (want conversation or agent)", ErrBadArgs, scope)
}

// ParseConvIDs returns the conversations of ids (hex, as
// store.ConvID.String prints them), skipping any that is not one.
func ParseConvIDs(ids []string) []store.ConvID {
	var out []store.ConvID
	for _, id := range ids {
		b, err := hex.DecodeString(id)
		if err != nil || len(b) != 8 {
			continue
		}
		var c store.ConvID
		copy(c[:], b)
		out = append(out, c)
	}
	return out
}

// Grep searches the stored messages and summaries of conversations convs
// (the caller resolved them from p's session and scope) in st with m (p's
// matcher, NewMatcher), with p's time filters, kind, sort (CheckSort) and
// limit. Messages are matched on their plain text, summaries on their
// text. A gap in a conversation's messages is an error wrapping
// store.ErrCorrupt (records.MissingErr), never a short answer.
func Grep(ctx context.Context, st store.Store, m *Matcher, p GrepParams, convs []store.ConvID) ([]GrepHit, error) {
	if err := CheckSort(p.Sort); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultGrepLimit
	}
	if limit > MaxGrepLimit {
		limit = MaxGrepLimit
	}
	inTime := func(ts int64) bool {
		return (p.Since == 0 || ts >= p.Since) && (p.Until == 0 || ts <= p.Until)
	}
	// Without time bounds every message's body is read: the scan reads
	// them with the headers. With bounds only those in time are: the scan
	// reads headers, then the bodies of those.
	bounded := p.Since != 0 || p.Until != 0
	var hits []GrepHit
	for _, c := range convs {
		err := st.View(ctx, func(r store.Reader) error {
			first := len(hits) // c's message hits start here
			if p.Kind == "" || p.Kind == "message" {
				conv, err := r.Conversation(c)
				if err != nil {
					return fmt.Errorf("lossless: grep: conversation %s: %w", c, records.FromStore(err))
				}
				if conv.Retiring {
					return nil // being deleted by retention: not searched
				}
				// Sequence numbers run from 1 to NextSeq-1 without a gap:
				// a missing message fails the search (ErrCorrupt, with
				// the range), never a short answer.
				n, want := 0, uint64(1)
				for rec, err := range r.Messages(c, 0, !bounded) {
					if n++; n%256 == 0 {
						if err := ctx.Err(); err != nil {
							return fmt.Errorf("lossless: grep: %w", err)
						}
					}
					if err != nil {
						return fmt.Errorf("lossless: grep: %w", err)
					}
					if rec.Seq != want {
						return fmt.Errorf("lossless: grep: %w", records.MissingErr(c, "", want, rec.Seq-1))
					}
					want++
					if !inTime(rec.Timestamp) {
						continue
					}
					if bounded {
						if rec, err = records.GetMsg(r, c, rec.Seq); err != nil {
							return err
						}
					}
					if h, ok := m.MessageHit(c, rec); ok {
						hits = append(hits, h)
					}
				}
				if conv.NextSeq > want {
					return fmt.Errorf("lossless: grep: %w", records.MissingErr(c, "", want, conv.NextSeq-1))
				}
			}
			// The summaries are read for their hits, and for the leaf
			// covering each message hit (CoveredBy).
			summaries := p.Kind == "" || p.Kind == "summary"
			if !summaries && len(hits) == first {
				return nil
			}
			hitOf := make(map[uint64]int, len(hits)-first) // seq -> its hit
			for i := first; i < len(hits); i++ {
				hitOf[hits[i].Seq] = i
			}
			coverSize := map[int]int{} // hit -> its cover's sources
			for s, err := range r.Summaries(c) {
				if err != nil {
					// A summary that does not decode (ErrCorrupt, naming
					// it) fails the search: never fewer hits as if they
					// were all, nor a hit without its cover.
					return fmt.Errorf("lossless: grep: %w", records.FromStore(err))
				}
				if s.Depth == 0 && len(hitOf) > 0 {
					for _, src := range s.Sources {
						i, ok := hitOf[src.Seq]
						if !ok || src.Kind != dag.RefMessage {
							continue
						}
						if n, seen := coverSize[i]; !seen || len(s.Sources) < n {
							hits[i].CoveredBy, coverSize[i] = s.ID, len(s.Sources)
						}
					}
				}
				if !summaries || !inTime(s.Latest) {
					continue
				}
				if h, ok := m.SummaryHit(c, s); ok {
					hits = append(hits, h)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if p.Sort == SortRecency || hits[i].Score == hits[j].Score {
			return hits[i].Timestamp > hits[j].Timestamp
		}
		return hits[i].Score > hits[j].Score
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}
