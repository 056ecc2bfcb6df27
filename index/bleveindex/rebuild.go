package bleveindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"

	"github.com/lossless-engine/contextengine/index"
)

// Source yields the docs of the store for Rebuild: every message and
// summary, the messages of a session in Seq order, each with its position
// pos, an opaque byte string that increases in yield order. With after
// non-nil, it yields only the docs after the one at position after (a
// rebuild resumed where an earlier one stopped). It stops when yield
// returns false.
type Source func(ctx context.Context, after []byte, yield func(d index.Doc, pos []byte) bool) error

// The two slots of the live index, and the file naming the live one.
const (
	slotA       = "bleve"
	slotB       = "bleve.next"
	currentFile = "current"
)

func otherSlot(s string) string {
	if s == slotA {
		return slotB
	}
	return slotA
}

// errBadCurrent: the file naming the live slot holds something else.
var errBadCurrent = errors.New("index: bad slot file")

// readCurrent returns the slot of the live index in dir (errBadCurrent
// when the file is corrupt).
func readCurrent(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, currentFile))
	if os.IsNotExist(err) {
		return slotA, nil
	}
	if err != nil {
		return "", fmt.Errorf("index: open: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s != slotA && s != slotB {
		return "", fmt.Errorf("%w: %s names %q, not %q or %q", errBadCurrent, filepath.Join(dir, currentFile), clip(s, 64), slotA, slotB)
	}
	return s, nil
}

// writeCurrent makes slot the live one, durably (a new file renamed over
// the old, then the directory synced).
func writeCurrent(dir, slot string) error {
	tmp := filepath.Join(dir, currentFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.WriteString(slot + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, currentFile)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// asideIndex is an index being built by Rebuild in the slot that is not
// live. The worker indexes into it every batch it indexes into the live one
// (under bmu, shared); Rebuild reads deleted and err under bmu, exclusive.
type asideIndex struct {
	bi   bleve.Index
	slot string
	// deleted are the ids deleted while it is built: a source read before
	// the deletion may yield them again, so they are deleted once more
	// before the swap.
	deleted map[string]struct{}
	err     error // the first failed batch of the worker into it
}

// openAside deals with the slot that is not live (Open): an index a
// rebuild left there is kept, to be resumed, when the live index needs a
// rebuild and it was built for the store's current generation (every doc
// the store gained since its rebuild started was indexed into it); any
// other is removed.
func (ix *Index) openAside() error {
	p := filepath.Join(ix.dir, otherSlot(ix.live))
	if _, err := os.Stat(p); os.IsNotExist(err) {
		return nil
	}
	if ix.needsRebuild {
		if bi := openResumable(p, ix.opts.Generation); bi != nil {
			ix.aside = &asideIndex{bi: bi, slot: otherSlot(ix.live), deleted: map[string]struct{}{}}
			return nil
		}
	}
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("index: open: remove the unfinished rebuild: %w", err)
	}
	return nil
}

// openResumable opens the index at p if a rebuild can resume it for a
// store at generation gen; nil otherwise.
func openResumable(p string, gen uint64) bleve.Index {
	bi, err := safeOpen(p)
	if err != nil {
		return nil
	}
	fv, err1 := bi.GetInternal(keyFormat)
	ag, err2 := bi.GetInternal(keyAsideGen)
	cur, err3 := bi.GetInternal(keyCursor)
	if err1 != nil || err2 != nil || err3 != nil || string(fv) != strconv.Itoa(index.FormatVersion) ||
		len(ag) != 8 || binary.BigEndian.Uint64(ag) != gen || len(cur) < 8 {
		bi.Close()
		return nil
	}
	return bi
}

// Resumable returns the number of docs an interrupted rebuild already
// indexed, which the next Rebuild keeps (it reads the source from there
// on); 0 when a rebuild would start from the beginning.
func (ix *Index) Resumable() int {
	ix.bmu.RLock()
	a := ix.aside
	ix.bmu.RUnlock()
	if a == nil {
		return 0
	}
	n, _, _ := readCursor(a.bi)
	return n
}

func readCursor(bi bleve.Index) (done int, after []byte, err error) {
	v, err := bi.GetInternal(keyCursor)
	if err != nil || len(v) < 8 {
		return 0, nil, err
	}
	return int(binary.BigEndian.Uint64(v)), v[8:], nil
}

func cursorBytes(done int, pos []byte) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(done)), pos...)
}

