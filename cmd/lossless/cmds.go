package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/inspect"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/lossless/retention"
	"github.com/lossless-engine/contextengine/lossless/transcript"
)

func cmdImport() *command {
	return &command{
		name: "import", args: "FILE...",
		summary: "Import OpenClaw session JSONL files into the store (incremental: only new lines are read again). Exits 3 when it skipped malformed lines (it prints each; everything else is stored).",
		run: func(ctx context.Context, c *cmdEnv, files []string) error {
			if len(files) == 0 {
				return usagef("import needs at least one session file")
			}
			sizes := make([]int64, len(files))
			var totalBytes int64
			for i, f := range files {
				if f == "-" {
					return usagef("import reads session files, not standard input: it is incremental by file path (a file's checkpoint says what was read); save the transcript to a file and import that")
				}
				st, err := os.Stat(f)
				if err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				if st.IsDir() {
					return fmt.Errorf("%s is a directory, not a session file", f)
				}
				sizes[i] = st.Size()
				totalBytes += st.Size()
			}
			e, err := openEngine(ctx, c, true, nil)
			if err != nil {
				return err
			}
			defer e.Close()
			type malformedLine struct {
				Line   int    `json:"line"`
				Offset int64  `json:"offset"`
				Error  string `json:"error"`
			}
			type fileResult struct {
				File string `json:"file"`
				transcript.Result
				Malformed []malformedLine `json:"malformed"`
			}
			var results []fileResult
			var total transcript.Result
			// The bar counts bytes, so one large file moves it too.
			bar := newProgress(c.io, "importing", totalBytes, true)
			var base int64 // bytes of the files before this one
			for i, f := range files {
				bar.Set(base, filepath.Base(f))
				fctx := lossless.WithImportProgress(ctx, func(off int64) { bar.Set(base+min(off, sizes[i]), filepath.Base(f)) })
				res, err := e.Import(fctx, c.agent, f)
				if err != nil {
					bar.Clear()
					return fmt.Errorf("import %s: %w", f, err)
				}
				fr := fileResult{File: f, Result: res, Malformed: []malformedLine{}}
				for _, m := range res.Malformed {
					fr.Malformed = append(fr.Malformed, malformedLine{m.Line, m.Offset, m.Err.Error()})
				}
				results = append(results, fr)
				total.Imported += res.Imported
				total.Duplicates += res.Duplicates
				total.Summaries += res.Summaries
				total.Bytes += res.Bytes
				total.Malformed = append(total.Malformed, res.Malformed...)
				base += sizes[i]
			}
			bar.Clear()
			if c.json {
				if err := printJSON(c.io.out, map[string]any{"agent": c.agent, "store": config.RedactURL(c.store), "files": results,
					"imported": total.Imported, "duplicates": total.Duplicates, "summaries": total.Summaries,
					"malformed": len(total.Malformed), "bytes": total.Bytes}); err != nil {
					return err
				}
				return skippedLines(len(total.Malformed))
			}
			for _, r := range results {
				fmt.Fprintf(c.io.out, "%s: session %s: %d imported, %d already stored, %d summaries, %d malformed lines, %s read",
					r.File, r.SessionID, r.Imported, r.Duplicates, r.Summaries, len(r.Malformed), humanBytes(r.Bytes))
				if r.Resumed {
					fmt.Fprint(c.io.out, " (resumed)")
				}
				fmt.Fprintln(c.io.out)
				for _, m := range r.Malformed {
					fmt.Fprintf(c.io.out, "  malformed line %d (byte %d): %s\n", m.Line, m.Offset, m.Error)
				}
			}
			if len(results) > 1 {
				fmt.Fprintf(c.io.out, "total: %d imported, %d already stored, %d summaries, %d malformed lines\n",
					total.Imported, total.Duplicates, total.Summaries, len(total.Malformed))
			}
			return skippedLines(len(total.Malformed))
		},
	}
}

