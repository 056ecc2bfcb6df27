package dag

import (
	"context"
)

// MessageMeta is the stored metadata of one raw message: what the DAG
// algorithms need besides its text.
type MessageMeta struct {
	Seq       uint64 `json:"seq"`
	Tokens    int    `json:"tokens"`
	Timestamp int64  `json:"timestamp"`
	Role      string `json:"role,omitempty"`
}

// MessageMetaReader is implemented by a Store that can return the metadata of
// any raw message, including messages no longer in the active context. Check
// uses it to verify leaf roll-ups (DescendantTokens, Earliest, Latest) and
// Expand to page by token counts. Stores should implement it; without it,
// Check skips those comparisons and Expand estimates tokens with core.Chars4.
type MessageMetaReader interface {
	MessageMeta(ctx context.Context, seq uint64) (MessageMeta, error)
}
