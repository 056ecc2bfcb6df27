package ui

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/explain"
	"github.com/lossless-engine/contextengine/lossless/explore"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

// grepHit is one hit of /api/grep: lossless.GrepHit with its session.
type grepHit struct {
	tools.GrepHit
	Agent   string `json:"agent"`
	Session string `json:"session"`
}

// grepAnswer is /api/grep's answer: a page of hits and the cursor of the
// next (explore.Explorer.GrepPage).
type grepAnswer struct {
	Items   []grepHit `json:"items"`
	Scanned int       `json:"scanned"`
	Next    string    `json:"next,omitempty"`
}

// grepTime bounds the reading of one /api/grep request: a store of a
// million messages is read a page at a time (the page asks for the next
// until it has enough hits).
const grepTime = 150 * time.Millisecond

// grep answers /api/grep?q=&agent=&session=&regex=&limit=&cursor=: the
// session's conversation when session is given, else every conversation
// of agent (default: the engine's agent), newest first, a bounded scan
// per request.
func (s *Server) grep(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error) {
	q := r.URL.Query()
	if strings.TrimSpace(q.Get("q")) == "" {
		return nil, badParam("q is required")
	}
	limit, err := intParam(r, "limit", 50, 1)
	if err != nil {
		return nil, err
	}
	agent := agentParam(e, r)
	p := explore.GrepPageParams{GrepParams: tools.GrepParams{AgentID: agent, Query: q.Get("q"), Limit: limit,
		Regex: q.Get("regex") == "1" || q.Get("regex") == "true"}, Cursor: q.Get("cursor"), MaxTime: grepTime}
	if sid := q.Get("session"); sid != "" {
		p.SessionID, p.Scope = sid, tools.ScopeConversation
	} else {
		p.Scope = tools.ScopeAgent
	}
	res, err := explore.New(e).GrepPage(ctx, p)
	if err != nil {
		return nil, err
	}
	out := grepAnswer{Items: make([]grepHit, len(res.Hits)), Scanned: res.Scanned, Next: res.Next}
	names := map[string]inspect.SessionInfo{}
	for i, h := range res.Hits {
		in, ok := names[h.Conversation]
		if !ok {
			if in, err = explore.New(e).SessionByID(ctx, h.Conversation); err != nil {
				return nil, err
			}
			names[h.Conversation] = in
		}
		out.Items[i] = grepHit{GrepHit: h, Agent: in.Agent, Session: in.Name()}
	}
	return out, nil
}

// agentParam is the request's agent, else the engine's default agent.
func agentParam(e *lossless.Engine, r *http.Request) string {
	if a := r.URL.Query().Get("agent"); a != "" {
		return a
	}
	if a := e.Config().AgentID; a != "" {
		return a
	}
	return config.DefaultAgentID
}

// recallAnswer is /api/recall's answer: lossless.ExplainRecall.
type recallAnswer struct {
	Prompt string `json:"prompt"`
	Agent  string `json:"agent"`
	explain.RecallExplained
}

// recall answers /api/recall?prompt=&agent=&session=&k=: "what would be
// recalled, and why" (lossless.Engine.ExplainRecall), for the session as
// `lossless assemble` runs it, or for the agent when no session is given.
func (s *Server) recall(ctx context.Context, e *lossless.Engine, r *http.Request) (any, error) {
	q := r.URL.Query()
	prompt := q.Get("prompt")
	if strings.TrimSpace(prompt) == "" {
		return nil, badParam("prompt is required")
	}
	k, err := intParam(r, "k", 0, 0)
	if err != nil {
		return nil, err
	}
	agent := agentParam(e, r)
	p := core.AssembleParams{SessionKey: cliKey(agent), Prompt: prompt}
	if sid := q.Get("session"); sid != "" {
		if _, err := e.Conversation(ctx, agent, sid); err != nil {
			return nil, err
		}
		p.SessionID = sid
	}
	x, err := e.ExplainRecall(ctx, p, min(k, 100))
	if err != nil {
		return nil, err
	}
	return recallAnswer{Prompt: prompt, Agent: agent, RecallExplained: x}, nil
}