// skippedLines is import's result when n malformed lines were skipped
// (everything else is stored): errPartial, exit code 3.
func skippedLines(n int) error {
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d malformed lines skipped: %w", n, errPartial)
}

func cmdSessions() *command {
	var all bool
	return &command{
		name: "sessions", args: "",
		summary: "List the stored conversations (of --agent, or every agent with --all), with the times of their first and last messages.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.BoolVar(&all, "all", false, "list every agent's conversations")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("sessions takes no arguments")
			}
			e, err := openReader(ctx, c)
			if err != nil {
				return err
			}
			defer e.Close()
			scope := c.agent
			if all || !c.agentSet {
				scope = ""
			}
			infos, err := e.Sessions(ctx, scope)
			if err != nil {
				return err
			}
			if c.json {
				if infos == nil {
					infos = []inspect.SessionInfo{}
				}
				return printJSON(c.io.out, infos)
			}
			if len(infos) == 0 {
				fmt.Fprintln(c.io.out, "no sessions")
				return nil
			}
			tw := tabwriter.NewWriter(c.io.out, 2, 4, 2, ' ', 0)
			// FIRST and LAST are the messages' own times (when the
			// conversation took place), not when they were stored.
			fmt.Fprintln(tw, "AGENT\tSESSION\tMESSAGES\tSUMMARIES\tTOKENS\tBYTES\tFIRST\tLAST")
			for _, in := range infos {
				sid := in.ID
				if n := len(in.SessionIDs); n > 0 {
					sid = in.SessionIDs[n-1]
					if n > 1 {
						sid += fmt.Sprintf(" (+%d earlier)", n-1)
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", in.Agent, sid, in.Messages, in.Summaries,
					in.Tokens, humanBytes(in.Bytes), fmtMillis(in.FirstMessage), fmtMillis(in.LastMessage))
			}
			return tw.Flush()
		},
	}
}

func fmtMillis(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04Z")
}

func cmdStats() *command {
	return &command{
		name: "stats", args: "",
		summary: "Show per-agent totals (conversations, messages, summaries, tokens) and the bytes on disk.",
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("stats takes no arguments")
			}
			e, err := openReader(ctx, c)
			if err != nil {
				return err
			}
			defer e.Close()
			st, err := e.Stats(ctx)
			if err != nil {
				return err
			}
			if c.json {
				return printJSON(c.io.out, map[string]any{"store": config.RedactURL(c.store), "format": st.Format,
					"diskBytes": st.DiskBytes, "indexBytes": st.IndexBytes, "agents": st.Agents})
			}
			fmt.Fprintf(c.io.out, "store %s (format %d), %s on disk, recall index %s\n", c.storeName(), st.Format,
				humanBytes(st.DiskBytes), humanBytes(st.IndexBytes))
			if len(st.Agents) == 0 {
				fmt.Fprintln(c.io.out, "no agents")
				return nil
			}
			tw := tabwriter.NewWriter(c.io.out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tCONVERSATIONS\tMESSAGES\tSUMMARIES\tTOKENS\tBYTES")
			refused := int64(0)
			for _, a := range sortedKeys(st.Agents) {
				s := st.Agents[a]
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", a, s.Conversations, s.Messages, s.Summaries, s.Tokens, humanBytes(s.Bytes))
				refused += s.RefusedSummaries
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if refused > 0 {
				fmt.Fprintf(c.io.out, "%s\n", refusedLine(refused))
			}
			return nil
		},
	}
}

