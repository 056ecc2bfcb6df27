package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// maxCompactRounds bounds the compaction loops.
const maxCompactRounds = 64

// compactOutcome is the result of compacting one session to budget.
type compactOutcome struct {
	rounds        int
	internal      int
	before, after int // whole context (details) or the result's figures
	winBefore     int
	winAfter      int
	wall          float64
	// session and file are the session id and file after any rotation;
	// sessions lists every session id in order (the first is the input's).
	sessions []string
	file     string
}

// compactToBudget calls Compact as overflow recovery does (force, target
// budget) until the tokens after are within budget, compaction stops
// making progress, or maxRounds is reached. It follows rotations.
func compactToBudget(ctx context.Context, e core.Engine, session, key, file string, budget, maxRounds int, p Progress) (compactOutcome, error) {
	o := compactOutcome{sessions: []string{session}, file: file}
	cur := session
	start := time.Now()
	defer func() { o.wall = time.Since(start).Seconds() }()
	for o.rounds < maxRounds {
		if err := ctx.Err(); err != nil {
			return o, err
		}
		res, err := e.Compact(ctx, core.CompactParams{SessionID: cur, SessionKey: key,
			SessionFile: o.file, TokenBudget: budget, Force: true, CompactionTarget: core.CompactionTargetBudget})
		o.rounds++
		p.Add(1)
		if err != nil {
			o.wall = time.Since(start).Seconds()
			return o, fmt.Errorf("compact round %d: %w", o.rounds, err)
		}
		var d compactDetails
		if res.Result != nil {
			d = parseDetails(res.Result)
			if o.rounds == 1 || o.before == 0 {
				o.before, o.winBefore = d.before, res.Result.TokensBefore
			}
			o.after, o.winAfter = d.after, res.Result.TokensAfter
			o.internal += d.rounds
			if res.Result.SessionID != "" && res.Result.SessionID != cur {
				cur = res.Result.SessionID
				o.sessions = append(o.sessions, cur)
			}
			if res.Result.SessionFile != "" {
				o.file = res.Result.SessionFile
			}
		}
		if !res.OK {
			o.wall = time.Since(start).Seconds()
			return o, fmt.Errorf("compact round %d: not ok: %s", o.rounds, res.Reason)
		}
		if !res.Compacted || res.Result == nil || d.after <= budget {
			break
		}
	}
	o.wall = time.Since(start).Seconds()
	return o, nil
}

// compactDetails are the figures read from a compaction result.
type compactDetails struct{ before, after, rounds int }

// parseDetails returns the whole context's tokens before and after
// (details.contextTokensBefore/After when present, else the result's
// tokensBefore/After) and details.rounds.
func parseDetails(r *core.CompactOutcome) compactDetails {
	d := compactDetails{before: r.TokensBefore, after: r.TokensAfter}
	var x struct {
		Before *int `json:"contextTokensBefore"`
		After  *int `json:"contextTokensAfter"`
		Rounds int  `json:"rounds"`
	}
	if len(r.Details) > 0 && json.Unmarshal(r.Details, &x) == nil {
		if x.Before != nil && x.After != nil {
			d.before, d.after = *x.Before, *x.After
		}
		d.rounds = x.Rounds
	}
	return d
}

