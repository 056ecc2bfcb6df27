package inspect

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// CheckProblem is one thing Check found wrong in one conversation.
type CheckProblem struct {
	Agent        string `json:"agent"`
	Conversation string `json:"conversation"`
	SessionID    string `json:"sessionId,omitempty"`
	Problem      string `json:"problem"`
}

// CheckResult is what Check read and found.
type CheckResult struct {
	Conversations int   `json:"conversations"`
	Messages      int64 `json:"messages"`
	// Records is the number of records other than messages read (and
	// verified against their checksums, in a store that has them).
	Records  int64          `json:"records"`
	Deep     bool           `json:"deep"`
	Problems []CheckProblem `json:"problems"`
	// NotRead names what the check did not read: a damage there is not
	// found (message bodies without deep).
	NotRead []string `json:"notRead,omitempty"`
}

// What a check without deep leaves unread (CheckResult.NotRead).
var checkNotRead = []string{
	"message records (bodies and headers: run with --deep)",
	"the message key index, entry maps and large references (one per message; read with the messages they map)",
	"committed turns (read by their key when a turn is committed again)",
}

// Check verifies the store's invariants, reading only: for every
// conversation, the summary DAG (dag.Check: items cover every message once,
// in order; summaries and their sources consistent; every referenced
// message and summary present), and its record against what is stored
// (checkAgreement: nothing stored beyond its next seq and position, its
// summary counts, every summary's sources stored and every summary
// reached from the context: a conversation rolled back to before a
// compaction is found). With deep, every message record is also
// read, decoded and checked for continuity (a corrupt block, a missing
// range, a record that does not decode, the record's count), which reads
// the whole store.
// Without deep, the records that are not one per message (summaries,
// items, order records, host entries, links, names, checkpoints,
// subagents and fork snapshots) are each read and checked as well, and
// CheckResult.NotRead says what was not read. It changes nothing: no
// index rebuild, no retention pass. st is read in several snapshots, one
// per step; the caller keeps it open throughout.
func Check(ctx context.Context, st store.Store, deep bool) (CheckResult, error) {
	res := CheckResult{Deep: deep, Problems: []CheckProblem{}}
	if !deep {
		res.NotRead = checkNotRead
	} else {
		res.NotRead = checkNotRead[1:]
	}
	infos, err := Sessions(ctx, st, "")
	if err != nil {
		return res, err
	}
	// The store-wide records (names, checkpoints, subagents and their
	// fork snapshots): small, each read and checked.
	if err := st.View(ctx, func(r store.Reader) error { return checkGlobal(r, &res) }); err != nil {
		if errors.Is(err, context.Canceled) {
			return res, err
		}
		res.Problems = append(res.Problems, CheckProblem{Problem: err.Error()})
	}
	for _, in := range infos {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("lossless: check: %w", err)
		}
		res.Conversations++
		sid := ""
		if len(in.SessionIDs) > 0 {
			sid = in.SessionIDs[len(in.SessionIDs)-1]
		}
		report := func(err error) {
			res.Problems = append(res.Problems, CheckProblem{Agent: in.Agent, Conversation: in.ID, SessionID: sid, Problem: err.Error()})
		}
		c, ok := records.ParseConvID(in.ID)
		if !ok {
			report(fmt.Errorf("conversation id %q does not parse: %w", in.ID, store.ErrCorrupt))
			continue
		}
		if in.Retiring {
			// Not corruption: a deletion to finish (ErrRetiring).
			report(records.RetiringErr(c, sid))
			continue
		}
		var seqs []uint64 // in transcript order (lossless/transcript's reconcile.go)
		err := st.View(ctx, func(r store.Reader) error {
			var err error
			seqs, err = records.OrderedSeqs(r, c, in.Messages)
			return err
		})
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return res, err
			}
			report(err)
			continue
		}
		if err := dag.Check(ctx, records.ReadOnlyDAG{St: st, ID: c}, seqs); err != nil {
			if errors.Is(err, context.Canceled) {
				return res, err
			}
			report(err)
		}
		// Every summary (those no item refers to as well), item, order
		// record, host entry and subagent link: small records, each read;
		// the record cross-checked with the messages, items and summaries
		// stored (checkAgreement).
		var disagree []string
		err = st.View(ctx, func(r store.Reader) error {
			rec, err := r.Conversation(c)
			if err != nil {
				return fmt.Errorf("lossless: check: conversation %s: %w", c, records.FromStore(err))
			}
			if disagree, err = checkAgreement(r, c, rec, deep, &res); err != nil {
				return err
			}
			return checkConvRecords(r, c, &res)
		})
		for _, d := range disagree {
			report(errors.New(d))
		}
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return res, err
			}
			report(err)
		}
		if deep && sid != "" {
			n := int64(0)
			// The session's conversation as a call resolves it (the names
			// records), which a damaged store may map elsewhere.
			err := st.View(ctx, func(r store.Reader) error {
				var err error
				c, err = records.LookupName(r, in.Agent, sid, "")
				return err
			})
			if err == nil {
				err = Messages(ctx, st, c, sid, func(uint64, core.Message) error { n++; return nil })
			}
			res.Messages += n
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return res, err
				}
				report(err)
			}
		} else {
			res.Messages += in.Messages
		}
	}
	return res, nil
}

// drain reads every element of seq, counting them in *n: the first error
// is returned.
func drain[T any](seq iter.Seq2[T, error], n *int64) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
		*n++
	}
	return nil
}

// checkConvRecords reads conversation c's order records, host entries
// and subagent links (with its summaries and items, which checkAgreement
// reads: the records that are not one per message), so that a record
// that does not decode or fails its checksum is found without reading the
// messages.
func checkConvRecords(r store.Reader, c store.ConvID, res *CheckResult) error {
	for _, seq := range []func() error{
		func() error { return drain(r.Orders(c), &res.Records) },
		func() error { return drain(r.HostEntries(c, 0), &res.Records) },
		func() error { return drain(r.SubagentLinks(c), &res.Records) },
	} {
		if err := seq(); err != nil {
			return fmt.Errorf("lossless: check: %w", err)
		}
	}
	return nil
}

// checkGlobal reads the records that belong to no one conversation:
// names, checkpoints, subagents and their fork snapshots.
func checkGlobal(r store.Reader, res *CheckResult) error {
	var subs []store.SubID
	for s, err := range r.Subagents() {
		if err != nil {
			return fmt.Errorf("lossless: check: %w", err)
		}
		res.Records++
		subs = append(subs, s.ID)
	}
	if err := drain(r.Names(), &res.Records); err != nil {
		return fmt.Errorf("lossless: check: %w", err)
	}
	if err := drain(r.Checkpoints(), &res.Records); err != nil {
		return fmt.Errorf("lossless: check: %w", err)
	}
	for _, s := range subs {
		if err := drain(r.ForkItems(s), &res.Records); err != nil {
			return fmt.Errorf("lossless: check: %w", err)
		}
	}
	return nil
}
