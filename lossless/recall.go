package lossless

// Cross-session recall (issue #6): a full-text index (package index) of
// every stored message and summary, kept in <StoreDir>/index beside the
// store and rebuilt from it when missing, stale or corrupt; and recall in
// Assemble, where the turn's prompt is the query.
//
// Ranking, the question split and the rendered block are package
// lossless/recall's: the engine implements its Port (recallPort, below)
// and keeps the index's lifecycle here (open, rebuild, close; the
// catch-up of a shared store's index in recall_catchup.go) and the hooks
// that feed it: ingestInto (ingest.go) and replace (store_conv.go) hand
// what they committed to the index; Open (engine.go) opens it into
// Engine.recall and Close closes it; Assemble (assemble.go) starts with
// assembleWithRecall.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/index/bleveindex"
	"github.com/lossless-engine/contextengine/lossless/recall"
	"github.com/lossless-engine/contextengine/store"
)

// Recall defaults (Config.Recall; package recall's).
const (
	// DefaultRecallShare is the share of the token budget recall may use.
	DefaultRecallShare = recall.DefaultShare
	// DefaultRecallK is the number of recalled turns.
	DefaultRecallK = recall.DefaultK
	// DefaultRecallMinScore is the relevance gate's threshold
	// (Config.Recall.MinScore, recall.DefaultMinScore).
	DefaultRecallMinScore = recall.DefaultMinScore
	// DefaultRecallQuestionShare is the share of the budget recall may
	// take for a question about the past whose answer lies outside the
	// assembled context (Config.Recall.QuestionShare,
	// recall.DefaultQuestionShare).
	DefaultRecallQuestionShare = recall.DefaultQuestionShare
)

// Recall statuses (RecallReport.Status).
const (
	RecallInjected = recall.Injected // a recall block ends the context
	RecallNone     = recall.None     // searched; nothing relevant (or nothing fit)
	RecallOff      = recall.Off      // not searched: disabled, no prompt or no room
	RecallFailed   = recall.Failed   // the index or a store read failed (Reason)
)

// RecallConfig is Config.Recall (recall.Config).
type RecallConfig = recall.Config

// RecallItem is one recalled turn or summary (recall.Item).
type RecallItem = recall.Item

// RecallOptions adjust Engine.RecallWith (recall.Options).
type RecallOptions = recall.Options

// AssembleDetails says how an Assemble went, beyond its result
// (AssembleWithDetails; recall.Details).
type AssembleDetails = recall.Details

// RecallReport is what recall did in one Assemble (recall.Report).
type RecallReport = recall.Report

// recaller is the recall state of one Engine.
type recaller struct {
	// ix counts the store's generation itself (index.AddGeneration): the
	// engine holds no lock of its own while ix.Add waits for room in a
	// full queue. It is the Bleve index (*bleveindex.Index) unless a backend
	// brings its own search.
	ix index.Recall

	rebuild chan struct{} // closed when the opening rebuild (or catch-up) ends
	cancel  context.CancelFunc
	// bg, when set, is closed when the background catch-up of a shared
	// store's recall ends (recall_catchup.go).
	bg chan struct{}
	// rebuildDone counts the docs the rebuild has indexed (those of an
	// interrupted rebuild it resumed included).
	rebuildDone atomic.Int64
	errMu       sync.Mutex
	rebuildErr  error // under errMu

	// winKeys caches the text keys of each conversation's last window
	// (recall.WindowKeys).
	winKeys recall.WindowKeys
}

// windowKeys caches the text keys of a conversation's last assembled
// window: most of it is the same messages (the same core.Message values,

// openRecallOrLog opens the recall index for Open, before any write, so
// that the generation it counts from is exact; nil when it cannot be opened
// (logged; the engine works without recall).
func (e *Engine) openRecallOrLog() *recaller {
	r, err := e.openRecall()
	if err != nil {
		slog.Error("lossless: recall index unavailable", "dir", e.indexDir(), "err", err)
		return nil
	}
	return r
}

func (e *Engine) indexDir() string { return filepath.Join(e.cfg.StoreDir, "index") }

// storeGeneration counts what the index holds when up to date: messages
// plus summaries over all conversations.
func (e *Engine) storeGeneration() (uint64, error) {
	var gen uint64
	err := e.st.View(context.Background(), func(r store.Reader) error {
		for rec, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: recall: conversation record: %w", fromStore(err))
			}
			if rec.NextSeq > 0 {
				gen += rec.NextSeq - 1
			}
			gen += uint64(rec.Summaries)
		}
		return nil
	})
	return gen, err
}

