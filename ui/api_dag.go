package ui

import (
	"context"
	"net/http"
	"strconv"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/explore"
)

// summaryItem is a summary as the DAG view lists it (Text only in
// /api/summary).
type summaryItem struct {
	Kind        string `json:"kind"`
	ID          string `json:"id"`
	SummaryKind string `json:"summaryKind"`
	Depth       int    `json:"depth"`
	Method      string `json:"method,omitempty"`
	// Refused says why the model's answer was refused (method "refused").
	Refused          string `json:"refused,omitempty"`
	Tokens           int    `json:"tokens"`
	Earliest         int64  `json:"earliest"`
	Latest           int64  `json:"latest"`
	CreatedAt        int64  `json:"createdAt"`
	SourceCount      int    `json:"sourceCount"`
	DescendantCount  int    `json:"descendantCount"`
	DescendantTokens int    `json:"descendantTokens"`
	Text             string `json:"text,omitempty"`
}

func summaryOf(s dag.Summary) summaryItem {
	return summaryItem{Kind: explore.ChildSummary, ID: s.ID, SummaryKind: s.Kind, Depth: s.Depth, Method: s.Method, Refused: s.Refused,
		Tokens: s.Tokens, Earliest: s.Earliest, Latest: s.Latest, CreatedAt: s.CreatedAt, SourceCount: len(s.Sources),
		DescendantCount: s.DescendantCount, DescendantTokens: s.DescendantTokens}
}

// summaries answers /api/summaries?agent=&session=&depth=&offset=&limit=:
// without depth the summaries in the active context, in context order;
// with depth every stored summary of that depth.
func (s *Server) summaries(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error) {
	conv, err := session(ctx, e, r)
	if err != nil {
		return nil, err
	}
	pg, err := pageParams(r)
	if err != nil {
		return nil, err
	}
	var res explore.SummaryPage
	if r.URL.Query().Has("depth") {
		depth, err := intParam(r, "depth", 0, 0)
		if err != nil {
			return nil, err
		}
		res, err = explore.New(e).SummariesAtDepth(ctx, conv, depth, pg.Offset, pg.Limit)
		if err != nil {
			return nil, err
		}
	} else if res, err = explore.New(e).ContextSummaries(ctx, conv, pg.Offset, pg.Limit); err != nil {
		return nil, err
	}
	out := list[summaryItem]{Total: res.Total, Offset: pg.Offset, Limit: pg.Limit, Partial: res.Partial,
		Items: make([]summaryItem, len(res.Summaries))}
	for i, sm := range res.Summaries {
		out.Items[i] = summaryOf(sm)
	}
	return out, nil
}

// childItem is a source of a summary: a summary (summaryItem's fields) or
// a raw message.
type childItem struct {
	summaryItem
	Seq       uint64 `json:"seq,omitempty"`
	Role      string `json:"role,omitempty"`
	Timestamp int64  `json:"timestamp,omitempty"`
	Preview   string `json:"preview,omitempty"`
}

// summaryAnswer is /api/summary's answer: the summary and a page of its
// children.
type summaryAnswer struct {
	Summary summaryItem `json:"summary"`
	list[childItem]
}

// summary answers /api/summary?agent=&session=&id=&offset=&limit=.
func (s *Server) summary(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error) {
	conv, err := session(ctx, e, r)
	if err != nil {
		return nil, err
	}
	id := r.URL.Query().Get("id")
	if id == "" {
		return nil, badParam("id is required")
	}
	pg, err := pageParams(r)
	if err != nil {
		return nil, err
	}
	res, err := explore.New(e).SummaryChildren(ctx, conv, id, pg.Offset, pg.Limit)
	if err != nil {
		return nil, err
	}
	out := summaryAnswer{Summary: summaryOf(res.Summary),
		list: list[childItem]{Total: res.Total, Offset: pg.Offset, Limit: pg.Limit, Items: make([]childItem, len(res.Children))}}
	out.Summary.Text = res.Summary.Text
	for i, ch := range res.Children {
		if ch.Kind == explore.ChildSummary {
			out.Items[i] = childItem{summaryItem: summaryOf(*ch.Summary)}
			continue
		}
		out.Items[i] = childItem{summaryItem: summaryItem{Kind: explore.ChildMessage, Tokens: ch.Tokens},
			Seq: ch.Seq, Role: ch.Role, Timestamp: ch.Timestamp, Preview: ch.Preview}
	}
	return out, nil
}

// message answers /api/message?agent=&session=&seq= with the message's
// raw bytes exactly as stored (its line of `lossless export`).
func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	e, err := s.engine(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	seq, err := strconv.ParseUint(r.URL.Query().Get("seq"), 10, 64)
	if err != nil || seq == 0 {
		s.fail(w, r, badParam("seq=%q: want a message's sequence number (1, 2, …)", r.URL.Query().Get("seq")))
		return
	}
	conv, err := session(ctx, e, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	raw, err := explore.New(e).RawMessage(ctx, conv, seq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	if _, err := w.Write(raw); err != nil {
		s.logf("lossless ui: %s: write the message: %v", r.URL.Path, err)
	}
}
