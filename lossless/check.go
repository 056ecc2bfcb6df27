package lossless

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
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
	Conversations int            `json:"conversations"`
	Messages      int64          `json:"messages"`
	Deep          bool           `json:"deep"`
	Problems      []CheckProblem `json:"problems"`
}

// Check verifies the store's invariants, reading only: for every
// conversation, the summary DAG (dag.Check: items cover every message once,
// in order; summaries and their sources consistent; every referenced
// message and summary present). With deep, every message record is also
// read, decoded and checked for continuity (a corrupt block, a missing
// range, a record that does not decode), which reads the whole store. It
// changes nothing: no index rebuild, no retention pass.
func (e *Engine) Check(ctx context.Context, deep bool) (CheckResult, error) {
	res := CheckResult{Deep: deep, Problems: []CheckProblem{}}
	infos, err := e.Sessions(ctx, "")
	if err != nil {
		return res, err
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
		c, ok := parseConvID(in.ID)
		if !ok {
			report(fmt.Errorf("conversation id %q does not parse: %w", in.ID, ErrCorrupt))
			continue
		}
		if in.Retiring {
			// Not corruption: a deletion to finish (ErrRetiring).
			report(retiringErr(c, sid))
			continue
		}
		conv := &Conversation{e: e, id: c, Agent: in.Agent}
		var seqs []uint64 // in transcript order (reconcile.go)
		err := e.st.View(ctx, func(r store.Reader) error {
			var err error
			seqs, err = orderedSeqs(r, c, in.Messages)
			return err
		})
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return res, err
			}
			report(err)
			continue
		}
		if err := dag.Check(ctx, conv, seqs); err != nil {
			if errors.Is(err, context.Canceled) {
				return res, err
			}
			report(err)
		}
		if deep && sid != "" {
			n := int64(0)
			err := e.Messages(ctx, in.Agent, sid, func(uint64, core.Message) error { n++; return nil })
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