func (e *Engine) openRecall() (*recaller, error) {
	gen, err := e.storeGeneration()
	if err != nil {
		return nil, fmt.Errorf("lossless: recall: %w", err)
	}
	ix, err := bleveindex.Open(e.indexDir(), bleveindex.Options{Generation: gen, MaxLag: e.cfg.hooks.indexMaxLag, BeforeBatch: e.cfg.hooks.indexBatch})
	if err != nil {
		return nil, fmt.Errorf("lossless: recall: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &recaller{ix: ix, rebuild: make(chan struct{}), cancel: cancel}
	if !ix.NeedsRebuild() {
		close(r.rebuild)
		return r, nil
	}
	reason := ix.RebuildReason()
	resumed := ix.Resumable()
	r.rebuildDone.Store(int64(resumed))
	slog.Info("lossless: rebuilding the recall index from the store (recall searches what the old index holds meanwhile)",
		"reason", reason, "generation", gen, "resumedAfterDocs", resumed)
	source := e.indexSource
	if hook := e.cfg.hooks.rebuild; hook != nil {
		source = func(ctx context.Context, after []byte, yield func(index.Doc, []byte) bool) error {
			n := 0
			return e.indexSource(ctx, after, func(d index.Doc, pos []byte) bool {
				hook(ctx, n)
				n++
				return yield(d, pos)
			})
		}
	}
	go func() {
		defer close(r.rebuild)
		start := time.Now()
		err := ix.Rebuild(ctx, source, func(done int) {
			r.rebuildDone.Store(int64(done))
			if done%50_000 < 1000 {
				slog.Info("lossless: recall index rebuild", "docs", done)
			}
		})
		if err != nil && ctx.Err() != nil {
			// Close interrupted it (a short-lived process, e.g. one CLI
			// command): not a failure; the next Open resumes it where it
			// stopped.
			slog.Info("lossless: recall index rebuild interrupted by Close; the next open resumes it", "docs", r.rebuildProgress())
			return
		}
		r.errMu.Lock()
		r.rebuildErr = err
		r.errMu.Unlock()
		if err != nil {
			slog.Error("lossless: recall index rebuild failed", "err", err)
			return
		}
		slog.Info("lossless: recall index rebuilt", "reason", reason, "elapsed", time.Since(start).Round(time.Millisecond))
	}()
	return r, nil
}

func (r *recaller) rebuildProgress() int64 {
	return r.rebuildDone.Load()
}

// RecallStatus reports the recall index: whether it is rebuilding, how
// many docs the rebuild indexed so far, and how many added docs are not yet
// searchable.
type RecallStatus struct {
	Enabled    bool   `json:"enabled"`
	Rebuilding bool   `json:"rebuilding"`
	Rebuilt    int64  `json:"rebuilt"`
	Lag        int    `json:"lag"`
	Error      string `json:"error,omitempty"`
}

// RecallStatus returns the state of the recall index.
func (e *Engine) RecallStatus() RecallStatus {
	done, err := e.enter()
	if err != nil {
		return RecallStatus{Error: err.Error()}
	}
	defer done()
	r := e.recall
	if r == nil {
		return RecallStatus{}
	}
	st := RecallStatus{Enabled: true, Lag: r.ix.Lag()}
	select {
	case <-r.rebuild:
	default:
		st.Rebuilding = true
	}
	st.Rebuilt = r.rebuildDone.Load()
	r.errMu.Lock()
	if r.rebuildErr != nil {
		st.Error = r.rebuildErr.Error()
	}
	r.errMu.Unlock()
	return st
}

// WaitRecallIndex waits until the opening rebuild (if any) is done and
// every added doc is searchable.
func (e *Engine) WaitRecallIndex(ctx context.Context) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	r := e.recall
	if r == nil {
		return nil
	}
	if err := r.waitRebuild(ctx); err != nil {
		return err
	}
	return r.ix.Flush(ctx)
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
	c, ok := e.recall.ix.(interface{ Compact(context.Context) error })
	if !ok {
		return nil
	}
	if err := c.Compact(ctx); err != nil {
		return fmt.Errorf("lossless: compact the recall index: %w", err)
	}
	return nil
}

// rebuilding reports whether the opening rebuild of the index still runs
// (recall then searches the old index: what it holds).
func (r *recaller) rebuilding() bool {
	select {
	case <-r.rebuild:
		return false
	default:
		return true
	}
}

// waitRebuild waits until the opening rebuild of the index (if any) ends.
func (r *recaller) waitRebuild(ctx context.Context) error {
	select {
	case <-r.rebuild:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("lossless: recall: %w", ctx.Err())
	}
}

// closeRecall closes the index (Close calls it, once, with no call in
// flight) and returns its error (docs it could not write are missing: the
// next Open finds the index stale and rebuilds it, but the caller hears
// of it).
func (e *Engine) closeRecall() error {
	if r := e.recall; r != nil {
		r.cancel() // an unfinished rebuild stops; the next Open redoes it
		<-r.rebuild
		if r.bg != nil {
			<-r.bg
		}
		if err := r.ix.Close(); err != nil {
			return fmt.Errorf("lossless: close the recall index: %w", err)
		}
	}
	return nil
}

// indexSource yields every stored message and summary (the store is the
// source of truth of the index), from one snapshot: conversations in id
// order, each one's messages in seq order, then its summaries in id order.
// A doc's position is its conversation id, 0 (message) or 1 (summary), and
// the message's seq (8 bytes, big-endian) or the summary's id; with after
// set, it yields the docs after that one (a rebuild resumed). The position
// is the store's order, not its keys: a position written by a rebuild of an
// earlier build (the same bytes) resumes here.
func (e *Engine) indexSource(ctx context.Context, after []byte, yield func(index.Doc, []byte) bool) error {
	var from convID
	var fromKind byte
	var fromRest []byte
	resume := len(after) > 0
	if resume {
		if len(after) < 9 || after[8] > 1 || (after[8] == 0 && len(after) != 17) {
			return fmt.Errorf("lossless: recall: bad rebuild position %x", after)
		}
		copy(from[:], after[:8])
		fromKind, fromRest = after[8], after[9:]
	}
	return e.st.View(ctx, func(r store.Reader) error {
		var convs []convID
		var agents []string
		for rec, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: recall: conversation record: %w", fromStore(err))
			}
			if resume && bytes.Compare(rec.ID[:], from[:]) < 0 {
				continue
			}
			convs = append(convs, rec.ID)
			agents = append(agents, rec.Agent)
		}
		pos := make([]byte, 0, 64)
		for i, c := range convs {
			if err := ctx.Err(); err != nil {
				return err
			}
			at := resume && c == from // the conversation the position is in
			msgs, start := true, uint64(0)
			if at {
				seq, _ := getU64(fromRest)
				msgs = fromKind == 0 && seq < math.MaxUint64
				start = seq + 1
			}
			if msgs {
				for m, err := range r.Messages(c, start, true) {
					if err != nil {
						return fromStore(err)
					}
					d, ok := messageDoc(c, agents[i], m.Seq, m)
					pos = append(append(pos[:0], c[:]...), 0)
					pos = binary.BigEndian.AppendUint64(pos, m.Seq)
					if ok && !yield(d, pos) {
						return nil
					}
				}
			}
			for s, err := range r.Summaries(c) {
				if err != nil {
					return fromStore(err)
				}
				if at && fromKind == 1 && s.ID <= string(fromRest) {
					continue
				}
				pos = append(append(append(pos[:0], c[:]...), 1), s.ID...)
				if !yield(summaryDoc(c, agents[i], s), pos) {
					return nil
				}
			}
		}
		return nil
	})
}

