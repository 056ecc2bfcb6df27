package assemble

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"sync"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// skipped are the flags of items the context never shows.
const skipped = store.FlagHeartbeat | store.FlagHidden | store.FlagSuperseded

// windowScan is readWindow's scan of a conversation's window: the
// messages and summaries parsed by the previous assemble (prev*), those of
// this one (next*), what is left to parse (todo), and the record's Created
// (created).
type windowScan struct {
	d                  Deps
	c                  store.ConvID
	avail              int
	prevMsgs, nextMsgs map[uint64]core.Message
	prevSums, nextSums map[string]core.Message
	todo               []parseJob
	win                Window
	created            int64
	// lead are the context's leading summaries kept ahead of a cut
	// window (leadTok their tokens).
	lead    []core.Message
	leadTok int
}

// scan reads the window backwards from r until avail tokens are used.
func (w *windowScan) scan(ctx context.Context, r store.Reader) (err error) {
	visit := func(i int, item dag.Item, flags byte) (core.Message, error) {
		if item.IsSummary() {
			m, err := SummaryMessage(r, w.c, item.Ref.ID, w.prevSums)
			w.nextSums[item.Ref.ID] = m
			return m, err
		}
		if m, ok := w.prevMsgs[item.Ref.Seq]; ok {
			w.nextMsgs[item.Ref.Seq] = m
			return m, nil
		}
		// Parsed after the scan, in parallel (parsing is the cost of a
		// cold assemble).
		raw, err := itemRaw(r, w.c, item.Ref.Seq, flags)
		w.todo = append(w.todo, parseJob{idx: i, seq: item.Ref.Seq, raw: raw})
		return core.Message{}, err
	}
	shrink := func(item dag.Item, room int) (core.Message, int, bool, error) {
		return referenceFor(w.d, r, w.c, item, room)
	}
	w.win, err = Walk(ctx, r.Items(w.c, 0, math.MaxUint64, true), w.avail, "assemble", visit, shrink)
	if err != nil || w.win.Cut == 0 {
		return err
	}
	// The window does not reach the context's start. Its leading summaries
	// stand for everything older: they are kept ahead of the newest items
	// that fit beside them (a gap of raw messages between, stored and
	// summarised by the next compaction), within half the budget. When
	// they take more (a condensation not yet run, a small per-call
	// budget), those that fit are kept, oldest first; when none fits
	// half, the smallest that fits beside the current turn's floor (the
	// newest user message and what follows it, which always stays). A
	// window that held a summary never loses them all while one fits (#8).
	lead, ltok, omitted, err := w.leadingSummaries(ctx, r, w.avail/2, w.avail-w.win.Floor)
	if err != nil || len(lead) == 0 {
		return err
	}
	w.todo = w.todo[:0]
	win, err := Walk(ctx, r.Items(w.c, 0, math.MaxUint64, true), w.avail-ltok, "assemble", visit, shrink)
	if err != nil {
		return err
	}
	win.Cut = max(win.Cut, w.win.Cut)
	win.LeadOmitted = omitted
	w.win, w.lead, w.leadTok = win, lead, ltok
	return nil
}

// maxLeadSummaries bounds the leading summaries a cut window keeps.
const maxLeadSummaries = 64

// leadingSummaries returns the summaries at the start of the context (up
// to its first raw message) that fit limit tokens together, taken oldest
// first (a summary that does not fit is passed over for the newer ones),
// rendered; their tokens; and how many were passed over. When none fits
// limit, the smallest that fits floorLimit is returned alone.
func (w *windowScan) leadingSummaries(ctx context.Context, r store.Reader, limit, floorLimit int) ([]core.Message, int, int, error) {
	var lead []dag.Item
	for item, err := range r.Items(w.c, 0, math.MaxUint64, false) {
		if err != nil {
			return nil, 0, 0, err
		}
		if item.Flags&skipped != 0 {
			continue
		}
		if !item.IsSummary() || len(lead) == maxLeadSummaries {
			break
		}
		lead = append(lead, item.Item)
	}
	var pick []dag.Item
	tok := 0
	for _, it := range lead {
		if tok+it.Tokens <= limit {
			pick = append(pick, it)
			tok += it.Tokens
		}
	}
	if len(pick) == 0 {
		for _, it := range lead {
			if it.Tokens <= floorLimit && (len(pick) == 0 || it.Tokens < pick[0].Tokens) {
				pick, tok = []dag.Item{it}, it.Tokens
			}
		}
	}
	out := make([]core.Message, 0, len(pick))
	for _, it := range pick {
		m, err := SummaryMessage(r, w.c, it.Ref.ID, w.prevSums)
		if err != nil {
			return nil, 0, 0, err
		}
		w.nextSums[it.Ref.ID] = m
		out = append(out, m)
	}
	return out, tok, len(lead) - len(pick), ctx.Err()
}

