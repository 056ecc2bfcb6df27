package lossless

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
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
//     context (flagSuperseded: stored, exported and expandable as before,
//     never assembled), and shown again when a later read finds it again.
//
// The file's compaction entries are applied after the reconciliation, so
// the ranges they summarize are in transcript order.
//
// A moved message's place in the conversation is recorded under 'O' (its
// order position; a message never moved is at seq*posStep), so Check and a
// re-imported compaction entry see the conversation in transcript order.
//
// Crash safety: before the first write of a rewrite import, the file's old
// entry map is copied under 'E' conv tag 'o', then the first sequence
// number the read may append is recorded under 'E' conv tag 'f'; the
// checkpoints the read writes carry it too (Reconcile). Until the
// reconciliation ends and drops them, a checkpoint with Reconcile is not
// trusted: the next import reads the file again and reconciles with the
// saved map and sequence number.

// reconcileFault, set by tests, fails a rewrite import at a stage:
// "stored" (after its first chunk is stored, before that chunk's
// checkpoint) or "reconcile" (before the reconciliation starts).
var reconcileFault func(stage string) error

// pOrder is 'O' conv seq(8) -> pos(8): the order position of a message
// placed out of sequence by a reconciliation.
const pOrder = 'O'

func orderKey(c convID, seq uint64) []byte { return seqKey(pOrder, c, seq) }

// oldEntryKey is 'E' conv tag 'o' index(8) -> seq(8): the entry map of the
// previous read of a rewritten file, kept until its reconciliation ends.
func oldEntryKey(c convID, tag [8]byte, index int) []byte {
	k := entryIndexKey(c, tag, index)
	k[17] = 'o'
	return k
}

// entryMapPrefix returns the prefix of the 'x' (or 'o') entry map of
// (c, tag).
func entryMapPrefix(c convID, tag [8]byte, kind byte) []byte {
	k := entryIndexKey(c, tag, 0)[:18]
	k[17] = kind
	return k
}

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

// reconcileFromKey is 'E' conv tag 'f' -> seq(8): the first sequence
// number a read of the file not yet reconciled may have appended. It is
// written after the saved 'o' map is complete and before the read stores
// anything, and dropped last by the reconciliation: when it exists, the
// saved map is whole and from is right.
func reconcileFromKey(c convID, tag [8]byte) []byte { return entryMapPrefix(c, tag, 'f') }

// maybeReconcile returns the reconciliation state of a read from the start
// into conversation c, or nil when there is nothing to reconcile (the
// conversation held no message before and no interrupted reconciliation is
// pending: every message is appended in file order). pending is the
// checkpoint's Reconcile.
func (e *Engine) maybeReconcile(ctx context.Context, c convID, tag [8]byte, pending uint64) (*reconcileState, error) {
	var from uint64
	err := e.db.View(func(txn *badger.Txn) error {
		v, err := getValue(txn, reconcileFromKey(c, tag))
		if errors.Is(err, core.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var ok bool
		if from, ok = getU64(v); !ok {
			return fmt.Errorf("%w: reconcile record", errBadRecord)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if from != 0 { // an interrupted run: its saved map and its from
		st := &reconcileState{from: from, old: map[uint64]bool{}}
		err := e.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: entryMapPrefix(c, tag, 'o')})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				if err := collectSeq(it.Item(), st.old); err != nil {
					return err
				}
			}
			return nil
		})
		return st, err
	}
	if pending != 0 {
		// The reconciliation ran but its checkpoint was not cleared: moves
		// and hides are done; running it again finds everything in place.
		return &reconcileState{from: pending, old: map[uint64]bool{}}, nil
	}
	s, err := e.lockConv(ctx, c)
	if err != nil {
		return nil, err
	}
	next := s.rec.NextSeq
	s.mu.Unlock()
	if next <= 1 {
		return nil, nil
	}
	return e.beginReconcile(ctx, c, tag, next)
}