// Doc ids: "<conv>:<seq>" for a message, "<conv>/<summary id>" for a summary.

// Doc ids: "<conv>:<seq>" for a message, "<conv>/<summary id>" for a summary.
func messageDocID(c convID, seq uint64) string { return recall.MessageDocID(c, seq) }
func summaryDocID(c convID, id string) string  { return recall.SummaryDocID(c, id) }

func messageDoc(c convID, agent string, seq uint64, r msgRecord) (index.Doc, bool) {
	if r.Flags&flagHeartbeat != 0 {
		return index.Doc{}, false
	}
	m, err := core.ParseMessage(r.Raw)
	if err != nil {
		return index.Doc{}, false
	}
	return parsedMessageDoc(c, agent, seq, r, m)
}

// parsedMessageDoc is messageDoc of a message already parsed (ingest).
func parsedMessageDoc(c convID, agent string, seq uint64, r msgRecord, m core.Message) (index.Doc, bool) {
	return recall.MessageDoc(c, agent, seq, r.Role, r.Timestamp, r.Flags&flagHeartbeat != 0, m)
}

func summaryDoc(c convID, agent string, s dag.Summary) index.Doc {
	return recall.SummaryDoc(c, agent, s)
}

// indexMessages hands messages just committed to the index (ingestInto).
func (e *Engine) indexMessages(c convID, agent string, ps []*pending) {
	r := e.recall
	if r == nil || len(ps) == 0 {
		return
	}
	docs := make([]index.Doc, 0, len(ps))
	for _, p := range ps {
		if d, ok := parsedMessageDoc(c, agent, p.seq, msgRecord{Flags: p.flags, Timestamp: p.msg.Timestamp(), Role: p.msg.Role()}, p.msg); ok {
			docs = append(docs, d)
		}
	}
	// Waits here, holding only c's lock, while the index queue is full.
	if tr, ok := r.ix.(index.Tracker); ok && contiguous(ps) {
		// The messages' range moves c's mark once their docs are written
		// (a shared store's recall: recall_catchup.go).
		tr.AddMessages(c.String(), ps[0].seq, ps[len(ps)-1].seq, docs...)
		return
	}
	r.ix.AddGeneration(int64(len(ps)), docs...)
}

