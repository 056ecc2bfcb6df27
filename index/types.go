package index

import (
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/internal/lru"
)

// Kinds of indexed documents.
const (
	KindMessage = "message"
	KindSummary = "summary"
)

// FormatVersion is the version of the index layout (mapping, analyzers,
// fields). An index written with an older version is rebuilt; one written by
// a newer version is refused with core.ErrFormatTooNew.
const FormatVersion = 5 // 5: whole-identifier tokens from package ident (dashed words and non-ASCII chunks by their words only)

// Doc is one indexed message or summary.
type Doc struct {
	// ID is the store's id of the message or summary (unique in the index).
	ID string
	// Agent scopes recall: a search never returns docs of another agent.
	Agent string
	// Conversation groups sessions (a session key, a thread); may be empty.
	Conversation string
	// Session is the session id.
	Session string
	// Role is the message role ("user", "assistant", "toolResult", ...);
	// for summaries, "summary".
	Role string
	// Kind is KindMessage or KindSummary.
	Kind string
	// Seq is the position of the message in its session (increasing in
	// session order; gaps allowed). Neighbours are found by Seq.
	Seq uint64
	// Timestamp is the message time in Unix milliseconds.
	Timestamp int64
	// Text is the searchable text (core.Message.SearchText for messages).
	Text string
	// Context is text indexed with a lower weight to make the doc findable
	// by what surrounds it (not stored, not returned). When empty, the text
	// of the previous doc of the same session (in Add order) is used.
	Context string
}

// Hit is a search result: the doc's fields and its score.
type Hit struct {
	Doc
	// Score is the relevance score (higher is better; 0 for neighbours added
	// by Recall).
	Score float64
	// NeighbourOf is set on turns that Recall added as context of a hit: the
	// id of that hit.
	NeighbourOf string
	// Relevance is what the relevance gate measures (see Relevance); set
	// by Recall. A neighbour carries the relevance of the hit it was added
	// for.
	Relevance Relevance

	hash uint64 // textKey of the text (stored), for de-duplication
}

// Query is a full-text search. Text is plain text (a prompt), never query
// syntax: it is analyzed like the indexed text and its terms are OR-ed.
type Query struct {
	// Agent restricts the search to one agent's docs (required unless
	// AllAgents).
	Agent string
	// AllAgents searches every agent (tools that are configured to cross
	// agents; recall never sets it).
	AllAgents bool
	// Text is the query text.
	Text string
	// Conversations, when set, restricts to these conversations.
	Conversations []string
	// ExcludeConversation leaves one conversation out.
	ExcludeConversation string
	// Sessions, when set, restricts to these sessions.
	Sessions []string
	// ExcludeSessions leaves these sessions out.
	ExcludeSessions []string
	// Kind, when set, restricts to KindMessage or KindSummary.
	Kind string
	// Since and Until, when non-zero, bound Timestamp (inclusive, ms).
	Since, Until int64
	// Spans, when set, restricts Timestamp to any of these spans.
	Spans []TimeSpan
	// K is the number of hits wanted (default 10).
	K int
	// WaitForLag makes the search wait until everything added before it is
	// searchable (bounded by the context); otherwise docs still in the queue
	// are not found (see Lag).
	WaitForLag bool
}

// turnMemory remembers the last turn of each session, indexed as the
// context of the next (see Doc.Context). It is bounded in bytes (an LRU of
// maxPrevBytes): a gateway meets new sessions and subagents for as long as
// it runs, and the sessions gone idle are forgotten first. What it keeps is
// a copy of the clipped text, never a slice of the doc's text (which would
// keep all of it alive: a tool output of megabytes for 400 bytes).
type turnMemory struct{ m *lru.Cache[string, string] }

// context returns the context indexed with d (d.Context, else the
// remembered previous turn of its session) and remembers d's text.
func (t *turnMemory) context(d *Doc) string {
	key := d.Agent + "\x00" + d.Session
	cx := d.Context
	if cx == "" {
		cx, _ = t.get(key)
	}
	if d.Kind != KindSummary {
		if t.m == nil {
			t.m = lru.New(maxPrevBytes, 1, func(k, v string) int { return len(k) + len(v) + lru.EntryOverhead })
		}
		t.m.Add(key, strings.Clone(clip(d.Text, maxCtxBytes)))
	}
	return cx
}

// get returns the remembered previous turn of the session key.
func (t *turnMemory) get(key string) (string, bool) {
	if t.m == nil {
		return "", false
	}
	return t.m.Get(key)
}

// bytes returns what the memory holds, as its bound counts it.
func (t *turnMemory) bytes() int {
	if t.m == nil {
		return 0
	}
	return t.m.Bytes()
}

// maxCtxBytes caps the previous turn's text indexed as context: enough for
// a chat turn; a long tool output as context only adds noise and cost.
const maxCtxBytes = 400

// maxPrevBytes bounds the memory of previous turns: about 7,000 sessions
// at maxCtxBytes each (more with shorter turns). A session forgotten
// indexes its next turn without the previous one as context (the caller
// may look it up: TurnMemory.Remembers).
const maxPrevBytes = 4 << 20

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
