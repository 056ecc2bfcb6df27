package assemble

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Inner assembles call's conversation within p.TokenBudget, without
// recall (p is call.Params, or a window recall asked for: a smaller
// budget, the host's recall messages dropped). prev is the conversation's
// cached window (the engine holds its window lock while Inner runs); what
// Inner parsed comes back in Assembled.Next.
func Inner(ctx context.Context, d Deps, call *Call, p core.AssembleParams, prev Cached) (Assembled, error) {
	budget := p.TokenBudget
	if budget <= 0 {
		if b, ok := p.RuntimeContext.Int("tokenBudget"); ok && b > 0 {
			budget = b
		}
	}
	if budget <= 0 {
		budget = d.DefaultTokenBudget
	}
	tc := d.Counter
	addition := SystemPromptAddition(p.AvailableTools)
	addTokens := 0
	if addition != "" {
		addTokens = tc.CountText(addition)
	}
	if !call.Known {
		return Assembled{Result: PassThrough(tc, p.Messages, budget)}, nil
	}
	var out Assembled
	msgs, used, n, win, err := readWindow(ctx, d, call, budget-addTokens, prev, &out)
	if errors.Is(err, core.ErrUnknownSession) {
		out.Result = PassThrough(tc, p.Messages, budget)
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if n == 0 {
		out.Result = PassThrough(tc, p.Messages, budget)
		return out, nil
	}
	res := core.AssembleResult{Messages: msgs, EstimatedTokens: used + addTokens,
		SystemPromptAddition: addition, PromptAuthority: core.PromptAuthorityAssembled}
	if win.Cut > 0 || win.Shrunk > 0 {
		res.Cut = &core.AssembleCut{Budget: budget, NextTokens: win.Cut, References: win.Shrunk}
		var why []string
		if win.Shrunk > 0 {
			why = append(why, fmt.Sprintf("%d tool results of the current turn are shown by their reference (lcm_expand returns them)", win.Shrunk))
		}
		if win.Cut > 0 {
			why = append(why, fmt.Sprintf("older context items do not fit the budget of %d tokens (the next older one holds %d); they stay stored, compaction summarises them", budget, win.Cut))
		}
		if win.LeadOmitted > 0 {
			why = append(why, fmt.Sprintf("%d of the context's leading summaries do not fit half the budget beside those shown; they stay stored (lcm_describe, lcm_expand)", win.LeadOmitted))
		}
		res.Cut.Reason = strings.Join(why, "; ")
	}
	out.Result = res
	return out, nil
}

// readWindow reads call's conversation's items backwards until avail
// tokens are used, and in the same snapshot, in one batched read, what
// the rest of the call needs (call.windowRefs). n is the number of items
// the conversation has visited (0: the conversation has no items). On a
// shared store whose conversation another process deleted since the
// session was resolved, it forgets the resolution and returns an error
// wrapping core.ErrUnknownSession (out.Gone). What it parsed goes to
// out.Next, with its size.
func readWindow(ctx context.Context, d Deps, call *Call, avail int, prev Cached, out *Assembled) ([]core.Message, int, int, Window, error) {
	c := call.Conv
	ws := &windowScan{d: d, c: c, avail: avail, prevMsgs: prev.Msgs, prevSums: prev.Sums, created: prev.Created}
	ws.nextMsgs = make(map[uint64]core.Message, len(ws.prevMsgs)+8)
	ws.nextSums = make(map[string]core.Message, len(ws.prevSums))
	shared := d.Shared
	refs := call.windowRefs(shared)
	wantRec := len(refs) > 0 && refs[0].Kind == store.RefConversation
	last := prev.Created
	err := d.Store.View(ctx, func(r store.Reader) error {
		if len(refs) > 0 {
			got, err := r.Get(refs)
			if err != nil {
				return fmt.Errorf("lossless: assemble: %w", records.FromStore(err))
			}
			if err := call.took(refs, got); err != nil {
				return err
			}
		}
		if shared {
			// The conversation may have been deleted and made again by
			// another process since the last assemble: its record, read
			// in this View, says so.
			if ws.created = call.Rec.Created; ws.created != last {
				ws.prevMsgs, ws.prevSums = nil, nil
			}
		}
		return ws.scan(ctx, r)
	})
	if wantRec && !call.HaveRec && errors.Is(err, core.ErrNotFound) {
		// Deleted since it was resolved (retention; on a shared store,
		// by another process): the session is resolved afresh next time.
		out.Gone = true
		return nil, 0, 0, Window{}, fmt.Errorf("lossless: session %q of agent %q: %w", call.Params.SessionID+call.Params.SessionKey, call.Agent, core.ErrUnknownSession)
	}
	if err != nil {
		return nil, 0, 0, Window{}, err
	}
	todo, win, nextMsgs, nextSums, created := ws.todo, ws.win, ws.nextMsgs, ws.nextSums, ws.created
	if err := parseParallel(todo); err != nil {
		return nil, 0, 0, Window{}, err
	}
	for _, j := range todo {
		win.Rev[j.idx] = j.msg
		nextMsgs[j.seq] = j.msg
	}
	// A parsed message holds about eight times its raw bytes (its view,
	// decoded blocks and strings; measured with a heap profile).
	size := int64(0)
	for _, m := range nextMsgs {
		size += 8*int64(len(m.Raw())) + 256
	}
	for _, m := range nextSums {
		size += 8*int64(len(m.Raw())) + 256
	}
	// Bounded by the engine's cache budget (Config.AssembleCacheBytes).
	out.Next, out.Size = &Cached{Msgs: nextMsgs, Sums: nextSums, Created: created}, size
	msgs, used := win.Chronological()
	if len(ws.lead) > 0 {
		msgs = append(append(make([]core.Message, 0, len(ws.lead)+len(msgs)), ws.lead...), msgs...)
		used += ws.leadTok
	}
	return msgs, used, win.Scanned, win, nil
}

// PassThrough returns the host's messages trimmed to budget (newest kept),
// counted with tc: what a session never ingested gets.
func PassThrough(tc core.TokenCounter, msgs []core.Message, budget int) core.AssembleResult {
	used := 0
	start := len(msgs)
	for start > 0 {
		n := core.CountMessage(tc, msgs[start-1])
		if used+n > budget {
			break
		}
		used += n
		start--
	}
	out := msgs[start:]
	if start > 0 {
		var dropped []core.Message
		out, dropped = DropLeadingToolResults(out)
		used -= core.CountMessages(tc, dropped)
	}
	return core.AssembleResult{Messages: append([]core.Message(nil), out...), EstimatedTokens: used,
		PromptAuthority: core.PromptAuthorityAssembled}
}
