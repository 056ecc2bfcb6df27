package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

// parseTime reads a --since/--until value: RFC 3339, a date (2006-01-02),
// a date and minute (2006-01-02T15:04), a duration before now (90m, 36h) or
// a number of days before now (7d). It returns Unix milliseconds.
func parseTime(s string, now time.Time) (int64, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour).UnixMilli(), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UnixMilli(), nil
	}
	return 0, fmt.Errorf("cannot read time %q (want 2006-01-02, RFC 3339, a duration like 36h, or 7d)", s)
}

// grepHit is a lossless.GrepHit with the session it belongs to.
type grepHit struct {
	Agent     string `json:"agent"`
	SessionID string `json:"sessionId"`
	tools.GrepHit
}

func cmdGrep() *command {
	var session, since, until, sortBy, kind string
	var all, regex bool
	var limit int
	return &command{
		name: "grep", args: "QUERY",
		summary: "Search stored messages and summaries (every word, or a regular expression) of --agent (default main), --all agents, or one --session.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.BoolVar(&all, "all", false, "search every agent")
			fs.StringVar(&session, "session", "", "search only this session's conversation")
			fs.BoolVar(&regex, "regex", false, "QUERY is a regular expression (case-insensitive)")
			fs.StringVar(&since, "since", "", "only items at or after this time (2006-01-02, RFC 3339, 36h or 7d ago)")
			fs.StringVar(&until, "until", "", "only items at or before this time (same forms as --since)")
			fs.StringVar(&sortBy, "sort", tools.SortRelevance, "relevance or recency")
			fs.IntVar(&limit, "limit", 20, "the most hits (at most 200)")
			fs.StringVar(&kind, "kind", "", "only \"message\" or \"summary\" hits")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) != 1 {
				return usagef("grep needs exactly one QUERY (quote it)")
			}
			if all && (c.agentSet || session != "") {
				return usagef("--all cannot be combined with --agent or --session")
			}
			if sortBy != tools.SortRelevance && sortBy != tools.SortRecency {
				return usagef("--sort must be relevance or recency")
			}
			if kind != "" && kind != "message" && kind != "summary" {
				return usagef("--kind must be message or summary")
			}
			if limit <= 0 {
				return usagef("--limit must be positive")
			}
			p := tools.GrepParams{Query: args[0], Regex: regex, Sort: sortBy, Limit: limit, Kind: kind}
			now := time.Now()
			var err error
			if since != "" {
				if p.Since, err = parseTime(since, now); err != nil {
					return usagef("--since: %v", err)
				}
			}
			if until != "" {
				if p.Until, err = parseTime(until, now); err != nil {
					return usagef("--until: %v", err)
				}
			}
			e, err := openReader(ctx, c)
			if err != nil {
				return err
			}
			defer e.Close()
			infos, err := e.Sessions(ctx, "")
			if err != nil {
				return err
			}
			owner := map[string]inspect.SessionInfo{}
			agents := map[string]bool{}
			for _, in := range infos {
				owner[in.ID] = in
				agents[in.Agent] = true
			}
			var calls []tools.GrepParams
			switch {
			case session != "":
				agent, _, err := findSession(ctx, e, c, session)
				if err != nil {
					return err
				}
				q := p
				q.AgentID, q.SessionID, q.Scope = agent, session, tools.ScopeConversation
				calls = append(calls, q)
			case all:
				for _, a := range sortedKeys(agents) {
					q := p
					q.AgentID, q.Scope = a, tools.ScopeAgent
					calls = append(calls, q)
				}
			default:
				q := p
				q.AgentID, q.Scope = c.agent, tools.ScopeAgent
				calls = append(calls, q)
			}
			var hits []grepHit
			for _, q := range calls {
				hs, err := e.Grep(ctx, q)
				if errors.Is(err, lossless.ErrBadToolArgs) {
					return usagef("%v", err)
				}
				if err != nil {
					return err
				}
				for _, h := range hs {
					in := owner[h.Conversation]
					sid := in.ID
					if n := len(in.SessionIDs); n > 0 {
						sid = in.SessionIDs[n-1]
					}
					hits = append(hits, grepHit{Agent: in.Agent, SessionID: sid, GrepHit: h})
				}
			}
			sort.SliceStable(hits, func(i, j int) bool {
				if sortBy == tools.SortRecency || hits[i].Score == hits[j].Score {
					return hits[i].Timestamp > hits[j].Timestamp
				}
				return hits[i].Score > hits[j].Score
			})
			if len(hits) > limit {
				hits = hits[:limit]
			}
			if c.json {
				if hits == nil {
					hits = []grepHit{}
				}
				return printJSON(c.io.out, hits)
			}
			if len(hits) == 0 {
				fmt.Fprintln(c.io.out, "no matches")
				return nil
			}
			w := bufio.NewWriter(c.io.out)
			defer w.Flush()
			for _, h := range hits {
				// A message's id and its leaf: what describe and expand
				// take.
				what := fmt.Sprintf("message %s (%s)", h.ID, h.Role)
				if h.CoveredBy != "" {
					what = fmt.Sprintf("message %s (%s, in %s)", h.ID, h.Role, h.CoveredBy)
				}
				if h.Kind == "summary" {
					what = "summary " + h.SummaryID
				}
				fmt.Fprintf(w, "%s/%s %s %s [%.2f]\n    %s\n", h.Agent, h.SessionID, what, fmtMillis(h.Timestamp), h.Score, h.Snippet)
			}
			return nil
		},
	}
}