// Window is what Walk read: messages newest first with their tokens.
type Window struct {
	// Rev are the messages read, newest first; RevTok their tokens.
	Rev    []core.Message
	RevTok []int
	// Used is the tokens of Rev.
	Used int
	// Scanned is the items scanned, including skipped ones.
	Scanned int
	// Cut is the tokens of the first item that did not fit (0: none).
	Cut int
	// Shrunk is the tool results represented by their references.
	Shrunk int
	// Floor is the tokens of the newest items down to the newest user
	// message (all of Used while the window holds none): the current
	// turn, which a cut window always keeps.
	Floor int
	// LeadOmitted is the leading summaries a cut window left out (they
	// did not fit half its budget beside the older ones kept).
	LeadOmitted int
	// hasUser is set once the window holds a user message: the floor (the
	// newest user message and the tool pairs after it) is in; only newer
	// tool results are represented by references when they do not fit.
	hasUser bool
}

// Walk reads context items newest first (items is a reverse scan: the
// breaking loop ends it), skips heartbeat and hidden items, and calls
// visit for each item while the budget avail allows, stopping at the first
// that does not fit. visit returns the item's message; i is its index in
// the window's Rev (a message visit cannot produce yet may be filled in
// there later). shrink, when not nil, is asked for a smaller stand-in of a
// tool result that does not fit while the window has not reached a user
// message (the current turn's floor): its reference. Shared by assemble
// and the fork prefix of a subagent; what names the caller in errors.
func Walk(ctx context.Context, items iter.Seq2[store.Item, error], avail int, what string,
	visit func(i int, item dag.Item, flags byte) (core.Message, error),
	shrink func(item dag.Item, room int) (core.Message, int, bool, error)) (Window, error) {
	var w Window
	for item, err := range items {
		if w.Scanned++; w.Scanned%256 == 0 {
			if err := ctx.Err(); err != nil {
				return w, fmt.Errorf("lossless: %s: %w", what, err)
			}
		}
		if err != nil {
			return w, err
		}
		if item.Flags&skipped != 0 {
			continue
		}
		if w.Used+item.Tokens > avail {
			if shrink != nil && !w.hasUser && item.Role == core.RoleToolResult && item.Flags&store.FlagLarge == 0 {
				// A tool result too large for what is left: its reference
				// (the stored original's id and a description) stands in,
				// so the window keeps its call and goes on.
				m, tok, ok, err := shrink(item.Item, avail-w.Used)
				if err != nil {
					return w, err
				}
				if ok {
					w.Used += tok
					w.Rev = append(w.Rev, m)
					w.RevTok = append(w.RevTok, tok)
					w.Shrunk++
					continue
				}
			}
			w.Cut = max(1, item.Tokens)
			break
		}
		m, err := visit(len(w.Rev), item.Item, item.Flags)
		if err != nil {
			return w, err
		}
		w.Used += item.Tokens
		w.Rev = append(w.Rev, m)
		w.RevTok = append(w.RevTok, item.Tokens)
		if !w.hasUser {
			w.Floor = w.Used
		}
		w.hasUser = w.hasUser || item.Role == core.RoleUser
	}
	return w, nil
}