// contiguous reports whether ps are messages seq, seq+1, ... in order (those
// of one write are).
func contiguous(ps []*pending) bool {
	for i, p := range ps {
		if p.seq != ps[0].seq+uint64(i) {
			return false
		}
	}
	return true
}

// unindexConversation removes conversation c's docs from the recall index
// (retention deletes c next): every doc the index holds for c, found in the
// index once what was queued before is indexed.
func (e *Engine) unindexConversation(ctx context.Context, c convID) error {
	r := e.recall
	if r == nil {
		return nil
	}
	if err := r.waitRebuild(ctx); err != nil {
		return err
	}
	ids, err := r.ix.ConversationDocIDs(ctx, c.String())
	if err != nil {
		if errors.Is(err, index.ErrClosed) {
			return nil
		}
		return fmt.Errorf("lossless: retain: recall index: %w", err)
	}
	r.ix.Delete(ids...)
	return nil
}

// forgetIndexedConversation takes a deleted conversation's messages and
// summaries out of the index generation, as storeGeneration no longer
// counts them.
func (e *Engine) forgetIndexedConversation(rec convRecord) {
	r := e.recall
	if r == nil {
		return
	}
	n := uint64(rec.Summaries)
	if rec.NextSeq > 0 {
		n += rec.NextSeq - 1
	}
	r.ix.AddGeneration(-int64(n))
}

// indexSummary hands a summary just committed to the index (replace).
func (e *Engine) indexSummary(c convID, agent string, s dag.Summary) {
	r := e.recall
	if r == nil {
		return
	}
	r.ix.AddGeneration(1, summaryDoc(c, agent, s))
}

// RecallItem is one recalled turn or summary.

// recallMinScore is the relevance gate's threshold for a configured value
// v (recall.MinScore).
func recallMinScore(v float64) float64 { return recall.MinScore(v) }

// configuredMinScore is Config.Recall.MinScore.
func configuredMinScore(c *Config) float64 { return c.Recall.MinScore }

// Recall returns the items Assemble's recall injects for p.Prompt, best
// first, at most k (Config.Recall.K when k <= 0): searched across the
// agent's other conversations and the part of this one outside the
// assembled context (what the last Assemble of the session showed), never
// another agent's unless Config.Recall.CrossAgent, and only those that
// pass the relevance gate (Config.Recall.MinScore): none when the prompt
// has nothing relevant in the history. It is the retrieval Assemble
// renders; the recall benchmark measures it (RecallWith with a negative
// MinScore gives the ranking before the gate).
func (e *Engine) Recall(ctx context.Context, p core.AssembleParams, k int) ([]RecallItem, error) {
	return e.RecallWith(ctx, p, RecallOptions{K: k})
}

// RecallWith is Recall with options.

// RecallWith is Recall with options.
func (e *Engine) RecallWith(ctx context.Context, p core.AssembleParams, o RecallOptions) ([]RecallItem, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	call := &assembleCall{p: p, agent: e.agentFor("", p.SessionKey)}
	c, err := e.lookup(ctx, call.agent, p.SessionID, p.SessionKey)
	call.c, call.known = c, err == nil
	rc := e.recallCall(call)
	return recall.Rank(ctx, recallPort{e}, &rc, o, nil)
}

// assembleWithRecall is Assemble when recall applies (recall.Assemble:
// enabled, a prompt); ok is false when it does not.
func (e *Engine) assembleWithRecall(ctx context.Context, call *assembleCall) (core.AssembleResult, bool, error) {
	rc := e.recallCall(call)
	return recall.Assemble(ctx, recallPort{e}, &rc)
}