func cmdAssemble() *command {
	var session, prompt string
	var budget int
	var full bool
	return &command{
		name: "assemble", args: "",
		summary: "Print the messages and systemPromptAddition the model would get for --session within --budget tokens.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&session, "session", "", "the session id (required)")
			fs.IntVar(&budget, "budget", 0, "the token budget (default: the engine's default budget)")
			fs.StringVar(&prompt, "prompt", "", "the incoming user prompt (the retrieval query)")
			fs.BoolVar(&full, "full", false, "print whole message texts, not one line each")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("assemble takes no arguments (use --session ID)")
			}
			if session == "" {
				return usagef("--session is required")
			}
			if budget < 0 {
				return usagef("--budget must be positive")
			}
			e, readOnly, err := openWriterOrReader(ctx, c, "assemble", "so recall is not used (its index opens only for writing) and nothing is written")
			if err != nil {
				return err
			}
			defer e.Close()
			agent, _, err := findSession(ctx, e, c, session)
			if err != nil {
				return err
			}
			// The explorer's context view runs the same report (package ui).
			rep, err := e.AssembleReport(ctx, core.AssembleParams{SessionID: session, SessionKey: "agent:" + agent + ":cli",
				Messages: []core.Message{}, TokenBudget: budget, Prompt: prompt})
			if err != nil {
				return err
			}
			res, details, addTokens := rep.Result, rep.Details, rep.SystemPromptAdditionTokens
			if readOnly && details.Recall.Status == recalled.Off {
				details.Recall.Reason = readOnlyRecall
			}
			if c.json {
				type msgOut struct {
					Tokens  int          `json:"tokens"`
					Part    string       `json:"part"`
					Message core.Message `json:"message"`
				}
				out := make([]msgOut, len(rep.Messages))
				for i, m := range rep.Messages {
					out[i] = msgOut{m.Tokens, m.Part, m.Message}
				}
				if err := printJSON(c.io.out, map[string]any{"sessionId": session, "agent": agent, "budget": budget,
					"estimatedTokens": res.EstimatedTokens, "messages": out, "parts": rep.Parts,
					"systemPromptAddition": res.SystemPromptAddition, "systemPromptAdditionTokens": addTokens,
					"promptAuthority": res.PromptAuthority, "recall": details.Recall}); err != nil {
					return err
				}
				return recallFailed(details.Recall)
			}
			w := bufio.NewWriter(c.io.out)
			defer w.Flush()
			fmt.Fprintf(w, "session %s (agent %s): %d messages, %d estimated tokens", session, agent, len(res.Messages), res.EstimatedTokens)
			if budget > 0 {
				fmt.Fprintf(w, " of a %d budget", budget)
			}
			fmt.Fprintln(w)
			if prompt != "" || details.Recall.Status != recalled.None {
				fmt.Fprintln(w, recallLine(details.Recall))
			}
			if res.SystemPromptAddition != "" {
				fmt.Fprintf(w, "\nsystemPromptAddition (%d tokens):\n%s\n", addTokens, indent(res.SystemPromptAddition))
			}
			fmt.Fprintln(w)
			for i, m := range res.Messages {
				text := describeMessage(m)
				if !full {
					text = oneLine(text, 160)
				}
				fmt.Fprintf(w, "[%d] %s (%d tokens): %s\n", i, m.Role(), rep.Messages[i].Tokens, text)
			}
			return recallFailed(details.Recall)
		},
	}
}

// recallFailed is the error of an assemble whose recall failed (a record
// it read is damaged, say): the context printed lacks what recall would
// have added, so the command exits 1 (the host's assemble goes on without
// recall; this command reports it).
func recallFailed(r recalled.Report) error {
	if r.Status != recalled.Failed {
		return nil
	}
	return fmt.Errorf("assemble: recall failed, the context printed lacks it: %s", r.Reason)
}

// recallLine says what recall did in an assemble, for people.
func recallLine(r recalled.Report) string {
	line := "recall: " + r.Status
	if r.Status == recalled.Injected {
		line += fmt.Sprintf(" (%d items)", r.Items)
	}
	if r.Reason != "" {
		line += ": " + r.Reason
	}
	if r.Partial {
		line += fmt.Sprintf(" [partial: the recall index is being rebuilt, %d docs so far]", r.Rebuilt)
	}
	return line
}