// Rebuild builds a new index from source (the store) beside the live one
// and swaps it in, reporting the number of docs indexed to progress (may be
// nil) after each batch. The live index keeps serving searches (with what
// it holds) and indexing added docs meanwhile; only the swap at the end
// takes its lock, briefly. Docs added while it runs are indexed into both.
// On success the generation last set is recorded and NeedsRebuild reports
// false.
//
// A rebuild stopped by ctx, by Close or by a source error keeps what it
// built with its position (saved with every batch): the next Rebuild, in
// this process or after the next Open, resumes after the last doc saved
// (progress counts the docs of both runs) as long as every doc the store
// gained meanwhile was added to this index (its generation then matches
// Options.Generation); otherwise it starts over. Deletions while a
// rebuild runs are applied to the new index before the swap, but not to a
// resumed one after a restart (the engine deletes only once a rebuild has
// ended). The first doc of a session after the resume point is indexed
// without the previous turn as context.
func (ix *Index) Rebuild(ctx context.Context, source Source, progress func(done int)) (err error) {
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return index.ErrClosed
	}
	if ix.rebuilding {
		ix.mu.Unlock()
		return errors.New("index: rebuild: one is running already")
	}
	rctx, stop := context.WithCancel(ctx)
	ended := make(chan struct{})
	ix.rebuilding, ix.stopRebuild, ix.rebuildEnded = true, stop, ended
	ix.needsRebuild, ix.reason = true, "rebuilding"
	ix.mu.Unlock()
	defer func() {
		stop()
		ix.mu.Lock()
		ix.rebuilding, ix.stopRebuild, ix.rebuildEnded = false, nil, nil
		closed := ix.closed
		ix.mu.Unlock()
		close(ended)
		if err != nil && closed && ctx.Err() == nil {
			err = fmt.Errorf("%w (the rebuild stopped; it resumes at the next open)", index.ErrClosed)
		}
	}()

	a, n, after, err := ix.startAside()
	if err != nil {
		return err
	}
	b := a.bi.NewBatch()
	var mem index.TurnMemory
	var last []byte
	var ferr error
	flush := func() bool {
		b.SetInternal(keyCursor, cursorBytes(n, last))
		if ferr = a.bi.Batch(b); ferr != nil {
			ferr = fmt.Errorf("index: rebuild: %w", ferr)
			return false
		}
		b.Reset()
		if progress != nil {
			progress(n)
		}
		return true
	}
	serr := source(rctx, after, func(d index.Doc, pos []byte) bool {
		if rctx.Err() != nil {
			return false
		}
		if err := b.IndexAdvanced(ix.document(&d, mem.Context(&d))); err != nil {
			ferr = fmt.Errorf("index: rebuild: %w", err)
			return false
		}
		n++
		last = append(last[:0], pos...)
		if b.Size() >= ix.opts.BatchSize {
			return flush()
		}
		return true
	})
	if ferr == nil && b.Size() > 0 {
		flush() // what was read, with its position, even when stopped
	}
	switch {
	case ferr != nil:
		ix.dropAside(a)
		return ferr
	case serr != nil:
		return fmt.Errorf("index: rebuild: source: %w", serr)
	case rctx.Err() != nil:
		return fmt.Errorf("index: rebuild: %w", rctx.Err())
	}
	// One segment after a bulk build: fewer term lookups per query. Done
	// before the swap, so that it costs searches nothing.
	if err := forceMerge(rctx, a.bi); err != nil {
		if rctx.Err() != nil {
			return fmt.Errorf("index: rebuild: %w", rctx.Err())
		}
		return fmt.Errorf("index: rebuild: %w", err)
	}
	if err := persist(a.bi, filepath.Join(ix.dir, a.slot)); err != nil {
		return fmt.Errorf("index: rebuild: persist: %w", err)
	}
	return ix.swap(a)
}

