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

// Assemble returns the conversation's active context that fits the token
// budget (the engine's Assemble; see its documentation): it resolves the
// call once (Resolve), assembles its window with recall when it applies
// (Port.Recall, else Inner), then post-processes the result (After: the
// fork prefix of a subagent, the host's count, the context projection).
func Assemble(ctx context.Context, port Port, p core.AssembleParams) (core.AssembleResult, error) {
	call, res, err := assembleCall(ctx, port, p)
	if err != nil {
		return core.AssembleResult{}, err
	}
	// Fork prefix of a subagent, the host's count, contextProjection
	// (projection.go; it enters on its own, after the sweep of expired
	// subagent preparations, which does too).
	if err := After(ctx, port, call, &res); err != nil {
		return core.AssembleResult{}, err
	}
	return res, nil
}

// assembleCall resolves the call once (Resolve: everything after takes
// it) and assembles its window, with recall when it applies.
func assembleCall(ctx context.Context, port Port, p core.AssembleParams) (*Call, core.AssembleResult, error) {
	done, err := port.Enter()
	if err != nil {
		return nil, core.AssembleResult{}, err
	}
	defer done()
	call, err := Resolve(ctx, port, p)
	if err != nil {
		return nil, core.AssembleResult{}, err
	}
	res, ok, err := port.Recall(ctx, call)
	if !ok {
		res, err = Inner(ctx, port, call, call.Params)
	}
	return call, res, err
}

// Inner assembles call's conversation within p.TokenBudget, without
// recall (p is call.Params, or recall's inner call: a smaller budget, the
// host's recall messages dropped).
func Inner(ctx context.Context, port Port, call *Call, p core.AssembleParams) (core.AssembleResult, error) {
	budget := p.TokenBudget
	if budget <= 0 {
		if b, ok := p.RuntimeContext.Int("tokenBudget"); ok && b > 0 {
			budget = b
		}
	}
	if budget <= 0 {
		budget = port.DefaultTokenBudget()
	}
	tc := port.Counter()
	addition := SystemPromptAddition(p.AvailableTools)
	addTokens := 0
	if addition != "" {
		addTokens = tc.CountText(addition)
	}
	if !call.Known {
		return PassThrough(tc, p.Messages, budget), nil
	}
	msgs, used, n, win, err := readWindow(ctx, port, call, budget-addTokens)
	if errors.Is(err, core.ErrUnknownSession) {
		return PassThrough(tc, p.Messages, budget), nil
	}
	if err != nil {
		return core.AssembleResult{}, err
	}
	if n == 0 {
		return PassThrough(tc, p.Messages, budget), nil
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
	return res, nil
}

// readWindow reads call's conversation's items backwards until avail
// tokens are used, and in the same snapshot, in one batched read, what
// the rest of the call needs (call.windowRefs). n is the number of items
// the conversation has visited (0: the conversation has no items). On a
// shared store whose conversation another process deleted since the
// session was resolved, it forgets the resolution and returns an error
// wrapping core.ErrUnknownSession.
func readWindow(ctx context.Context, port Port, call *Call, avail int) ([]core.Message, int, int, Window, error) {
	c := call.Conv
	prev, put := port.LockWindow(c)
	stored := false
	defer func() {
		if !stored {
			put(nil, 0)
		}
	}()
	ws := &windowScan{port: port, c: c, avail: avail, prevMsgs: prev.Msgs, prevSums: prev.Sums, created: prev.Created}
	ws.nextMsgs = make(map[uint64]core.Message, len(ws.prevMsgs)+8)
	ws.nextSums = make(map[string]core.Message, len(ws.prevSums))
	shared := port.Shared()
	refs := call.windowRefs(shared)
	wantRec := len(refs) > 0 && refs[0].Kind == store.RefConversation
	last := prev.Created
	err := port.Store().View(ctx, func(r store.Reader) error {
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
		port.ForgetResolved(c)
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
	stored = true
	put(&Cached{Msgs: nextMsgs, Sums: nextSums, Created: created}, size)
	out, used := win.Chronological()
	if len(ws.lead) > 0 {
		out = append(append(make([]core.Message, 0, len(ws.lead)+len(out)), ws.lead...), out...)
		used += ws.leadTok
	}
	return out, used, win.Scanned, win, nil
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