// describeMessage is a message's text for people: its text, tool calls and
// tool results.
func describeMessage(m core.Message) string {
	var parts []string
	if t := m.Text(); t != "" {
		parts = append(parts, t)
	}
	for _, b := range m.ToolCalls() {
		parts = append(parts, fmt.Sprintf("→ %s(%s)", b.Name, string(b.Arguments)))
	}
	if m.Role() == core.RoleToolResult && m.ToolName() != "" {
		parts = append([]string{"[" + m.ToolName() + "]"}, parts...)
	}
	return strings.Join(parts, " ")
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func cmdCompact() *command {
	var session, sessionFile, summarizer, model, baseURL, instructions string
	var budget int
	var force bool
	return &command{
		name: "compact", args: "",
		summary: "Compact --session: summarise older history so the active context fits --budget.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&session, "session", "", "the session id (required)")
			fs.StringVar(&sessionFile, "session-file", "", "the session's JSONL transcript: what it holds beyond the store is imported first, and past rotateBytes it is rotated (a successor file beside it; the old one untouched)")
			fs.IntVar(&budget, "budget", 0, "the token budget to fit (default: the engine's default budget)")
			fs.BoolVar(&force, "force", false, "compact even below the trigger threshold")
			fs.StringVar(&summarizer, "summarizer", "extractive", "the summarizer: extractive, openai or anthropic")
			fs.StringVar(&model, "model", "", "the model of an openai or anthropic summarizer")
			fs.StringVar(&baseURL, "base-url", "", "the endpoint of an openai or anthropic summarizer (default: the provider's)")
			fs.StringVar(&instructions, "instructions", "", "extra focus for the summary (like /compact's text)")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("compact takes no arguments (use --session ID)")
			}
			if session == "" {
				return usagef("--session is required")
			}
			if budget < 0 {
				return usagef("--budget must be positive")
			}
			switch summarizer {
			case "extractive":
			case "openai", "anthropic":
				if model == "" {
					return usagef("--summarizer %s needs --model", summarizer)
				}
			default:
				return usagef("unknown --summarizer %q (want extractive, openai or anthropic)", summarizer)
			}
			sumCfg, err := encodeJSON(map[string]any{"kind": summarizer, "model": model, "baseUrl": baseURL})
			if err != nil {
				return err
			}
			e, err := openEngine(ctx, c, false, func(cfg *config.Config) { cfg.Summarizer = sumCfg })
			if err != nil {
				return err
			}
			defer e.Close()
			agent, _, err := findSession(ctx, e, c, session)
			if err != nil {
				return err
			}
			target := core.CompactionTargetBudget
			bar := newProgress(c.io, "compacting", 0, false)
			bar.Set(0, session)
			res, err := e.Compact(ctx, core.CompactParams{SessionID: session, SessionKey: "agent:" + agent + ":cli",
				AgentID: agent, TokenBudget: budget, Force: force, CompactionTarget: target,
				CustomInstructions: instructions, SessionFile: sessionFile})
			bar.Clear()
			if err != nil {
				return err
			}
			if c.json {
				if err := printJSON(c.io.out, res); err != nil {
					return err
				}
				if !res.OK {
					return fmt.Errorf("compaction failed: %s", orDash(res.Reason))
				}
				return nil
			}
			switch {
			case !res.OK:
				fmt.Fprintf(c.io.out, "not compacted: %s\n", orDash(res.Reason))
			case !res.Compacted && strings.HasPrefix(res.Reason, "nothing to compact"):
				fmt.Fprintln(c.io.out, res.Reason)
			case !res.Compacted:
				fmt.Fprintf(c.io.out, "nothing to compact: %s\n", orDash(res.Reason))
			default:
				fmt.Fprintf(c.io.out, "compacted session %s", session)
				if r := res.Result; r != nil {
					fmt.Fprintf(c.io.out, ": %d → %d tokens", r.TokensBefore, r.TokensAfter)
					if r.SessionID != "" && r.SessionID != session {
						fmt.Fprintf(c.io.out, "; the session continues as %s", r.SessionID)
						if r.SessionFile != "" {
							fmt.Fprintf(c.io.out, " in %s", r.SessionFile)
						}
					}
				}
				fmt.Fprintln(c.io.out)
				var d orchestrate.CompactDetails
				if res.Result != nil && json.Unmarshal(res.Result.Details, &d) == nil && len(d.NewSummaryIDs) > 0 {
					fmt.Fprintf(c.io.out, "new summaries (lossless describe/expand ID): %s\n", strings.Join(d.NewSummaryIDs, " "))
				}
				if res.Result != nil && res.Result.Summary != "" {
					fmt.Fprintf(c.io.out, "\nsummary:\n%s\n", indent(res.Result.Summary))
				}
			}
			if !res.OK {
				return fmt.Errorf("compaction failed: %s", orDash(res.Reason))
			}
			return nil
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdExport() *command {
	var session string
	return &command{
		name: "export", args: "",
		summary: "Write --session's messages in order, one message object per line, each exactly the bytes ingested.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&session, "session", "", "the session id (required; for an imported file, the id in its header)")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("export takes no arguments (use --session ID)")
			}
			if session == "" {
				return usagef("--session is required")
			}
			e, err := openReader(ctx, c)
			if err != nil {
				return err
			}
			defer e.Close()
			agent, _, err := findSession(ctx, e, c, session)
			if err != nil {
				return err
			}
			// --json changes nothing: the output is JSON lines already.
			w := bufio.NewWriterSize(c.io.out, 256<<10)
			err = e.Messages(ctx, agent, session, func(seq uint64, m core.Message) error {
				if _, err := w.Write(m.Raw()); err != nil {
					return err
				}
				return w.WriteByte('\n')
			})
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			return err
		},
	}
}