// beginReconcile saves the file's previous entry map under 'o', then from
// under 'f', and returns the state.
func (e *Engine) beginReconcile(ctx context.Context, c convID, tag [8]byte, from uint64) (*reconcileState, error) {
	st := &reconcileState{from: from, old: map[uint64]bool{}}
	wb, err := e.writeBatch()
	if err != nil {
		return nil, err
	}
	defer wb.Cancel()
	err = e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: entryMapPrefix(c, tag, 'x')})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: reconcile: %w", err)
			}
			if err := collectSeq(it.Item(), st.old); err != nil {
				return err
			}
			k := it.Item().KeyCopy(nil)
			k[17] = 'o'
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return fmt.Errorf("lossless: read entry map: %w", err)
			}
			if err := wb.Set(k, v); err != nil {
				return fmt.Errorf("lossless: save entry map: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := wb.Flush(); err != nil {
		return nil, fmt.Errorf("lossless: save entry map: %w", err)
	}
	var fb [8]byte
	putU64(fb[:], from)
	if err := e.update(func(txn *badger.Txn) error { return txn.Set(reconcileFromKey(c, tag), fb[:]) }); err != nil {
		return nil, fmt.Errorf("lossless: save reconcile record: %w", err)
	}
	return st, nil
}

func collectSeq(kv *badger.Item, into map[uint64]bool) error {
	return kv.Value(func(v []byte) error {
		seq, ok := getU64(v)
		if !ok {
			return fmt.Errorf("%w: entry map", errBadRecord)
		}
		into[seq] = true
		return nil
	})
}

