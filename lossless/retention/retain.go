package retention

import (
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

// Candidate is a conversation a pass deletes, with its record as the pass
// read it and the reason.
type Candidate struct {
	ID  store.ConvID
	Rec store.Conversation
	// Reason is DeletedConversation.Reason.
	Reason string
}

// Add counts candidate c, deleted (or, in a dry run, to be deleted), in
// r.
func (r *Result) Add(c Candidate) {
	session := c.Rec.Key
	if session == "" && len(c.Rec.SessionIDs) > 0 {
		session = c.Rec.SessionIDs[len(c.Rec.SessionIDs)-1]
	}
	r.Deleted = append(r.Deleted, DeletedConversation{Agent: c.Rec.Agent, ID: c.ID.String(), Session: session, Reason: c.Reason})
	r.Messages += c.Rec.Messages
	r.Bytes += c.Rec.Bytes
}

// Plan reads r and returns the conversations a pass at now with limits
// deletes, in the order it deletes them:
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
// With Options.InterruptedOnly, only the last. Options.DryRun changes
// nothing here: Plan never writes. Deleting a candidate is the caller's
// (Recheck, DeleteData, DeleteRecord, under the conversation's locks); a
// candidate the caller finds changed since (ErrChanged) or gone (ErrGone)
// is skipped, and the size limit counts it deleted all the same.
func Plan(r store.Reader, limits Limits, now time.Time, o Options) ([]Candidate, error) {
	type conv struct {
		id  store.ConvID
		rec store.Conversation
		// last is the time of the last message (records.MessageTimes),
		// else rec.Updated.
		last int64
	}
	var convs []conv
	mapped := map[store.ConvID]bool{}
	for cr, err := range r.Conversations() {
		if err != nil {
			if errors.Is(err, store.ErrCorrupt) {
				return nil, fmt.Errorf("%w: conversation: %w", records.ErrBadRecord, err)
			}
			return nil, records.FromStore(err)
		}
		c := conv{id: cr.ID, rec: cr.Conversation}
		_, last, err := records.MessageTimes(r, c.id, c.rec)
		if err != nil {
			return nil, err
		}
		c.last = last
		if c.last < plausibleSince || c.last > c.rec.Updated+24*3600*1000 {
			// No timestamp, or one no message of this store can have
			// (seconds taken for milliseconds, a clock far ahead).
			c.last = c.rec.Updated
		}
		convs = append(convs, c)
	}
	// A name that does not decode fails the pass: skipping it could take
	// its conversation for an orphan.
	for n, err := range r.Names() {
		if err != nil {
			return nil, fmt.Errorf("lossless: retain: %w", records.FromStore(err))
		}
		mapped[n.Conv] = true
	}
	var plan []Candidate
	del := func(c conv, reason string) {
		plan = append(plan, Candidate{ID: c.id, Rec: c.rec, Reason: reason})
	}
	nowMs := now.UnixMilli()
	maxAge := int64(limits.MaxAgeDays) * 24 * 3600 * 1000
	var kept []conv
	for _, c := range convs {
		switch {
		case c.rec.Retiring:
			del(c, "interrupted") // a pass stopped midway: finish it
		case o.InterruptedOnly:
		case !mapped[c.id]:
			del(c, "orphan")
		case c.rec.Messages == 0 && nowMs-c.rec.Created > 24*3600*1000:
			del(c, "orphan")
		case maxAge > 0 && nowMs-c.last > maxAge:
			del(c, "age")
		default:
			kept = append(kept, c)
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
				del(cs[i], "size")
				total -= cs[i].rec.Bytes
			}
		}
	}
	return plan, nil
}
