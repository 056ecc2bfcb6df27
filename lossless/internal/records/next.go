package records

import (
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/store"
)

// CheckNext refuses a write onto conversation c's record rec when a
// message is stored at rec.NextSeq, the sequence number the write would
// give its first new message: rec is then older than the messages stored
// (issue 37: a damaged table can bring an older version of the record
// back), and writing on it would overwrite or shadow stored messages. The
// error wraps store.ErrCorrupt. It costs one point read (the message's
// header), made in the write's transaction so that what it checks is what
// the write commits onto.
func CheckNext(r store.Reader, c store.ConvID, rec store.Conversation) error {
	m, err := r.MessageHeader(c, rec.NextSeq)
	return NextErr(c, rec, m, err)
}

// NextErr is CheckNext's verdict given the read of message rec.NextSeq of
// c: m, or err (nil when the message was read).
func NextErr(c store.ConvID, rec store.Conversation, m store.Message, err error) error {
	var found string
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err == nil:
		found = fmt.Sprintf("message %d (%s, %d tokens) is stored there", rec.NextSeq, m.Role, m.Tokens)
	case errors.Is(err, store.ErrCorrupt):
		found = fmt.Sprintf("a record that does not decode is stored there as message %d (%v)", rec.NextSeq, err)
	default:
		return fmt.Errorf("lossless: conversation %s: read message %d: %w", c, rec.NextSeq, err)
	}
	return fmt.Errorf("lossless: conversation %s: its record (next seq %d, %d messages) is older than the messages stored: %s; the write is refused and nothing is stored (a damaged store: run lossless doctor --deep): %w",
		c, rec.NextSeq, rec.Messages, found, store.ErrCorrupt)
}
