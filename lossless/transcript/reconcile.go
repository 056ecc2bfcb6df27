package transcript

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/diskspace"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Reconciling a rewritten transcript.
//
// A session file read again from the start (its checkpoint no longer
// matches: the host or a user edited, deleted or inserted entries) stores
// the entries it does not hold yet as new messages, appended to the
// conversation. The transcript's order is then restored in the context:
//
//   - a new message followed in the file by messages already stored (an
//     edit or an insertion) gets its context item moved between the items
//     of its neighbours in the file, so an edited tool result still follows
//     its call and precedes what came after it;
//   - a message the previous read of the file held and this one does not
//     (the old version of an edit, or a deleted entry) is left out of the
//     context (store.FlagSuperseded: stored, exported and expandable as
//     before, never assembled), and shown again when a later read finds it again.
//
// The file's compaction entries are applied after the reconciliation, so
// the ranges they summarize are in transcript order.
//
// A moved message's place in the conversation is recorded under 'O' (its
// order position; a message never moved is at seq*records.PosStep), so
// the engine's Check and a re-imported compaction entry see the
// conversation in transcript order.
//
// Crash safety: before the first write of a rewrite import, the file's old
// entry map is copied under 'E' conv tag 'o', then the first sequence
// number the read may append is recorded under 'E' conv tag 'f'; the
// checkpoints the read writes carry it too (Reconcile). Until the
// reconciliation ends and drops them, a checkpoint with Reconcile is not
// trusted: the next import reads the file again and reconciles with the
// saved map and sequence number.

// The saved map of a rewritten file is its store.EntriesPrevious map
// ('E' conv tag 'o' index(8) -> seq(8)), kept until its reconciliation
// ends; the first sequence number a read of the file not yet reconciled may
// have appended is its ReconcileFrom record ('E' conv tag 'f' -> seq(8)).
// ReconcileFrom is written after the saved map is complete and before the
// read stores anything, and dropped last by the reconciliation: when it
// exists, the saved map is whole and from is right.

// reconcileState is what a rewrite import carries from its start to its
// reconciliation.
type reconcileState struct {
	from  uint64          // the conversation's NextSeq before the read
	old   map[uint64]bool // seqs of the previous read of the file
	order []uint64        // the file's message seqs, in file order
	// comps are the file's compaction entries, applied after the
	// reconciliation (their kept ranges are in transcript order then).
	comps []core.Entry
}

