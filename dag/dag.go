// Package dag is the summary DAG of the lossless engine: leaf summaries over
// contiguous runs of raw messages, condensed summaries over contiguous runs of
// summaries of one depth, and the ordered context items (a raw message or a
// summary at each sparse position) that the model sees.
//
// The package is storage-agnostic: it defines the records, the Store
// interface a backend implements (package lossless's *Conversation
// implements it over its store.Store, Badger or PostgreSQL; Memory
// implements it in memory for tests), the planning and compaction
// algorithms, expansion back to raw messages, and Check, which verifies the
// invariants after every operation.
package dag

import (
	"context"
)

// RefKind says what a Ref points at.
type RefKind uint8

// Ref kinds.
const (
	RefMessage RefKind = 1 // a raw message, by sequence number in its conversation
	RefSummary RefKind = 2 // a summary, by id
)

// Ref points at a raw message or a summary.
type Ref struct {
	Kind RefKind `json:"kind"`
	// Seq is the message's sequence number in its conversation (RefMessage).
	Seq uint64 `json:"seq,omitempty"`
	// ID is the summary id (RefSummary).
	ID string `json:"id,omitempty"`
}

// MessageRef returns a Ref to message seq.
func MessageRef(seq uint64) Ref { return Ref{Kind: RefMessage, Seq: seq} }

// SummaryRef returns a Ref to summary id.
func SummaryRef(id string) Ref { return Ref{Kind: RefSummary, ID: id} }

// Summary kinds.
const (
	KindLeaf      = "leaf"
	KindCondensed = "condensed"
)

// Summary is one node of the DAG.
type Summary struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // KindLeaf or KindCondensed
	// Depth is 0 for a leaf, 1 + the sources' depth for a condensed summary.
	Depth int `json:"depth"`
	// Sources are the covered items in order: raw messages for a leaf,
	// summaries of depth Depth-1 for a condensed summary.
	Sources []Ref  `json:"sources"`
	Text    string `json:"text"`
	// Tokens is the token count of Text (as rendered for the model).
	Tokens int `json:"tokens"`
	// Earliest and Latest are the Unix-millisecond timestamps of the first
	// and last raw message covered.
	Earliest int64 `json:"earliest"`
	Latest   int64 `json:"latest"`
	// DescendantCount is the number of raw messages covered, and
	// DescendantTokens their token total.
	DescendantCount  int `json:"descendantCount"`
	DescendantTokens int `json:"descendantTokens"`
	// CreatedAt is when the summary was made (Unix ms).
	CreatedAt int64 `json:"createdAt"`
	// Method records how the text was made: MethodNormal, MethodAggressive,
	// MethodTruncate (deterministic), MethodRefused (the model's summary
	// was refused) or MethodImported (a transcript compaction).
	Method string `json:"method,omitempty"`
	// Refused says why the model's summary was refused (MethodRefused):
	// what the summary check found wrong with its last answer.
	Refused string `json:"refused,omitempty"`
}

// Summary methods (Summary.Method).
const (
	// MethodNormal: the summarizer's text at the first attempt.
	MethodNormal = "normal"
	// MethodAggressive: the summarizer's text at the aggressive retry
	// (the first was too long): a fallback.
	MethodAggressive = "aggressive"
	// MethodTruncate: the input cut to the target, deterministic (the
	// summarizer failed or stayed too long): the last fallback.
	MethodTruncate = "truncate"
	// MethodRefused: the model's answer was no summary (empty, a canned
	// reply, not shorter than its sources, their identifiers lost), again
	// at the stricter retry, and the summarizer's fallback (the extractive
	// summarizer) wrote the text: a fallback. Summary.Refused says why.
	MethodRefused = "refused"
	// MethodImported: a compaction entry of an imported transcript.
	MethodImported = "imported"
)

// Item is one position of a conversation's active context.
type Item struct {
	// Pos is the sparse position key. Positions only grow along the
	// context; replacing a range by a summary puts it at the range's first
	// position and never renumbers the rest.
	Pos uint64 `json:"pos"`
	Ref Ref    `json:"ref"`
	// Tokens is the item's stored token count (the message's count, or the
	// summary's rendered count).
	Tokens int `json:"tokens"`
	// Depth is the summary's depth, or -1 for a raw message.
	Depth int `json:"depth"`
	// Timestamp is the message's timestamp or the summary's Latest.
	Timestamp int64 `json:"timestamp"`
	// Role is the raw message's role ("" for a summary). Planning uses it to
	// find user turns and tool results.
	Role string `json:"role,omitempty"`
}

// IsSummary reports whether the item is a summary.
func (it Item) IsSummary() bool { return it.Ref.Kind == RefSummary }

// Store is what a backend provides to the DAG algorithms, for one
// conversation (the conversation is bound when the Store is obtained).
// Implementations must be safe for concurrent use; Replace must be atomic.
type Store interface {
	// Items returns the conversation's context items in position order.
	Items(ctx context.Context) ([]Item, error)
	// MessageText returns the text of raw message seq as the summarizer
	// should see it (role and content rendered as plain text).
	MessageText(ctx context.Context, seq uint64) (string, error)
	// Summary returns summary id.
	Summary(ctx context.Context, id string) (Summary, error)
	// Replace atomically removes the items at positions old (which must
	// still be exactly those items, else ErrConflict) and stores s with an
	// item for it at position old[0].
	Replace(ctx context.Context, old []Item, s Summary, item Item) error
}