// startAside returns the aside index a rebuild writes into: the one an
// interrupted rebuild left (with its count and position), or a new one,
// which the worker indexes into from now on, before the source is read
// (so every doc committed after the source's snapshot reaches it).
func (ix *Index) startAside() (a *asideIndex, done int, after []byte, err error) {
	ix.bmu.Lock()
	a = ix.aside
	if a != nil && a.err != nil {
		ix.aside = nil
		ix.bmu.Unlock()
		ix.dropAside(a)
		ix.bmu.Lock()
		a = nil
	}
	slot := otherSlot(ix.live)
	ix.bmu.Unlock()
	if a != nil {
		done, after, err = readCursor(a.bi)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("index: rebuild: read its position: %w", err)
		}
		return a, done, after, nil
	}
	p := filepath.Join(ix.dir, slot)
	if err := os.RemoveAll(p); err != nil {
		return nil, 0, nil, fmt.Errorf("index: rebuild: %w", err)
	}
	bi, err := newBleve(p)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("index: rebuild: %w", err)
	}
	a = &asideIndex{bi: bi, slot: slot, deleted: map[string]struct{}{}}
	ix.bmu.Lock()
	defer ix.bmu.Unlock()
	ix.mu.Lock()
	gen := ix.wantGen // counts what was enqueued so far: all in the source
	ix.mu.Unlock()
	b := bi.NewBatch()
	b.SetInternal(keyFormat, []byte(strconv.Itoa(index.FormatVersion)))
	b.SetInternal(keyAsideGen, genBytes(gen))
	b.SetInternal(keyCursor, cursorBytes(0, nil))
	if err := bi.Batch(b); err != nil {
		bi.Close()
		os.RemoveAll(p)
		return nil, 0, nil, fmt.Errorf("index: rebuild: %w", err)
	}
	ix.aside = a
	return a, 0, nil, nil
}

// dropAside stops indexing into a and removes it.
func (ix *Index) dropAside(a *asideIndex) {
	ix.bmu.Lock()
	if ix.aside == a {
		ix.aside = nil
	}
	ix.bmu.Unlock()
	closeBleve(a.bi, filepath.Join(ix.dir, a.slot))
	os.RemoveAll(filepath.Join(ix.dir, a.slot))
}

// swap makes the completed aside index a the live one: under bmu (held
// for one small batch and the write of the slot file), then the old index
// is closed and removed.
func (ix *Index) swap(a *asideIndex) error {
	ix.bmu.Lock()
	if a.err != nil {
		err := a.err
		ix.bmu.Unlock()
		ix.dropAside(a)
		return err
	}
	b := a.bi.NewBatch()
	// Every mark the worker applied was applied to a as well: the docs
	// enqueued before it are in a (from the source or from the worker).
	b.SetInternal(keyGen, genBytes(ix.appliedGen))
	b.DeleteInternal(keyAsideGen)
	b.DeleteInternal(keyCursor)
	for id := range a.deleted {
		b.Delete(id)
	}
	if err := a.bi.Batch(b); err != nil {
		ix.bmu.Unlock()
		return fmt.Errorf("index: rebuild: swap: %w", err)
	}
	if err := writeCurrent(ix.dir, a.slot); err != nil {
		ix.bmu.Unlock()
		return fmt.Errorf("index: rebuild: swap: %w", err)
	}
	old, oldSlot := ix.bi, ix.live
	ix.bi, ix.live, ix.aside = a.bi, a.slot, nil
	ix.dfs.reset()
	ix.mu.Lock()
	ix.needsRebuild, ix.reason = false, ""
	ix.err = nil
	ix.mu.Unlock()
	ix.bmu.Unlock()
	closeBleve(old, filepath.Join(ix.dir, oldSlot))
	if err := os.RemoveAll(filepath.Join(ix.dir, oldSlot)); err != nil {
		return fmt.Errorf("index: rebuild: remove the old index: %w", err)
	}
	return nil
}

// clip cuts s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
