package records

import (
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/store"
)

// CheckNext refuses a write onto conversation c's record rec when the
// record disagrees with what is stored beyond it, which a point read or
// a single seek can tell (issue 37: a damaged table can bring an older
// version of the record back, and writing on it would overwrite or
// shadow what is stored, or roll a compaction back for good):
//
//   - a message is stored at rec.NextSeq, the sequence number the write
//     would give its first new message (one point read: its header);
//   - a context item is stored at rec.NextPos, the position the write
//     would give its first new item (one point read);
//   - rec counts no summary and a summary of c is stored (one seek, made
//     only when rec counts none: a record older than the conversation's
//     first compaction).
//
// The error wraps store.ErrCorrupt, names the conversation and what
// disagrees. The reads are made in the write's transaction, so that what
// they check is what the write commits onto. A record that counts fewer
// summaries than are stored but more than none is not found here
// (counting them reads every summary): lossless doctor --deep finds it.
func CheckNext(r store.Reader, c store.ConvID, rec store.Conversation) error {
	m, err := r.MessageHeader(c, rec.NextSeq)
	if err := NextErr(c, rec, m, err); err != nil {
		return err
	}
	return CheckBeyond(r, c, rec)
}

// NextErr is CheckNext's verdict on the message at rec.NextSeq given its
// read: m, or err (nil when the message was read).
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

// CheckBeyond is CheckNext's checks other than the message at
// rec.NextSeq: no context item at rec.NextPos, and no summary stored when
// rec counts none.
func CheckBeyond(r store.Reader, c store.ConvID, rec store.Conversation) error {
	it, err := r.Item(c, rec.NextPos)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err == nil:
		return staleErr(c, rec, fmt.Sprintf("a context item (%s) is stored at its next position %d", refText(it), rec.NextPos))
	case errors.Is(err, store.ErrCorrupt):
		return staleErr(c, rec, fmt.Sprintf("a record that does not decode is stored at its next position %d (%v)", rec.NextPos, err))
	default:
		return fmt.Errorf("lossless: conversation %s: read context item %d: %w", c, rec.NextPos, err)
	}
	if rec.Summaries != 0 {
		return nil
	}
	for s, err := range r.Summaries(c) {
		switch {
		case err == nil:
			return staleErr(c, rec, fmt.Sprintf("it counts no summary, and summary %s (depth %d, %d messages) is stored", s.ID, s.Depth, s.DescendantCount))
		case errors.Is(err, store.ErrCorrupt):
			return staleErr(c, rec, fmt.Sprintf("it counts no summary, and a summary record that does not decode is stored (%v)", err))
		default:
			return fmt.Errorf("lossless: conversation %s: read summaries: %w", c, err)
		}
	}
	return nil
}

// staleErr is the error of a write refused because c's record rec is
// older than what is stored (found).
func staleErr(c store.ConvID, rec store.Conversation, found string) error {
	return fmt.Errorf("lossless: conversation %s: its record (next seq %d, next position %d, %d messages, %d summaries) is older than what is stored: %s; the write is refused and nothing is stored (a damaged store: run lossless doctor --deep): %w",
		c, rec.NextSeq, rec.NextPos, rec.Messages, rec.Summaries, found, store.ErrCorrupt)
}

// refText names the record item it refers to.
func refText(it store.Item) string {
	if it.IsSummary() {
		return "summary " + it.Ref.ID
	}
	return fmt.Sprintf("message %d", it.Ref.Seq)
}