// recallCall is call as package recall sees it.
func (e *Engine) recallCall(call *assembleCall) recall.Call[*assembleCall] {
	rc := recall.Call[*assembleCall]{Engine: call, Params: call.p, Agent: call.agent, Conv: call.c, Known: call.known}
	if call.p.HasTool(ToolGrep) {
		rc.GrepTool = ToolGrep
	}
	return rc
}

// recallPort is the engine as lossless/recall's Port: what recall in
// Assemble needs of it.
type recallPort struct{ e *Engine }

var _ recall.Port[*assembleCall] = recallPort{}

// Config is Config.Recall.
func (p recallPort) Config() recall.Config { return p.e.cfg.Recall }

// Counter is the engine's token counter.
func (p recallPort) Counter() core.TokenCounter { return p.e.tc }

// Store is the engine's store.
func (p recallPort) Store() store.Store { return p.e.st }

// Index is the recall index and its state (nil when recall is off).
func (p recallPort) Index() (index.Recall, *recall.WindowKeys, bool, int64) {
	r := p.e.recall
	if r == nil {
		return nil, nil, false, 0
	}
	if r.rebuilding() {
		return r.ix, &r.winKeys, true, r.rebuildProgress()
	}
	return r.ix, &r.winKeys, false, 0
}

// InContext is what the last assembled window of c shows (inContext).
func (p recallPort) InContext(c convID) (uint64, map[string]bool) { return p.e.inContext(c) }

// SessionName is c's cached name (asmcache.go).
func (p recallPort) SessionName(c convID) (string, bool) { return p.e.cachedName(c) }

// CacheSessionName caches c's name, with c's state, bounded (asmcache.go).
func (p recallPort) CacheSessionName(c convID, name string) { p.e.cacheName(c, name) }

// PlainText is MessagePlainText.
func (p recallPort) PlainText(m core.Message) string { return MessagePlainText(m) }

// Budget is budgetFor the call's explicit budget and runtime context.
func (p recallPort) Budget(ap core.AssembleParams) int {
	return p.e.budgetFor(ap.TokenBudget, ap.RuntimeContext)
}

// AssembleWindow is the inner assemble of the window (assembleWindow).
func (p recallPort) AssembleWindow(ctx context.Context, call *assembleCall, ap core.AssembleParams) (core.AssembleResult, error) {
	return p.e.assembleWindow(ctx, call, ap)
}

// inContext returns what the last assembled context of c shows: raw
// messages from the smallest seq on, and the summaries' doc ids.
// (Assemble's recall runs right after the inner assemble that set them;
// what the window shows of other conversations, or of messages the host
// passed through, is excluded by text, see recall.)
func (e *Engine) inContext(c convID) (uint64, map[string]bool) {
	s := e.lockWindow(c)
	defer s.asmMu.Unlock()
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

// renderedSummaryID returns the id of a summary as RenderSummary shows it
// (recall.SummaryID).
func renderedSummaryID(m core.Message) (string, bool) { return recall.SummaryID(m) }

// IsRecallMessage reports whether m is a recall message that Assemble
// made (recall.IsMessage): a user message whose text starts with the
// recall block's fixed head (after a host's "[...]" time stamp, if any)
// and ends with its closing tag. Recognised, it is dropped from
// Assemble's input and window (a fresh one is appended), and never
// indexed or recalled.
func IsRecallMessage(m core.Message) bool { return recall.IsMessage(m) }

// AssembleWithDetails is Assemble that also says how recall went: whether
// a block was injected, found nothing, was off or failed (a failure never
// fails the call), and whether only part of the history was searched
// because the recall index is being rebuilt (Assemble never waits for a
// rebuild).
func (e *Engine) AssembleWithDetails(ctx context.Context, p core.AssembleParams) (core.AssembleResult, AssembleDetails, error) {
	d := &AssembleDetails{}
	res, err := e.Assemble(recall.WithDetails(ctx, d), p)
	if d.Recall.Partial && d.Recall.Status != RecallFailed {
		msg := fmt.Sprintf("the recall index is being rebuilt (%d docs so far): only what the old index holds was searched", d.Recall.Rebuilt)
		if d.Recall.Reason != "" {
			msg = d.Recall.Reason + "; " + msg
		}
		d.Recall.Reason = msg
	}
	return res, *d, err
}

func parseConvID(s string) (convID, bool) {
	var c convID
	if len(s) != 16 {
		return c, false
	}
	for i := 0; i < 8; i++ {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return c, false
		}
		c[i] = byte(v)
	}
	return c, true
}