// errProblems is returned by doctor when it found problems (already printed).
var errProblems = errors.New("problems found")

func cmdRetain() *command {
	var maxAgeDays int
	var maxBytes int64
	var dryRun bool
	return &command{
		name: "retain", args: "",
		summary: "Delete conversations (of every agent) whose last message is over --max-age-days old (by its own timestamp) or over --max-bytes-per-agent (oldest last message first), and orphans; --dry-run lists them only.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.IntVar(&maxAgeDays, "max-age-days", 0, "delete conversations whose last message is older than this many days, by the message's timestamp (else the last write) (0: no age limit)")
			fs.Int64Var(&maxBytes, "max-bytes-per-agent", 0, "delete an agent's conversations with the oldest last message while its stored bytes exceed this (0: no size limit; its most recent conversation is always kept)")
			fs.BoolVar(&dryRun, "dry-run", false, "list what would be deleted, delete nothing")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("retain takes no arguments")
			}
			if maxAgeDays < 0 || maxBytes < 0 {
				return usagef("--max-age-days and --max-bytes-per-agent must be 0 (no limit) or positive")
			}
			e, err := openEngine(ctx, c, false, func(cfg *config.Config) {
				cfg.Retention = config.RetentionConfig{MaxAgeDays: maxAgeDays, MaxBytesPerAgent: maxBytes, IntervalMinutes: -1}
			})
			if err != nil {
				return err
			}
			defer e.Close()
			retain := e.Retain
			if dryRun {
				retain = e.RetainDryRun
			}
			res, err := retain(ctx, time.Time{})
			if err != nil {
				return err
			}
			if c.json {
				if res.Deleted == nil {
					res.Deleted = []retention.DeletedConversation{}
				}
				return printJSON(c.io.out, map[string]any{"dryRun": dryRun, "deleted": res.Deleted,
					"messages": res.Messages, "bytes": res.Bytes})
			}
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			noun := "conversations"
			if len(res.Deleted) == 1 {
				noun = "conversation"
			}
			fmt.Fprintf(c.io.out, "%s %d %s, %d messages, %s\n", verb, len(res.Deleted), noun, res.Messages, humanBytes(res.Bytes))
			if len(res.Deleted) == 0 {
				return nil
			}
			tw := tabwriter.NewWriter(c.io.out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tSESSION\tCONVERSATION\tREASON")
			for _, d := range res.Deleted {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Agent, orDash(d.Session), d.ID, d.Reason)
			}
			return tw.Flush()
		},
	}
}
