package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless"
)

// findSummary returns the conversation holding summary id: --session's
// when given, else the first conversation (of --agent, or any agent) that
// has it. It fails with an error wrapping core.ErrNotFound.
func findSummary(ctx context.Context, e *lossless.Engine, c *cmdEnv, session, id string) (*lossless.Conversation, dag.Summary, error) {
	if session != "" {
		agent, _, err := findSession(ctx, e, c, session)
		if err != nil {
			return nil, dag.Summary{}, err
		}
		conv, err := e.Conversation(ctx, agent, session)
		if err != nil {
			return nil, dag.Summary{}, err
		}
		s, err := conv.Summary(ctx, id)
		if errors.Is(err, dag.ErrNotFound) {
			return nil, dag.Summary{}, fmt.Errorf("summary %q in session %s: %w", id, session, core.ErrNotFound)
		}
		return conv, s, err
	}
	scope := ""
	if c.agentSet {
		scope = c.agent
	}
	infos, err := e.Sessions(ctx, scope)
	if err != nil {
		return nil, dag.Summary{}, err
	}
	for _, in := range infos {
		if len(in.SessionIDs) == 0 {
			continue
		}
		conv, err := e.Conversation(ctx, in.Agent, in.SessionIDs[len(in.SessionIDs)-1])
		if err != nil {
			return nil, dag.Summary{}, err
		}
		s, err := conv.Summary(ctx, id)
		if errors.Is(err, dag.ErrNotFound) {
			continue
		}
		return conv, s, err
	}
	return nil, dag.Summary{}, fmt.Errorf("summary %q: %w (summary ids appear in `lossless assemble` output)", id, core.ErrNotFound)
}

func cmdDescribe() *command {
	var session string
	return &command{
		name: "describe", args: "SUMMARY_ID",
		summary: "Show a summary: its text, kind, depth, time range, what it covers and where it sits in the active context.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&session, "session", "", "the session the summary belongs to (default: search every conversation)")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) != 1 {
				return usagef("describe needs exactly one summary id")
			}
			e, err := openEngine(ctx, c, false, nil)
			if err != nil {
				return err
			}
			defer e.Close()
			conv, _, err := findSummary(ctx, e, c, session, args[0])
			if err != nil {
				return err
			}
			d, err := dag.Describe(ctx, conv, args[0])
			if err != nil {
				return err
			}
			if c.json {
				return printJSON(c.io.out, map[string]any{"agent": conv.Agent, "conversation": conv.ID(), "description": d})
			}
			s := d.Summary
			w := bufio.NewWriter(c.io.out)
			defer w.Flush()
			fmt.Fprintf(w, "summary   %s (%s, depth %d, method %s)\n", s.ID, s.Kind, s.Depth, orDash(s.Method))
			fmt.Fprintf(w, "agent     %s, conversation %s\n", conv.Agent, conv.ID())
			fmt.Fprintf(w, "covers    %d messages, %d tokens, from %s to %s\n", s.DescendantCount, s.DescendantTokens, fmtMillis(s.Earliest), fmtMillis(s.Latest))
			fmt.Fprintf(w, "text      %d tokens\n", s.Tokens)
			switch {
			case d.Active:
				fmt.Fprintf(w, "position  in the active context at %d\n", d.Pos)
			case len(d.Ancestors) > 0:
				fmt.Fprintf(w, "position  under %s\n", strings.Join(d.Ancestors, " > "))
			}
			if len(d.Messages) > 0 {
				fmt.Fprintf(w, "sources   messages %d..%d (%d)\n", d.Messages[0], d.Messages[len(d.Messages)-1], len(d.Messages))
			}
			for _, ch := range d.Children {
				fmt.Fprintf(w, "child     %s (%s, depth %d, %d messages)\n", ch.ID, ch.Kind, ch.Depth, ch.DescendantCount)
			}
			fmt.Fprintf(w, "\n%s\n", strings.TrimRight(s.Text, "\n"))
			return nil
		},
	}
}

func cmdExpand() *command {
	var session, cursor string
	var maxTokens int
	return &command{
		name: "expand", args: "SUMMARY_ID",
		summary: "Print the raw messages a summary covers, in order, one message object per line (exactly the bytes ingested), paged by --max-tokens.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&session, "session", "", "the session the summary belongs to (default: search every conversation)")
			fs.IntVar(&maxTokens, "max-tokens", 0, "the most tokens of messages to print (0: all); the rest is paged with --cursor")
			fs.StringVar(&cursor, "cursor", "", "continue an expansion where the previous page stopped")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) != 1 {
				return usagef("expand needs exactly one summary id")
			}
			if maxTokens < 0 {
				return usagef("--max-tokens must not be negative")
			}
			e, err := openEngine(ctx, c, false, nil)
			if err != nil {
				return err
			}
			defer e.Close()
			conv, _, err := findSummary(ctx, e, c, session, args[0])
			if err != nil {
				return err
			}
			page, err := dag.Expand(ctx, conv, args[0], maxTokens, cursor)
			if errors.Is(err, dag.ErrBadCursor) {
				return usagef("%v", err)
			}
			if err != nil {
				return err
			}
			msgs := make([]core.Message, 0, len(page.Messages))
			for _, seq := range page.Messages {
				m, err := conv.Message(ctx, seq)
				if err != nil {
					return fmt.Errorf("message %d: %w", seq, err)
				}
				msgs = append(msgs, m)
			}
			if c.json {
				return printJSON(c.io.out, map[string]any{"id": page.ID, "offset": page.Offset, "total": page.Total,
					"tokens": page.Tokens, "nextCursor": page.NextCursor, "messages": msgs})
			}
			w := bufio.NewWriterSize(c.io.out, 256<<10)
			for _, m := range msgs {
				w.Write(m.Raw())
				w.WriteByte('\n')
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(c.io.err, "messages %d-%d of %d (%d tokens)", page.Offset, page.Offset+len(msgs), page.Total, page.Tokens)
			if page.NextCursor != "" {
				fmt.Fprintf(c.io.err, "; more: --cursor %s", page.NextCursor)
			}
			fmt.Fprintln(c.io.err)
			return nil
		},
	}
}
