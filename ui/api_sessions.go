package ui

import (
	"context"
	"net/http"

	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/explore"
)

// sessionItem is one row of /api/sessions.
type sessionItem struct {
	Agent string `json:"agent"`
	// ID is the conversation's id; Session the name the other views take
	// (lossless.SessionInfo.Name).
	ID         string   `json:"id"`
	Session    string   `json:"session"`
	SessionIDs []string `json:"sessionIds"`
	Key        string   `json:"key,omitempty"`
	Messages   int64    `json:"messages"`
	Bytes      int64    `json:"bytes"`
	// Tokens are the stored messages' tokens; ActiveTokens the active
	// context's (what assemble reads from); Ratio Tokens/ActiveTokens.
	Tokens       int64   `json:"tokens"`
	ActiveTokens int64   `json:"activeTokens"`
	ContextItems int     `json:"contextItems"`
	Ratio        float64 `json:"ratio"`
	Summaries    int64   `json:"summaries"`
	// SummariesByDepth counts the active context's summaries by depth.
	SummariesByDepth []int `json:"summariesByDepth"`
	// FirstMessage and LastMessage are the messages' own times (Unix ms).
	FirstMessage int64 `json:"firstMessage"`
	LastMessage  int64 `json:"lastMessage"`
	// Partial: the context is longer than explore.MaxContextScan items
	// and ActiveTokens counts that many (a lower bound).
	Partial  bool `json:"partial,omitempty"`
	Retiring bool `json:"retiring,omitempty"`
}

// sessions answers /api/sessions?agent=&q=&offset=&limit=.
func (s *Server) sessions(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error) {
	pg, err := pageParams(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	res, err := explore.New(e).SessionsPage(ctx, explore.SessionQuery{Agent: q.Get("agent"), Match: q.Get("q"), Offset: pg.Offset, Limit: pg.Limit})
	if err != nil {
		return nil, err
	}
	out := list[sessionItem]{Total: res.Total, Offset: pg.Offset, Limit: pg.Limit, Items: make([]sessionItem, len(res.Sessions))}
	for i, d := range res.Sessions {
		it := sessionItem{Agent: d.Agent, ID: d.ID, Session: d.Name(), SessionIDs: d.SessionIDs, Key: d.Key,
			Messages: d.Messages, Bytes: d.Bytes, Tokens: d.Tokens, ActiveTokens: d.Context.Tokens,
			ContextItems: d.Context.Items, Summaries: d.Summaries, SummariesByDepth: d.Context.SummariesByDepth,
			FirstMessage: d.FirstMessage, LastMessage: d.LastMessage, Partial: d.Context.Partial, Retiring: d.Retiring}
		if it.SessionIDs == nil {
			it.SessionIDs = []string{}
		}
		if it.ActiveTokens > 0 {
			it.Ratio = float64(it.Tokens) / float64(it.ActiveTokens)
		}
		out.Items[i] = it
	}
	return out, nil
}
