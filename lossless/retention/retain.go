package retention

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Result reports one retention pass.
type Result struct {
	// Deleted lists the deleted conversations (hex ids) with the reason:
	// "age", "size", "orphan", or "interrupted" (one a stopped pass had
	// begun to delete).
	Deleted []DeletedConversation `json:"deleted,omitempty"`
	// Messages and Bytes are the totals of the deleted conversations.
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
}

// DeletedConversation is one conversation removed by a pass.
type DeletedConversation struct {
	Agent string `json:"agent"`
	ID    string `json:"id"`
	// Session names it as the user knows it: its session key, else its
	// latest session id ("" for an orphan without either).
	Session string `json:"session,omitempty"`
	Reason  string `json:"reason"`
}

// Options choose what a pass does.
type Options struct {
	// DryRun reports what the pass would delete, deleting nothing.
	DryRun bool
	// InterruptedOnly only finishes the deletions a stopped pass began
	// (whatever the limits).
	InterruptedOnly bool
}

// plausibleSince (2000-01-01, Unix ms) is the earliest message timestamp
// retention believes: an earlier one (seconds sent as milliseconds, a test's
// small number) ages the conversation by its last write instead.
const plausibleSince = 946_684_800_000

// Retain runs one pass at now (time.Now() when zero) with p's limits
// (both off by default), deleting:
//   - age: conversations whose last message is older than
//     Limits.MaxAgeDays, by the message's own timestamp (an imported
//     history ages from when it took place, not from its import); by the
//     conversation's last write when that message has no timestamp or an
//     implausible one (before 2000, or a day after the write);
//   - size: an agent's conversations with the oldest last message (same
//     time) while the agent's stored bytes exceed Limits.MaxBytesPerAgent
//     (never its most recent one);
//   - orphan: conversations no session id or key maps to any more, and
//     empty conversations (no message) older than a day;
//   - interrupted: conversations a stopped pass began to delete
//     (Retiring), whatever the limits.
//
// Deleting a conversation (Delete) removes its messages, items, summaries,
// session mappings and import checkpoints, in batches, under the
// conversation's lock; a crash midway leaves a conversation that the next
// pass finishes deleting.
func Retain(ctx context.Context, p Port, now time.Time, o Options) (Result, error) {
	done, err := p.Enter()
	if err != nil {
		return Result{}, err
	}
	defer done()
	if now.IsZero() {
		now = time.Now()
	}
	type conv struct {
		id  store.ConvID
		rec store.Conversation
		// last is the time of the last message (messageTimes), else
		// rec.Updated.
		last int64
	}
	var convs []conv
	mapped := map[store.ConvID]bool{}
	err = p.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				if errors.Is(err, store.ErrCorrupt) {
					return fmt.Errorf("%w: conversation: %w", records.ErrBadRecord, err)
				}
				return records.FromStore(err)
			}
			c := conv{id: cr.ID, rec: cr.Conversation}
			_, last, err := p.MessageTimes(r, c.id, c.rec)
			if err != nil {
				return err
			}
			c.last = last
			if c.last < plausibleSince || c.last > c.rec.Updated+24*3600*1000 {
				// No timestamp, or one no message of this store can have
				// (seconds taken for milliseconds, a clock far ahead).
				c.last = c.rec.Updated
			}
			convs = append(convs, c)
		}
		// A name that does not decode fails the pass: skipping it could
		// take its conversation for an orphan.
		for n, err := range r.Names() {
			if err != nil {
				return fmt.Errorf("lossless: retain: %w", records.FromStore(err))
			}
			mapped[n.Conv] = true
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	var res Result
	del := func(c conv, reason string) error {
		if !o.DryRun {
			p.BeforeDelete()
			if err := Delete(ctx, p, c.id, c.rec.Updated); err != nil {
				if errors.Is(err, errConvChanged) || errors.Is(err, errConvGone) {
					return nil // written to since the decision, or deleted by another pass
				}
				return err
			}
		}
		session := c.rec.Key
		if session == "" && len(c.rec.SessionIDs) > 0 {
			session = c.rec.SessionIDs[len(c.rec.SessionIDs)-1]
		}
		res.Deleted = append(res.Deleted, DeletedConversation{Agent: c.rec.Agent, ID: c.id.String(), Session: session, Reason: reason})
		res.Messages += c.rec.Messages
		res.Bytes += c.rec.Bytes
		return nil
	}
	limits := p.Limits()
	nowMs := now.UnixMilli()
	maxAge := int64(limits.MaxAgeDays) * 24 * 3600 * 1000
	var kept []conv
	for _, c := range convs {
		switch {
		case c.rec.Retiring:
			err = del(c, "interrupted") // a pass stopped midway: finish it
		case o.InterruptedOnly:
		case !mapped[c.id]:
			err = del(c, "orphan")
		case c.rec.Messages == 0 && nowMs-c.rec.Created > 24*3600*1000:
			err = del(c, "orphan")
		case maxAge > 0 && nowMs-c.last > maxAge:
			err = del(c, "age")
		default:
			kept = append(kept, c)
		}
		if err != nil {
			return res, err
		}
	}
	if limit := limits.MaxBytesPerAgent; limit > 0 && !o.InterruptedOnly {
		byAgent := map[string][]conv{}
		for _, c := range kept {
			byAgent[c.rec.Agent] = append(byAgent[c.rec.Agent], c)
		}
		agents := make([]string, 0, len(byAgent))
		for a := range byAgent {
			agents = append(agents, a)
		}
		sort.Strings(agents)
		for _, a := range agents {
			cs := byAgent[a]
			var total int64
			for _, c := range cs {
				total += c.rec.Bytes
			}
			sort.Slice(cs, func(i, j int) bool { return cs[i].last < cs[j].last })
			// Never delete the agent's most recent conversation.
			for i := 0; total > limit && i < len(cs)-1; i++ {
				if err := del(cs[i], "size"); err != nil {
					return res, err
				}
				total -= cs[i].rec.Bytes
			}
		}
	}
	return res, nil
}

// AnyRetiring reports whether a conversation is marked Retiring (a stopped
// retention pass left it partly deleted).
func AnyRetiring(ctx context.Context, p Port) (bool, error) {
	found := false
	err := p.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			if cr.Retiring {
				found = true
				break
			}
		}
		return nil
	})
	return found, err
}
