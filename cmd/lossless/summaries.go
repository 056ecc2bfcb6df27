package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/tools"
)

// locate returns the agent and a session id of the conversation holding
// summary (or large-content reference) id: --session's when given, else the
// first conversation (of --agent when given, else of any agent) that has
// it. A message id ("<conv>:<seq>", as grep prints it) names its
// conversation. It fails with an error wrapping core.ErrNotFound.
func locate(ctx context.Context, e *lossless.Engine, c *cmdEnv, session, id string) (agent, sessionID string, err error) {
	msgConv, seq, isMsg := lossless.ParseMessageID(id)
	has := func(conv *lossless.Conversation) (bool, error) {
		var err error
		switch {
		case isMsg:
			if conv.ID() != msgConv.String() {
				return false, nil
			}
			_, err = conv.MessageMeta(ctx, seq)
		case strings.HasPrefix(id, lossless.LargeRefPrefix):
			_, _, err = conv.MessageByKey(ctx, id)
		default:
			_, err = conv.Summary(ctx, id)
		}
		if errors.Is(err, dag.ErrNotFound) || errors.Is(err, core.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	if session != "" {
		agent, _, err := findSession(ctx, e, c, session)
		if err != nil {
			return "", "", err
		}
		conv, err := e.Conversation(ctx, agent, session)
		if err != nil {
			return "", "", err
		}
		ok, err := has(conv)
		if err != nil {
			return "", "", err
		}
		if !ok {
			return "", "", fmt.Errorf("%q in session %s: %w", id, session, core.ErrNotFound)
		}
		return agent, session, nil
	}
	scope := ""
	if c.agentSet {
		scope = c.agent
	}
	infos, err := e.Sessions(ctx, scope)
	if err != nil {
		return "", "", err
	}
	for _, in := range infos {
		if len(in.SessionIDs) == 0 || (isMsg && in.ID != msgConv.String()) {
			continue
		}
		sid := in.SessionIDs[len(in.SessionIDs)-1]
		conv, err := e.Conversation(ctx, in.Agent, sid)
		if err != nil {
			return "", "", err
		}
		ok, err := has(conv)
		if err != nil {
			return "", "", err
		}
		if ok {
			return in.Agent, sid, nil
		}
	}
	return "", "", fmt.Errorf("%q: %w (summary and message ids appear in `lossless assemble` and `lossless grep` output)", id, core.ErrNotFound)
}

func cmdDescribe() *command {
	var session string
	return &command{
		name: "describe", args: "SUMMARY_ID|MESSAGE_ID",
		summary: "Show a summary (its text, kind, depth, time range, what it covers and where it sits in the active context) or a message by its id <conv>:<seq>, as grep prints it (its text, and the summary covering it or its place in the active context).",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&session, "session", "", "the session the summary belongs to (default: search every conversation)")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) != 1 {
				return usagef("describe needs exactly one summary or message id")
			}
			e, err := openReader(ctx, c)
			if err != nil {
				return err
			}
			defer e.Close()
			agent, sid, err := locate(ctx, e, c, session, args[0])
			if err != nil {
				return err
			}
			if _, _, ok := lossless.ParseMessageID(args[0]); ok {
				return printMessageDescription(ctx, c, e, agent, sid, args[0])
			}
			d, err := e.DescribeSummary(ctx, agent, sid, "", args[0])
			if err != nil {
				return err
			}
			if c.json {
				return printJSON(c.io.out, map[string]any{"agent": agent, "sessionId": sid, "description": d})
			}
			s := d.Summary
			w := bufio.NewWriter(c.io.out)
			defer w.Flush()
			fmt.Fprintf(w, "summary   %s (%s, depth %d, method %s)\n", s.ID, s.Kind, s.Depth, orDash(s.Method))
			fmt.Fprintf(w, "session   %s (agent %s)\n", sid, agent)
			fmt.Fprintf(w, "covers    %d messages, %d tokens, from %s to %s\n", s.DescendantCount, s.DescendantTokens, fmtMillis(s.Earliest), fmtMillis(s.Latest))
			fmt.Fprintf(w, "text      %d tokens\n", s.Tokens)
			switch {
			case d.Active:
				fmt.Fprintf(w, "position  in the active context at %d\n", d.Pos)
			case len(d.Ancestors) > 0:
				fmt.Fprintf(w, "position  under %s\n", strings.Join(d.Ancestors, " > "))
			}
			if len(d.Messages) > 0 {
				// Conversation message numbers, from 1, as expand prints them.
				fmt.Fprintf(w, "sources   conversation messages %s (%d)\n", seqRange(d.Messages[0], d.Messages[len(d.Messages)-1]), len(d.Messages))
			}
			for _, ch := range d.Children {
				fmt.Fprintf(w, "child     %s (%s, depth %d, %d messages)\n", ch.ID, ch.Kind, ch.Depth, ch.DescendantCount)
			}
			fmt.Fprintf(w, "\n%s\n", strings.TrimRight(s.Text, "\n"))
			return nil
		},
	}
}