// referenceFor returns the reference message standing for tool result
// item of c (records.LargeReference: the original's key, size and a
// description) and its tokens, when they fit room.
func referenceFor(d Deps, r store.Reader, c store.ConvID, item dag.Item, room int) (core.Message, int, bool, error) {
	msg, err := r.Message(c, item.Ref.Seq)
	if err != nil {
		return core.Message{}, 0, false, fmt.Errorf("lossless: message %d: %w", item.Ref.Seq, err)
	}
	m, err := core.ParseMessage(msg.Raw)
	if err != nil {
		return core.Message{}, 0, false, fmt.Errorf("lossless: stored message %d: %w", item.Ref.Seq, err)
	}
	ref, err := core.ParseMessage(records.LargeReference(m, records.HashRaw(msg.Raw), item.Tokens))
	if err != nil {
		return core.Message{}, 0, false, fmt.Errorf("lossless: reference of message %d: %w", item.Ref.Seq, err)
	}
	tok := core.CountMessage(d.Counter, ref)
	if tok > room || tok >= item.Tokens {
		return core.Message{}, 0, false, nil
	}
	return ref, tok, true, nil
}

// Chronological returns the window oldest first, without leading tool
// results (their calls are outside the window), and its tokens.
func (w Window) Chronological() ([]core.Message, int) {
	out := make([]core.Message, len(w.Rev))
	for i, m := range w.Rev {
		out[len(w.Rev)-1-i] = m
	}
	out, dropped := DropLeadingToolResults(out)
	used := w.Used
	for i := range dropped {
		used -= w.RevTok[len(w.Rev)-1-i]
	}
	return out, used
}

// DropLeadingToolResults removes tool results at the start of msgs (their
// calls are outside the window); it returns what is left and what it
// removed.
func DropLeadingToolResults(msgs []core.Message) ([]core.Message, []core.Message) {
	i := 0
	for i < len(msgs) && msgs[i].Role() == core.RoleToolResult {
		i++
	}
	return msgs[i:], msgs[:i]
}

// ItemMessage returns the message standing for message seq of c in the
// context (the message, or its large-content reference, parsed), from
// cache when it is there.
func ItemMessage(r store.Reader, c store.ConvID, seq uint64, flags byte, cache map[uint64]core.Message) (core.Message, error) {
	if m, ok := cache[seq]; ok {
		return m, nil
	}
	raw, err := itemRaw(r, c, seq, flags)
	if err != nil {
		return core.Message{}, err
	}
	m, err := core.ParseMessage(raw)
	if err != nil {
		return core.Message{}, fmt.Errorf("lossless: stored message %d: %w", seq, err)
	}
	return m, nil
}

// SummaryMessage returns summary id of c rendered (RenderSummary), from
// cache when it is there.
func SummaryMessage(r store.Reader, c store.ConvID, id string, cache map[string]core.Message) (core.Message, error) {
	if m, ok := cache[id]; ok {
		return m, nil
	}
	s, err := r.Summary(c, id)
	if err != nil {
		return core.Message{}, fmt.Errorf("lossless: summary %q: %w", id, records.FromStore(err))
	}
	return RenderSummary(s), nil
}

// parseJob is a stored message to parse for an assembled context.
type parseJob struct {
	idx int
	seq uint64
	raw []byte
	msg core.Message
}

// parseParallel parses jobs across the cores.
func parseParallel(jobs []parseJob) error {
	workers := min(runtime.GOMAXPROCS(0), len(jobs)/16+1)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(jobs); i += workers {
				m, err := core.ParseMessage(jobs[i].raw)
				if err != nil {
					errs[w] = fmt.Errorf("lossless: stored message %d: %w", jobs[i].seq, err)
					return
				}
				jobs[i].msg = m
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// itemRaw returns the bytes that stand for message seq in the context: the
// message itself, or its large-content reference (the caller's: the store
// copies them out).
func itemRaw(r store.Reader, c store.ConvID, seq uint64, flags byte) ([]byte, error) {
	if flags&store.FlagLarge != 0 {
		v, err := r.Large(c, seq)
		if err != nil {
			return nil, fmt.Errorf("lossless: large reference %d: %w", seq, records.FromStore(err))
		}
		return v, nil
	}
	m, err := r.Message(c, seq)
	if err != nil {
		return nil, fmt.Errorf("lossless: message %d: %w", seq, err)
	}
	return m.Raw, nil
}
