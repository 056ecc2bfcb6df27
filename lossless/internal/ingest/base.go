package ingest

import (
	"fmt"

	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// CheckBase refuses, within the transaction tx of a write to conversation
// c, a write based on record base (read under the conversation's lock):
//
//   - on a shared store (shared), when the stored record is no longer base
//     (ErrConcurrentWrite): the write would reuse the sequence numbers and
//     positions another process's late commit took, overwriting its
//     messages;
//   - on any store, when base disagrees with what is stored beyond it
//     (records.CheckNext: a message at its next sequence number, an item
//     at its next position, a summary while it counts none; an error
//     wrapping store.ErrCorrupt): base is older than what is stored.
//
// Called first in the Update, it reads within the transaction's snapshot,
// so a commit that lands later conflicts with the Update's own write of
// the record instead. Shared, the record and the message are read in one
// Reader.Get (one round trip on pgstore). The item at base's next position
// is one point read more, and the summaries one seek when base counts
// none.
func CheckBase(tx store.Tx, c store.ConvID, base store.Conversation, shared bool) error {
	if !shared {
		return records.CheckNext(tx, c, base)
	}
	got, err := tx.Get([]store.Ref{{Kind: store.RefConversation, Conv: c}, {Kind: store.RefMessage, Conv: c, Seq: base.NextSeq}})
	if err != nil {
		return fmt.Errorf("lossless: conversation %s: %w", c, err)
	}
	if err := got[0].Err; err != nil {
		return records.FromStore(err)
	}
	if cur := got[0].Conversation; cur.NextSeq != base.NextSeq || cur.NextPos != base.NextPos || cur.Messages != base.Messages {
		return fmt.Errorf("lossless: conversation %s: next message %d, position %d in the store, %d and %d when read under its lock: %w (retry the call)",
			c, cur.NextSeq, cur.NextPos, base.NextSeq, base.NextPos, ErrConcurrentWrite)
	}
	if err := records.NextErr(c, base, got[1].Message, got[1].Err); err != nil {
		return err
	}
	return records.CheckBeyond(tx, c, base)
}