// maybeReconcile returns the reconciliation state of a read from the start
// into conversation c, or nil when there is nothing to reconcile (the
// conversation held no message before and no interrupted reconciliation is
// pending: every message is appended in file order). pending is the
// checkpoint's Reconcile. needNext is set when that depends on the
// conversation's NextSeq, which the engine reads under the conversation's
// lock and hands to beginReconcile (Import.BeginReconcile).
func maybeReconcile(ctx context.Context, st store.Store, c store.ConvID, tag [8]byte, pending uint64) (rs *reconcileState, needNext bool, err error) {
	var from uint64
	err = st.View(ctx, func(r store.Reader) error {
		v, err := r.ReconcileFrom(c, store.FileTag(tag))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if errors.Is(err, store.ErrCorrupt) {
			return fmt.Errorf("%w: reconcile record: %w", records.ErrBadRecord, err)
		}
		if err != nil {
			return records.FromStore(err)
		}
		from = v
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if from != 0 { // an interrupted run: its saved map and its from
		rs := &reconcileState{from: from, old: map[uint64]bool{}}
		err := st.View(ctx, func(r store.Reader) error {
			return collectSeqs(r, c, tag, store.EntriesPrevious, func(p store.EntryPair) error {
				rs.old[p.Seq] = true
				return nil
			})
		})
		return rs, false, err
	}
	if pending != 0 {
		// The reconciliation ran but its checkpoint was not cleared: moves
		// and hides are done; running it again finds everything in place.
		return &reconcileState{from: pending, old: map[uint64]bool{}}, false, nil
	}
	return nil, true, nil
}

// beginReconcile saves the file's previous entry map (EntriesCurrent) as
// its EntriesPrevious map, then from as its ReconcileFrom record, and
// returns the state.
func beginReconcile(ctx context.Context, s store.Store, space *diskspace.Guard, c store.ConvID, tag [8]byte, from uint64) (*reconcileState, error) {
	st := &reconcileState{from: from, old: map[uint64]bool{}}
	wb, err := batchMapped(ctx, s, space)
	if err != nil {
		return nil, err
	}
	defer wb.Cancel()
	err = s.View(ctx, func(r store.Reader) error {
		return collectSeqs(r, c, tag, store.EntriesCurrent, func(p store.EntryPair) error {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: reconcile: %w", err)
			}
			st.old[p.Seq] = true
			if err := wb.PutEntrySeq(c, store.FileTag(tag), store.EntriesPrevious, p.Index, p.Seq); err != nil {
				return fmt.Errorf("lossless: save entry map: %w", records.FromStore(err))
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if err := wb.Flush(); err != nil {
		return nil, fmt.Errorf("lossless: save entry map: %w", records.FromStore(err))
	}
	if err := updateMapped(ctx, s, space, func(tx store.Tx) error { return tx.PutReconcileFrom(c, store.FileTag(tag), from) }); err != nil {
		return nil, fmt.Errorf("lossless: save reconcile record: %w", err)
	}
	return st, nil
}

// collectSeqs calls fn with every pair of map m of file tag, in index
// order. A pair that does not decode is records.ErrBadRecord ("entry map").
func collectSeqs(r store.Reader, c store.ConvID, tag [8]byte, m store.EntryMap, fn func(store.EntryPair) error) error {
	for p, err := range r.Entries(c, store.FileTag(tag), m, 0) {
		if err != nil {
			if errors.Is(err, store.ErrCorrupt) {
				return fmt.Errorf("%w: entry map: %w", records.ErrBadRecord, err)
			}
			return fmt.Errorf("lossless: read entry map: %w", records.FromStore(err))
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// reconcile puts the conversation's context in the file's order (see the
// top of this file), then drops the saved map and the file's stale entry
// indexes (at entries and above). The caller holds the conversation's lock
// and has checked the store's free space.
func reconcile(ctx context.Context, s store.Store, space *diskspace.Guard, o Options, c store.ConvID, tag [8]byte, st *reconcileState, entries int) error {
	if fault := o.Fault; fault != nil {
		if err := fault("reconcile"); err != nil {
			return err
		}
	}
	var items []dag.Item
	flags := map[uint64]byte{} // raw item pos -> flags
	err := s.View(ctx, func(r store.Reader) error {
		for it, err := range r.Items(c, 0, math.MaxUint64, false) {
			if err != nil {
				return records.FromStore(err)
			}
			items = append(items, it.Item)
			if !it.IsSummary() {
				flags[it.Pos] = it.Flags
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	cover, err := coverPositions(ctx, s, c, items)
	if err != nil {
		return err
	}
	var moves map[uint64]uint64
	if err := s.View(ctx, func(r store.Reader) error {
		var err error
		moves, err = records.MovedSeqs(r, c)
		return err
	}); err != nil {
		return err
	}
	// last[pos]: the highest order position among the messages the item
	// at pos covers (the item's own for a raw message). Order positions of
	// different items never interleave, and a raw item sits at its
	// message's order position.
	last := make(map[uint64]uint64, len(items))
	for seq, pos := range cover {
		if o := records.OrderAt(moves, seq); o > last[pos] {
			last[pos] = o
		}
	}
	positions := make([]uint64, len(items))
	for i, it := range items {
		positions[i] = it.Pos
	}
	// A message the file holds twice (byte-identical entries are one
	// stored message) takes its first place.
	inFile := make(map[uint64]bool, len(st.order))
	order := st.order[:0:0]
	for _, seq := range st.order {
		if !inFile[seq] {
			inFile[seq] = true
			order = append(order, seq)
		}
	}
	st.order = order

	// A write puts item val at pos (deleting the item at del first when
	// move is set), or the order record of seq (order set); a write
	// dropped (merged into a later one) has none of them.
	type write struct {
		item  bool // val at pos
		pos   uint64
		val   store.Item
		move  bool // the item at del is deleted
		del   uint64
		order bool // seq's order position is pos
		seq   uint64
	}
	var writes []write
	readItem := func(pos uint64) (store.Item, error) {
		var val store.Item
		err := s.View(ctx, func(r store.Reader) error {
			var err error
			val, err = r.Item(c, pos)
			return records.FromStore(err)
		})
		return val, err
	}
	setFlags := func(pos uint64, fl byte) error {
		val, err := readItem(pos)
		if err != nil {
			return err
		}
		val.Flags = fl
		writes = append(writes, write{item: true, pos: pos, val: val})
		return nil
	}

	// Leave out what the file no longer holds; bring back what it holds
	// again (a deletion undone, a branch switched back).
	hidden, shown := 0, 0
	for seq := range st.old {
		if inFile[seq] {
			continue
		}
		pos, ok := cover[seq]
		fl, raw := flags[pos]
		if !ok || !raw || fl&store.FlagSuperseded != 0 {
			continue // summarized, or already left out
		}
		if err := setFlags(pos, fl|store.FlagSuperseded); err != nil {
			return err
		}
		flags[pos] = fl | store.FlagSuperseded
		hidden++
	}
	for _, seq := range st.order {
		pos, ok := cover[seq]
		fl, raw := flags[pos]
		if !ok || !raw || fl&store.FlagSuperseded == 0 {
			continue
		}
		if err := setFlags(pos, fl&^store.FlagSuperseded); err != nil {
			return err
		}
		flags[pos] = fl &^ store.FlagSuperseded
		shown++
	}

	// Move the appended messages between their neighbours in the file.
	movable := func(seq uint64) bool {
		if seq < st.from {
			return false
		}
		pos, ok := cover[seq]
		_, raw := flags[pos]
		return ok && raw
	}
	moved := 0
	for i := 0; i < len(st.order); {
		if !movable(st.order[i]) {
			i++
			continue
		}
		j := i
		for j < len(st.order) && movable(st.order[j]) {
			j++
		}
		run := st.order[i:j]
		i = j
		if j == len(st.order) {
			continue // the file's end: appended in order already
		}
		lo := uint64(0) // the gap starts after everything the previous item covers
		if k := j - len(run) - 1; k >= 0 {
			p, ok := cover[st.order[k]]
			if !ok {
				continue
			}
			lo = last[p]
		}
		inRun := make(map[uint64]bool, len(run))
		for _, seq := range run {
			inRun[cover[seq]] = true
		}
		// hi: the first item after lo that is not part of the run.
		hi := uint64(0)
		k := sort.Search(len(positions), func(x int) bool { return positions[x] > lo })
		for ; k < len(positions); k++ {
			if !inRun[positions[k]] {
				hi = positions[k]
				break
			}
		}
		if hi == 0 {
			continue // nothing after lo but the run: in place
		}
		inPlace := true
		prev := lo
		for _, seq := range run {
			p := cover[seq]
			if p <= prev || p >= hi {
				inPlace = false
				break
			}
			prev = p
		}
		if inPlace {
			continue
		}
		step := (hi - lo) / uint64(len(run)+1)
		if step == 0 {
			slog.Warn("lossless: reconcile: no room between two context items; the edited messages stay at the end of the conversation",
				"conversation", c.String(), "messages", len(run))
			continue
		}
		for n, seq := range run {
			from := cover[seq]
			to := lo + step*uint64(n+1)
			val, err := readItem(from)
			if err != nil {
				return err
			}
			for w := range writes { // a hidden-flag write of the same item
				if writes[w].item && writes[w].pos == from {
					val = writes[w].val
					writes[w] = write{}
				}
			}
			writes = append(writes,
				write{item: true, pos: to, val: val, move: true, del: from},
				write{order: true, seq: seq, pos: to})
			flags[to] = flags[from]
			delete(flags, from)
			cover[seq] = to
			last[to] = to
			delete(last, from)
			x := sort.Search(len(positions), func(i int) bool { return positions[i] >= from })
			positions = append(positions[:x], positions[x+1:]...)
			y := sort.Search(len(positions), func(i int) bool { return positions[i] >= to })
			positions = append(positions[:y], append([]uint64{to}, positions[y:]...)...)
			moved++
		}
	}

	// Write in transactions of whole moves (an item's new key, the old
	// key's delete and its order key together), then drop the saved map
	// and the stale indexes.
	commit := func(chunk []write) error {
		if len(chunk) == 0 {
			return nil
		}
		err := s.Update(ctx, func(tx store.Tx) error {
			for _, w := range chunk {
				if w.move {
					if err := tx.DeleteItem(c, w.del); err != nil {
						return err
					}
				}
				if w.order {
					if err := tx.PutOrder(c, w.seq, w.pos); err != nil {
						return err
					}
					continue
				}
				it := w.val
				it.Pos = w.pos
				if err := tx.PutItem(c, it); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("lossless: reconcile: %w", records.FromStore(err))
		}
		return nil
	}
	var chunk []write
	ops := 0
	for _, w := range writes {
		if !w.item && !w.order {
			continue
		}
		if ops >= 512 {
			if err := commit(chunk); err != nil {
				return err
			}
			chunk, ops = chunk[:0], 0
		}
		chunk = append(chunk, w)
		ops += 2
	}
	if err := commit(chunk); err != nil {
		return err
	}
	if err := dropEntries(ctx, s, space, c, tag, store.EntriesPrevious, 0); err != nil {
		return err
	}
	if err := dropEntries(ctx, s, space, c, tag, store.EntriesCurrent, uint64(entries)); err != nil {
		return err
	}
	if err := updateMapped(ctx, s, space, func(tx store.Tx) error { return tx.DeleteReconcileFrom(c, store.FileTag(tag)) }); err != nil {
		return fmt.Errorf("lossless: reconcile: %w", err)
	}
	if hidden > 0 || moved > 0 || shown > 0 {
		slog.Info("lossless: rewritten transcript reconciled", "conversation", c.String(), "moved", moved, "hidden", hidden, "shown again", shown)
	}
	return nil
}

// dropEntries deletes the pairs of map m of file tag from index from on.
func dropEntries(ctx context.Context, st store.Store, space *diskspace.Guard, c store.ConvID, tag [8]byte, m store.EntryMap, from uint64) error {
	var indexes []uint64
	err := st.View(ctx, func(r store.Reader) error {
		for p, err := range r.Entries(c, store.FileTag(tag), m, from) {
			if err != nil {
				return err
			}
			indexes = append(indexes, p.Index)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lossless: reconcile: %w", records.FromStore(err))
	}
	wb, err := batchMapped(ctx, st, space)
	if err != nil {
		return err
	}
	defer wb.Cancel()
	for i, index := range indexes {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: reconcile: %w", err)
			}
		}
		if err := wb.DeleteEntrySeq(c, store.FileTag(tag), m, index); err != nil {
			return fmt.Errorf("lossless: reconcile: %w", records.FromStore(err))
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("lossless: reconcile: %w", records.FromStore(err))
	}
	return nil
}

// coverPositions maps every message the context covers to the position of
// the item covering it: its own raw item, or the summary item above it.
func coverPositions(ctx context.Context, st store.Store, c store.ConvID, items []dag.Item) (map[uint64]uint64, error) {
	out := make(map[uint64]uint64, len(items))
	var walk func(id string, pos uint64, depth int) error
	walk = func(id string, pos uint64, depth int) error {
		if depth > 64 {
			return fmt.Errorf("lossless: reconcile: summary %s: %w", id, dag.ErrInvariant)
		}
		var s dag.Summary
		err := st.View(ctx, func(r store.Reader) error {
			var err error
			s, err = records.GetSummary(r, c, id)
			return err
		})
		if err != nil {
			return err
		}
		for _, r := range s.Sources {
			if r.Kind == dag.RefSummary {
				if err := walk(r.ID, pos, depth+1); err != nil {
					return err
				}
				continue
			}
			out[r.Seq] = pos
		}
		return nil
	}
	for _, it := range items {
		if !it.IsSummary() {
			out[it.Ref.Seq] = it.Pos
			continue
		}
		if err := walk(it.Ref.ID, it.Pos, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// updateMapped is update (the store's Update behind the free-space guard),
// its error mapped by records.FromStore.
func updateMapped(ctx context.Context, st store.Store, space *diskspace.Guard, fn func(tx store.Tx) error) error {
	return records.FromStore(update(ctx, st, space, fn))
}

// batchMapped is newBatch, its error mapped by records.FromStore.
func batchMapped(ctx context.Context, st store.Store, space *diskspace.Guard) (store.Batch, error) {
	if err := checkSpace(space); err != nil {
		return nil, err
	}
	b, err := st.NewBatch(ctx)
	if err != nil {
		return nil, records.FromStore(err)
	}
	return b, nil
}