// compact runs the compact suite on the synthetic transcript (and on each
// real transcript given): the engine and the legacy baseline.
func (r *runner) compact(ctx context.Context, rep *CompactReport) error {
	cfg := r.cfg
	p := cfg.Progress
	msgs, _, err := synthMessages(cfg.Seed, cfg.Messages)
	if err != nil {
		return err
	}
	rep.Messages, rep.Budget = len(msgs), cfg.Budget
	d, err := r.dir("compact")
	if err != nil {
		return err
	}
	e, err := cfg.Engine.Open(ctx, d, cfg.Budget)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeEngine(e)
	const session = "compact"
	p.Step("compact: ingest the history", len(msgs))
	if err := ingestBatched(ctx, e, session, sessionKey(session), msgs, p); err != nil {
		return err
	}
	if err := r.flush(ctx, cfg.Engine, e); err != nil {
		return err
	}
	var errs []error
	p.Step("compact: rounds until under budget", 8)
	o, err := compactToBudget(ctx, e, session, sessionKey(session), "", cfg.Budget, maxCompactRounds, p)
	rep.WallS, rep.Rounds, rep.InternalRounds, rep.TokensBefore, rep.TokensAfter = o.wall, o.rounds, o.internal, o.before, o.after
	rep.WindowTokensBefore, rep.WindowTokensAfter = o.winBefore, o.winAfter
	if err != nil {
		errs = append(errs, err)
	} else {
		rep.UnderBudget = o.after > 0 && o.after <= cfg.Budget
		res, err := e.Assemble(ctx, core.AssembleParams{SessionID: o.sessions[len(o.sessions)-1],
			SessionKey: sessionKey(session), TokenBudget: cfg.Budget, Prompt: assemblePrompt})
		if err != nil {
			errs = append(errs, fmt.Errorf("assemble after compaction: %w", err))
		} else {
			rep.AssembledTokens = res.EstimatedTokens
			if cfg.Identifiers != nil {
				rep.Identifiers, rep.IdentifierRetentionPct = retention(cfg.Identifiers, msgs, res.Messages)
			}
		}
	}

	if cfg.Legacy.Open != nil {
		rep.Legacy = r.legacyCompact(ctx, msgs, cfg.Legacy, "legacy")
		if rep.Legacy.Error != "" {
			errs = append(errs, fmt.Errorf("legacy: %s", rep.Legacy.Error))
		}
	}
	if cfg.LegacyExact.Open != nil {
		rep.LegacyExact = r.legacyCompact(ctx, msgs, cfg.LegacyExact, "legacy-exact")
		if rep.LegacyExact.Error != "" {
			errs = append(errs, fmt.Errorf("legacy-exact: %s", rep.LegacyExact.Error))
		}
	}

	for i, path := range cfg.Transcripts {
		tc := TranscriptCompact{Path: path}
		sid := fmt.Sprintf("compact-transcript-%d", i)
		p.Step("compact: "+filepath.Base(path), 8)
		_, err := bootstrap(ctx, e, sid, path)
		if err == nil {
			err = r.flush(ctx, cfg.Engine, e)
		}
		if err == nil {
			var o compactOutcome
			o, err = compactToBudget(ctx, e, sid, sessionKey(sid), path, cfg.Budget, maxCompactRounds, p)
			tc.WallS, tc.Rounds, tc.TokensBefore, tc.TokensAfter = o.wall, o.rounds, o.before, o.after
		}
		if err != nil {
			tc.Error = err.Error()
			errs = append(errs, err)
		}
		rep.Transcripts = append(rep.Transcripts, tc)
	}
	return errors.Join(errs...)
}

// legacyCompact compacts a session file of the same messages with the
// legacy engine t (named name in the output), up to three rounds as
// overflow recovery does.
func (r *runner) legacyCompact(ctx context.Context, msgs []core.Message, t Target, name string) *LegacyCompact {
	cfg := r.cfg
	out := &LegacyCompact{Counter: t.Counter}
	d, err := r.dir("compact-" + name)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	file := filepath.Join(d, "session.jsonl")
	info, err := synth.WriteSessionFile(file, cfg.Seed, cfg.Messages)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	e, err := t.Open(ctx, d, cfg.Budget)
	if err != nil {
		out.Error = "open: " + err.Error()
		return out
	}
	defer closeEngine(e)
	cfg.Progress.Step("compact: "+name, 3)
	o, err := compactToBudget(ctx, e, info.ID, sessionKey(info.ID), file, cfg.Budget, 3, cfg.Progress)
	out.WallS, out.Rounds, out.TokensBefore, out.TokensAfter = o.wall, o.rounds, o.before, o.after
	if err != nil {
		out.Error = err.Error()
		return out
	}
	if cfg.Identifiers != nil {
		tr, err := core.ReadTranscript(o.file)
		if err != nil {
			out.Error = err.Error()
			return out
		}
		_, out.IdentifierRetentionPct = retention(cfg.Identifiers, msgs, tr.Window().Messages())
	}
	return out
}

// retention returns the number of distinct identifiers in the input
// messages that are no longer in the context verbatim (compacted away), and
// the percentage of them still found in the context's text (summaries).
func retention(ids IdentifierFunc, input, context []core.Message) (int, float64) {
	kept := make(map[string]bool, len(context))
	var ctxText strings.Builder
	for _, m := range context {
		kept[string(m.Raw())] = true
		ctxText.WriteString(m.SearchText(false))
		ctxText.WriteByte('\n')
	}
	var gone strings.Builder
	for _, m := range input {
		if !kept[string(m.Raw())] {
			gone.WriteString(m.SearchText(false))
			gone.WriteByte('\n')
		}
	}
	all := ids(gone.String())
	if len(all) == 0 {
		return 0, 0
	}
	text := ctxText.String()
	found := 0
	for _, id := range all {
		if strings.Contains(text, id) {
			found++
		}
	}
	return len(all), 100 * float64(found) / float64(len(all))
}
