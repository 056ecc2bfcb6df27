package lossless

// Cross-session recall (issue #6): a full-text index (package index) of
// every stored message and summary, kept in <StoreDir>/index beside the
// store and rebuilt from it when missing, stale or corrupt; and recall in
// Assemble, where the turn's prompt is the query.
//
// Ranking, the question split, the rendered block and the index's
// lifecycle (open and rebuild, a shared store's catch-up, close) are
// package lossless/internal/recall's. Here: the engine's side of it, thin wrappers
// and the door of recall in Assemble. Hooks in the other files of
// the package (one line each): ingestInto (ingest.go) and replace
// (store_conv.go) hand what they committed to the index; Open (engine.go)
// opens it into Engine.recall and Close closes it; Assemble (assemble.go)
// starts with assembleWithRecall.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/internal/recall"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

// recaller is the recall state of one Engine.
// recaller is the recall state of one Engine: package recall's Index.
type recaller = recall.Index

// openRecallOrLog opens the recall index for Open, before any write, so
// that the generation it counts from is exact; nil when it cannot be opened
// (logged; the engine works without recall). Its error is ctx's, when ctx
// ended the open (Open fails with it).
func (e *Engine) openRecallOrLog(ctx context.Context) (*recaller, error) {
	r, err := recall.OpenBleve(ctx, e.indexDir(), e.st, e.indexOptions())
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("lossless: open the recall index: %w", err)
		}
		slog.Error("lossless: recall index unavailable", "dir", e.indexDir(), "err", err)
		return nil, nil
	}
	return r, nil
}

// storeRecall is the recall state over a store's own search (OpenStore;
// recall.OverStore).
func (e *Engine) storeRecall(ix index.Recall) *recaller {
	return recall.OverStore(e.st, ix, e.indexOptions())
}

// indexOptions are the recall index's options: the tests' hooks.
func (e *Engine) indexOptions() recall.IndexOptions {
	h := e.cfg.hooks
	return recall.IndexOptions{MaxLag: h.indexMaxLag, BeforeBatch: h.indexBatch, Rebuild: h.rebuild, CatchUpEvery: h.catchUpEvery}
}

func (e *Engine) indexDir() string { return filepath.Join(e.cfg.StoreDir, "index") }

// RecallStatus returns the state of the recall index.
func (e *Engine) RecallStatus() recalled.Status {
	done, err := e.enter()
	if err != nil {
		return recalled.Status{Error: err.Error()}
	}
	defer done()
	if e.recall == nil {
		return recalled.Status{}
	}
	return e.recall.Status()
}

// WaitRecallIndex waits until the opening rebuild (if any) is done and
// every added doc is searchable.
func (e *Engine) WaitRecallIndex(ctx context.Context) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	if e.recall == nil {
		return nil
	}
	return e.recall.Wait(ctx)
}

// CompactRecallIndex waits for the recall index as WaitRecallIndex does,
// then merges its segments into one, dropping the docs replaced or
// deleted since their segment was written. Queries get cheaper, and
// ranking stops depending on when background merges ran: BM25's average
// field length comes from the segments' term dictionaries, which count a
// term once per segment and keep replaced docs' terms until a merge. It
// blocks until done; a store that brings its own search (PostgreSQL)
// ranks from its own totals and has nothing to merge.
func (e *Engine) CompactRecallIndex(ctx context.Context) error {
	if err := e.WaitRecallIndex(ctx); err != nil {
		return err
	}
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	if e.recall == nil {
		return nil
	}
	return e.recall.Compact(ctx)
}

// closeRecall closes the index (Close calls it, once, with no call in
// flight) and returns its error.
func (e *Engine) closeRecall() error {
	if r := e.recall; r != nil {
		return r.Close()
	}
	return nil
}

// summaryDocID is a summary's doc id, "<conv>/<summary id>" (messages':
// "<conv>:<seq>", recall.MessageDocID).
func summaryDocID(c convID, id string) string { return recall.SummaryDocID(c, id) }

// parsedMessageDoc is the recall doc of a message just stored, already
// parsed (ingest; recall.MessageDoc).
func parsedMessageDoc(c convID, agent string, seq uint64, r msgRecord, m core.Message) (index.Doc, bool) {
	return recall.MessageDoc(c, agent, seq, r.Role, r.Timestamp, r.Flags&flagHeartbeat != 0, m)
}

// indexMessages hands messages just committed to the index (ingestInto).
func (e *Engine) indexMessages(c convID, agent string, ps []*pending) {
	r := e.recall
	if r == nil || len(ps) == 0 {
		return
	}
	docs := make([]index.Doc, 0, len(ps))
	for _, p := range ps {
		if d, ok := parsedMessageDoc(c, agent, p.Seq, msgRecord{Flags: p.Flags, Timestamp: p.Msg.Timestamp(), Role: p.Msg.Role()}, p.Msg); ok {
			docs = append(docs, d)
		}
	}
	// Waits here, holding only c's lock, while the index queue is full.
	r.AddMessages(c, len(ps), ps[0].Seq, ps[len(ps)-1].Seq, contiguous(ps), docs)
}

// contiguous reports whether ps are messages seq, seq+1, ... in order (those
// of one write are).
func contiguous(ps []*pending) bool {
	for i, p := range ps {
		if p.Seq != ps[0].Seq+uint64(i) {
			return false
		}
	}
	return true
}

// unindexConversation removes conversation c's docs from the recall index
// (retention deletes c next; recall.Index.Unindex).
func (e *Engine) unindexConversation(ctx context.Context, c convID) error {
	if e.recall == nil {
		return nil
	}
	return e.recall.Unindex(ctx, c)
}