// printMessageDescription prints message id of agent's session sid: its text
// and where it sits (lossless.Engine.DescribeMessage).
func printMessageDescription(ctx context.Context, c *cmdEnv, e *lossless.Engine, agent, sid, id string) error {
	d, err := e.DescribeMessage(ctx, agent, sid, "", id)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(c.io.out, map[string]any{"agent": agent, "sessionId": sid, "message": d})
	}
	w := bufio.NewWriter(c.io.out)
	defer w.Flush()
	fmt.Fprintf(w, "message   %s (%s, %s, %d tokens)\n", d.ID, orDash(d.Role), fmtMillis(d.Timestamp), d.Tokens)
	fmt.Fprintf(w, "session   %s (agent %s)\n", sid, agent)
	switch {
	case d.Active:
		fmt.Fprintf(w, "position  in the active context at %d\n", d.Pos)
	case d.CoveredBy != "" && len(d.Ancestors) > 0:
		fmt.Fprintf(w, "position  in summary %s, under %s\n", d.CoveredBy, strings.Join(d.Ancestors, " > "))
	case d.CoveredBy != "":
		fmt.Fprintf(w, "position  in summary %s\n", d.CoveredBy)
	}
	if d.Truncated {
		fmt.Fprintf(w, "text      cut (lossless expand %s: the whole message)\n", d.ID)
	}
	fmt.Fprintf(w, "\n%s\n", strings.TrimRight(d.Text, "\n"))
	return nil
}

// seqRange formats the numbers a..b ("7" when they are equal).
func seqRange(a, b uint64) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}

func cmdExpand() *command {
	var session, cursor string
	var maxTokens int
	return &command{
		name: "expand", args: "SUMMARY_ID|MESSAGE_ID",
		summary: "Print the raw messages a summary (or a large-content reference) covers, or a message (by its id <conv>:<seq>, as grep prints it) and those around it, in order, one message object per line, exactly the bytes ingested; paged by --max-tokens.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&session, "session", "", "the session the summary belongs to (default: search every conversation)")
			fs.IntVar(&maxTokens, "max-tokens", 0, fmt.Sprintf("the most tokens of messages to print (0: all of a summary's, %d around a message); the rest is paged with --cursor", tools.DefaultMessageExpandTokens))
			fs.StringVar(&cursor, "cursor", "", "continue an expansion where the previous page stopped")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) != 1 {
				return usagef("expand needs exactly one summary or message id")
			}
			if maxTokens < 0 {
				return usagef("--max-tokens must not be negative")
			}
			e, err := openReader(ctx, c)
			if err != nil {
				return err
			}
			defer e.Close()
			agent, sid, err := locate(ctx, e, c, session, args[0])
			if err != nil {
				return err
			}
			max := maxTokens
			if _, _, isMsg := lossless.ParseMessageID(args[0]); max == 0 && !isMsg {
				max = math.MaxInt32 // everything in one page (around a message: the engine's default)
			}
			page, err := e.ExpandSummary(ctx, tools.ExpandParams{AgentID: agent, SessionID: sid, ID: args[0], MaxTokens: max, Cursor: cursor})
			if errors.Is(err, dag.ErrBadCursor) {
				return usagef("%v", err)
			}
			if err != nil {
				return err
			}
			if c.json {
				return printJSON(c.io.out, map[string]any{"agent": agent, "sessionId": sid, "id": page.ID,
					"offset": page.Offset, "total": page.Total, "tokens": page.Tokens, "nextCursor": page.NextCursor,
					"messages": page.Messages})
			}
			w := bufio.NewWriterSize(c.io.out, 256<<10)
			for _, m := range page.Messages {
				w.Write(m.Message.Raw())
				w.WriteByte('\n')
			}
			if err := w.Flush(); err != nil {
				return err
			}
			// Counted from 1, as describe counts: the page's place among the
			// summary's messages, then their conversation message numbers.
			if n := len(page.Messages); n > 0 {
				fmt.Fprintf(c.io.err, "messages %s of %d (conversation messages %s, %d tokens)", seqRange(uint64(page.Offset+1), uint64(page.Offset+n)),
					page.Total, seqRange(page.Messages[0].Seq, page.Messages[n-1].Seq), page.Tokens)
			} else {
				fmt.Fprintf(c.io.err, "no messages after %d of %d", page.Offset, page.Total)
			}
			if page.NextCursor != "" {
				fmt.Fprintf(c.io.err, "; more: --cursor %s", page.NextCursor)
			}
			fmt.Fprintln(c.io.err)
			return nil
		},
	}
}
