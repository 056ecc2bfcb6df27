package index

import "unicode/utf8"

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
// context of the next (see Doc.Context).
type turnMemory struct{ m map[string]string }

// context returns the context indexed with d (d.Context, else the
// remembered previous turn of its session) and remembers d's text.
func (t *turnMemory) context(d *Doc) string {
	key := d.Agent + "\x00" + d.Session
	cx := d.Context
	if cx == "" {
		cx = t.m[key]
	}
	if d.Kind != KindSummary {
		if t.m == nil || len(t.m) >= maxPrevSessions {
			t.m = make(map[string]string) // bounded memory; only context is lost
		}
		t.m[key] = clip(d.Text, maxCtxBytes)
	}
	return cx
}

// maxCtxBytes caps the previous turn's text indexed as context: enough for
// a chat turn; a long tool output as context only adds noise and cost.
const maxCtxBytes = 400

// maxPrevSessions bounds the sessions whose last turn is remembered for
// the next turn's context.
const maxPrevSessions = 50_000

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