// forgetIndexedConversation takes a deleted conversation's messages and
// summaries out of the index generation, as storeGeneration no longer
// counts them.
func (e *Engine) forgetIndexedConversation(rec convRecord) {
	if e.recall != nil {
		e.recall.Forget(rec)
	}
}

// indexSummary hands a summary just committed to the index (replace).
func (e *Engine) indexSummary(c convID, agent string, s dag.Summary) {
	if e.recall != nil {
		e.recall.AddSummary(c, agent, s)
	}
}

// Recall returns the items Assemble's recall injects for p.Prompt, best
// first, at most k (Config.Recall.K when k <= 0): searched across the
// agent's other conversations and the part of this one outside the
// assembled context (what the last Assemble of the session showed), never
// another agent's unless Config.Recall.CrossAgent, and only those that
// pass the relevance gate (Config.Recall.MinScore): none when the prompt
// has nothing relevant in the history. It is the retrieval Assemble
// renders; the recall benchmark measures it (RecallWith with a negative
// MinScore gives the ranking before the gate).
func (e *Engine) Recall(ctx context.Context, p core.AssembleParams, k int) ([]recalled.Item, error) {
	return e.RecallWith(ctx, p, recalled.Options{K: k})
}

// RecallWith is Recall with options.
func (e *Engine) RecallWith(ctx context.Context, p core.AssembleParams, o recalled.Options) ([]recalled.Item, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	call := &assembleCall{Params: p, Agent: e.agentFor("", p.SessionKey)}
	c, err := e.lookup(ctx, call.Agent, p.SessionID, p.SessionKey)
	call.Conv, call.Known = c, err == nil
	rc := e.recallCall(call)
	return recall.Rank(ctx, e.recallDeps(), &rc, o, nil, e.shown(call))
}

// assembleWithRecall is Assemble when recall applies (enabled, a
// prompt; ok false when it does not): the door of recall in Assemble.
// Recall computes its block from what it is handed: the engine assembles
// each window it asks for (assembleWindow: package assemble's window under
// the window lock) and hands it over with what the window cache shows.
func (e *Engine) assembleWithRecall(ctx context.Context, call *assembleCall) (core.AssembleResult, bool, error) {
	rc := e.recallCall(call)
	a, p, ok := recall.Begin(ctx, e.recallDeps(), &rc)
	if !ok {
		return core.AssembleResult{}, false, nil
	}
	for more := true; more; {
		res, err := e.assembleWindow(ctx, call, p)
		p, more = a.Window(ctx, recall.Window{Result: res, Err: err, Shown: e.shown(call)})
	}
	res, err := a.Result()
	return res, true, err
}

// recallDeps are what recall reads of the engine.
func (e *Engine) recallDeps() recall.Deps {
	return recall.Deps{Config: e.cfg.Recall, Counter: e.tc, Store: e.st, Index: e.recall, Names: e.lru}
}

// recallCall is call as package recall sees it.
func (e *Engine) recallCall(call *assembleCall) recall.Call {
	rc := recall.Call{Params: call.Params, Budget: e.budgetFor(call.Params.TokenBudget, call.Params.RuntimeContext),
		Agent: call.Agent, Conv: call.Conv, Known: call.Known}
	if call.Params.HasTool(ToolGrep) {
		rc.GrepTool = ToolGrep
	}
	return rc
}

// shown is what the last assembled window of call's conversation shows
// (nothing when the session is not stored).
func (e *Engine) shown(call *assembleCall) recall.Shown {
	if !call.Known {
		return recall.Shown{}
	}
	from, sums := e.inContext(call.Conv)
	return recall.Shown{From: from, Summaries: sums}
}

// inContext returns what the last assembled context of c shows: raw
// messages from the smallest seq on, and the summaries' doc ids.
// (Assemble's recall runs right after the inner assemble that set them;
// what the window shows of other conversations, or of messages the host
// passed through, is excluded by text, see recall.)
func (e *Engine) inContext(c convID) (uint64, map[string]bool) {
	s, unlock := e.lockWindow(c)
	defer unlock()
	from := uint64(1<<63 - 1)
	for seq := range s.asmMsgs {
		from = min(from, seq)
	}
	var ex map[string]bool
	if len(s.asmSums) > 0 {
		ex = make(map[string]bool, len(s.asmSums))
		for id := range s.asmSums {
			ex[summaryDocID(c, id)] = true
		}
	}
	return from, ex
}

// IsRecallMessage reports whether m is a recall message that Assemble
// made (recalled.IsMessage): a user message whose text starts with the
// recall block's fixed head (after a host's "[...]" time stamp, if any)
// and ends with its closing tag. Recognised, it is dropped from
// Assemble's input and window (a fresh one is appended), and never
// indexed or recalled.
func IsRecallMessage(m core.Message) bool { return recalled.IsMessage(m) }

// AssembleWithDetails is Assemble that also says how recall went: whether
// a block was injected, found nothing, was off or failed (a failure never
// fails the call), and whether only part of the history was searched
// because the recall index is being rebuilt (Assemble never waits for a
// rebuild).
func (e *Engine) AssembleWithDetails(ctx context.Context, p core.AssembleParams) (core.AssembleResult, recalled.Details, error) {
	d := &recalled.Details{}
	res, err := e.Assemble(recalled.WithDetails(ctx, d), p)
	if d.Recall.Partial && d.Recall.Status != recalled.Failed {
		msg := fmt.Sprintf("the recall index is being rebuilt (%d docs so far): only what the old index holds was searched", d.Recall.Rebuilt)
		if d.Recall.Reason != "" {
			msg = d.Recall.Reason + "; " + msg
		}
		d.Recall.Reason = msg
	}
	return res, *d, err
}