// reconcile puts the conversation's context in the file's order (see the
// top of this file), then drops the saved map and the file's stale entry
// indexes (at entries and above). It holds the conversation's lock.
func (e *Engine) reconcile(ctx context.Context, c convID, tag [8]byte, st *reconcileState, entries int) error {
	if reconcileFault != nil {
		if err := reconcileFault("reconcile"); err != nil {
			return err
		}
	}
	if err := e.checkSpace(); err != nil {
		return err
	}
	s, err := e.lockConv(ctx, c)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	var items []dag.Item
	flags := map[uint64]byte{} // raw item pos -> flags
	err = e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: convPrefix(pItem, c)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item, fl, err := itemAt(it.Item())
			if err != nil {
				return err
			}
			items = append(items, item)
			if !item.IsSummary() {
				flags[item.Pos] = fl
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	conv := &Conversation{e: e, id: c, Agent: s.rec.Agent}
	cover, err := e.coverPositions(ctx, conv, items)
	if err != nil {
		return err
	}
	var moves map[uint64]uint64
	if err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		moves, err = movedSeqs(r, c)
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
		if o := orderAt(moves, seq); o > last[pos] {
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

	type write struct {
		key, val []byte
		del      []byte
	}
	var writes []write
	setFlags := func(pos uint64, fl byte) error {
		var val []byte
		err := e.db.View(func(txn *badger.Txn) error {
			v, err := getValue(txn, itemKey(c, pos))
			val = v
			return err
		})
		if err != nil {
			return err
		}
		if len(val) < 2 {
			return fmt.Errorf("%w: item", errBadRecord)
		}
		val[1] = fl
		writes = append(writes, write{key: itemKey(c, pos), val: val})
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
		if !ok || !raw || fl&flagSuperseded != 0 {
			continue // summarized, or already left out
		}
		if err := setFlags(pos, fl|flagSuperseded); err != nil {
			return err
		}
		flags[pos] = fl | flagSuperseded
		hidden++
	}
	for _, seq := range st.order {
		pos, ok := cover[seq]
		fl, raw := flags[pos]
		if !ok || !raw || fl&flagSuperseded == 0 {
			continue
		}
		if err := setFlags(pos, fl&^flagSuperseded); err != nil {
			return err
		}
		flags[pos] = fl &^ flagSuperseded
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
			var val []byte
			err := e.db.View(func(txn *badger.Txn) error {
				v, err := getValue(txn, itemKey(c, from))
				val = v
				return err
			})
			if err != nil {
				return err
			}
			for w := range writes { // a hidden-flag write of the same item
				if string(writes[w].key) == string(itemKey(c, from)) {
					val = writes[w].val
					writes[w] = write{del: nil}
				}
			}
			var ob [8]byte
			binary.BigEndian.PutUint64(ob[:], to)
			writes = append(writes,
				write{key: itemKey(c, to), val: val, del: itemKey(c, from)},
				write{key: orderKey(c, seq), val: append([]byte(nil), ob[:]...)})
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
	txn := e.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	ops := 0
	commit := func() error {
		if err := txn.Commit(); err != nil {
			return fmt.Errorf("lossless: reconcile: %w", err)
		}
		txn = e.db.NewTransaction(true)
		ops = 0
		return nil
	}
	for _, w := range writes {
		if w.key == nil {
			continue
		}
		if ops >= 512 {
			if err := commit(); err != nil {
				return err
			}
		}
		if w.del != nil {
			if err := txn.Delete(w.del); err != nil {
				return fmt.Errorf("lossless: reconcile: %w", err)
			}
		}
		if err := txn.Set(w.key, w.val); err != nil {
			return fmt.Errorf("lossless: reconcile: %w", err)
		}
		ops += 2
	}
	if err := commit(); err != nil {
		return err
	}
	if err := e.dropPrefixFrom(ctx, entryMapPrefix(c, tag, 'o'), nil); err != nil {
		return err
	}
	if err := e.dropPrefixFrom(ctx, entryMapPrefix(c, tag, 'x'), entryIndexKey(c, tag, entries)); err != nil {
		return err
	}
	if err := e.update(func(txn *badger.Txn) error { return txn.Delete(reconcileFromKey(c, tag)) }); err != nil {
		return fmt.Errorf("lossless: reconcile: %w", err)
	}
	if hidden > 0 || moved > 0 || shown > 0 {
		slog.Info("lossless: rewritten transcript reconciled", "conversation", c.String(), "moved", moved, "hidden", hidden, "shown again", shown)
	}
	return nil
}

// dropPrefixFrom deletes the keys under prefix from seek on (all when seek
// is nil).
func (e *Engine) dropPrefixFrom(ctx context.Context, prefix, seek []byte) error {
	var keys [][]byte
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
		defer it.Close()
		if seek == nil {
			seek = prefix
		}
		for it.Seek(seek); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lossless: reconcile: %w", err)
	}
	wb, err := e.writeBatch()
	if err != nil {
		return err
	}
	defer wb.Cancel()
	for i, k := range keys {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: reconcile: %w", err)
			}
		}
		if err := wb.Delete(k); err != nil {
			return fmt.Errorf("lossless: reconcile: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("lossless: reconcile: %w", err)
	}
	return nil
}

// coverPositions maps every message the context covers to the position of
// the item covering it: its own raw item, or the summary item above it.
func (e *Engine) coverPositions(ctx context.Context, conv *Conversation, items []dag.Item) (map[uint64]uint64, error) {
	out := make(map[uint64]uint64, len(items))
	var walk func(id string, pos uint64, depth int) error
	walk = func(id string, pos uint64, depth int) error {
		if depth > 64 {
			return fmt.Errorf("lossless: reconcile: summary %s: %w", id, dag.ErrInvariant)
		}
		s, err := conv.summary(ctx, id)
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

// movedSeqs returns the order positions of the conversation's moved
// messages (the 'O' records).
func movedSeqs(r store.Reader, c convID) (map[uint64]uint64, error) {
	moved := map[uint64]uint64{}
	for p, err := range r.Orders(c) {
		if err != nil {
			return nil, err
		}
		moved[p.Key] = p.Value
	}
	return moved, nil
}

// orderAt returns seq's order position given the moved messages.
func orderAt(moved map[uint64]uint64, seq uint64) uint64 {
	if p, ok := moved[seq]; ok {
		return p
	}
	return seq * posStep
}

// orderedSeqs returns the conversation's messages 1..n sorted by their
// order positions (seq*posStep unless a reconciliation moved them): the
// conversation in transcript order.
func orderedSeqs(r store.Reader, c convID, n int64) ([]uint64, error) {
	moved, err := movedSeqs(r, c)
	if err != nil {
		return nil, err
	}
	seqs := make([]uint64, n)
	for i := range seqs {
		seqs[i] = uint64(i + 1)
	}
	if len(moved) > 0 {
		sort.SliceStable(seqs, func(i, j int) bool { return orderAt(moved, seqs[i]) < orderAt(moved, seqs[j]) })
	}
	return seqs, nil
}

// orderPos returns seq's order position (see orderedSeqs).
func orderPos(txn *badger.Txn, c convID, seq uint64) (uint64, error) {
	v, err := getValue(txn, orderKey(c, seq))
	if err != nil {
		if errors.Is(err, core.ErrNotFound) {
			return seq * posStep, nil
		}
		return 0, err
	}
	p, ok := getU64(v)
	if !ok {
		return 0, fmt.Errorf("%w: order record", errBadRecord)
	}
	return p, nil
}
