package bleveindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/lossless-engine/contextengine/core"

	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/batchq"
)

// Field names in the bleve documents.
const (
	fText    = "text"
	fCtx     = "ctx"
	fAgent   = "agent"
	fConv    = "conv"
	fSession = "session"
	fKind    = "kind"
	fTS      = "ts"
	fPos     = "pos"  // session + "\x1f" + seq: finds neighbours by exact term
	fMeta    = "meta" // stored only: every field a hit carries, in one value (encodeMeta)
)

var (
	keyFormat = []byte("lossless_format")
	keyGen    = []byte("lossless_generation")
	// keyAsideGen and keyCursor are kept by an index being rebuilt aside
	// (rebuild.go): the generation of the last mark indexed into it, and
	// the rebuild's progress (docs read from the source, then the position
	// of the last one).
	keyAsideGen = []byte("lossless_aside_generation")
	keyCursor   = []byte("lossless_rebuild_cursor")
	// keyPersist is written by persist: a batch to wait for, changing nothing.
	keyPersist = []byte("lossless_persist")
)

// Options configure an Index. The zero value is usable.
type Options struct {
	// Generation is the store's current generation (any number the store
	// changes whenever its indexed content changes, e.g. its last sequence
	// number). When it differs from the generation recorded in the index,
	// the index is stale and NeedsRebuild reports true. 0 with no index on
	// disk means an empty store: a fresh index needs no rebuild.
	Generation uint64
	// BatchSize is the number of docs indexed per bleve batch (default 1000).
	BatchSize int
	// MaxLag bounds the docs waiting to be indexed: Add blocks while more
	// than MaxLag are pending (default 100,000).
	MaxLag int
	// MaxLagBytes bounds the text (Text plus Context) waiting to be
	// indexed, so that a burst of long messages cannot hold unbounded
	// memory: Add blocks while more is pending (default 16 MiB: a queued
	// doc costs about 1.3 times its text on the heap, so 64 MiB let a bulk
	// load hold some 80 MB of queue).
	MaxLagBytes int
	// BM25B is the BM25 length-normalisation parameter b (default 0.3),
	// applied by the index's own term scorer (bm25.go): Bleve's package
	// variable search.BM25_b is never changed.
	BM25B float64
	// StoreText keeps Text in the index so that hits carry it. By default
	// it is not stored (hits have an empty Text; the caller reads the
	// message from the store, the source of truth), which keeps the index
	// small and searches cheap.
	StoreText bool
	// BeforeBatch, when set, is called by the indexing goroutine before it
	// indexes each batch of queued docs, outside every lock of the index
	// (tests use it to hold indexing and so fill the queue).
	BeforeBatch func()
}

func (o *Options) fill() {
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.MaxLag <= 0 {
		o.MaxLag = 100_000
	}
	if o.MaxLagBytes <= 0 {
		o.MaxLagBytes = 16 << 20
	}
	if o.BM25B <= 0 {
		o.BM25B = index.DefaultBM25B
	}
}

// Index is a Bleve (scorch) full-text index of messages and summaries,
// kept beside the store and rebuildable from it. Docs are added to a queue
// and indexed in batches by a background goroutine. All methods are safe
// for concurrent use.
//
// On disk, dir holds the live Bleve index in one of two slots ("bleve",
// "bleve.next"), named by the file "current" (missing: "bleve"). Rebuild
// builds a new index in the other slot while the live one keeps serving,
// then swaps them under a short lock (rebuild.go).
type Index struct {
	dir  string
	opts Options

	chat analysis.Analyzer

	// bmu guards bi, live, aside and appliedGen: searches and the worker's
	// batches take it shared, a swap (Rebuild's last step) and Close
	// exclusively.
	bmu   sync.RWMutex
	bi    bleve.Index
	live  string // slot of bi
	aside *asideIndex
	// appliedGen is the generation of the last mark the worker applied
	// (Options.Generation before any).
	appliedGen uint64

	mu sync.Mutex
	// queue holds the docs, deletions and marks waiting to be indexed
	// (guarded by mu; the worker takes a batch off it, then reports it
	// applied).
	queue        *batchq.Queue[item]
	waiting      int    // Add calls waiting for room
	enq, done    uint64 // docs enqueued / applied
	wantGen      uint64
	err          error // sticky worker error
	closed       bool
	needsRebuild bool
	reason       string
	rebuilding   bool               // a Rebuild call is running
	stopRebuild  context.CancelFunc // stops it (Close)
	rebuildEnded chan struct{}      // closed when it returns
	prev         index.TurnMemory   // worker only
	dfs          dfCache
	// failApply, set by tests, makes apply fail before it writes anything.
	failApply func() error

	wg sync.WaitGroup
}

// item is a queued doc, a deletion (doc.ID only) or a generation marker.
type item struct {
	doc    index.Doc
	gen    uint64
	isMark bool
	isDel  bool
}

// Open opens the index in dir (created when missing). A missing, stale
// (generation differs from opts.Generation), incomplete or corrupt index is
// replaced by an empty one and NeedsRebuild reports true: call Rebuild with
// the store as source. An index written by a newer FormatVersion is refused
// with an error wrapping core.ErrFormatTooNew.
func Open(dir string, opts Options) (*Index, error) {
	opts.fill()
	if dir == "" {
		return nil, errors.New("index: empty directory")
	}
	ix := &Index{
		dir:        dir,
		opts:       opts,
		wantGen:    opts.Generation,
		appliedGen: opts.Generation,
	}
	ix.queue = batchq.New(&ix.mu, batchq.Options[item]{MaxItems: opts.MaxLag, MaxBytes: opts.MaxLagBytes,
		Size: func(it *item) int { return docBytes(&it.doc) }})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("index: open: %w", err)
	}
	live, err := readCurrent(dir)
	corrupt := ""
	if errors.Is(err, errBadCurrent) {
		// Neither slot can be trusted: start from an empty index.
		corrupt = "corrupt: " + err.Error()
		for _, name := range []string{currentFile, slotA, slotB} {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("index: open: %w", err)
			}
		}
		live, err = slotA, nil
	}
	if err != nil {
		return nil, err
	}
	ix.live = live
	if err := ix.openBleve(); err != nil {
		return nil, err
	}
	if corrupt != "" && ix.needsRebuild {
		ix.reason = corrupt
	}
	ix.chat = ix.bi.Mapping().AnalyzerNamed(index.AnalyzerChat)
	if ix.chat == nil {
		ix.bi.Close()
		return nil, errors.New("index: open: chat analyzer missing from mapping")
	}
	if err := ix.openAside(); err != nil {
		ix.bi.Close()
		return nil, err
	}
	ix.wg.Add(1)
	go ix.worker()
	return ix, nil
}

func (ix *Index) path() string { return filepath.Join(ix.dir, ix.live) }

// openBleve opens or creates the bleve index and decides NeedsRebuild.
func (ix *Index) openBleve() error {
	p := ix.path()
	_, statErr := os.Stat(p)
	if statErr != nil {
		if !os.IsNotExist(statErr) {
			return fmt.Errorf("index: open: %w", statErr)
		}
		if err := ix.create(ix.opts.Generation == 0); err != nil {
			return err
		}
		if ix.opts.Generation != 0 {
			ix.needsRebuild, ix.reason = true, "missing"
		}
		return nil
	}
	bi, err := safeOpen(p)
	if err != nil {
		return ix.recreate("corrupt: " + err.Error())
	}
	fv, err := bi.GetInternal(keyFormat)
	if err != nil || len(fv) == 0 {
		bi.Close()
		return ix.recreate("corrupt: no format marker")
	}
	v, err := strconv.Atoi(string(fv))
	if err != nil {
		bi.Close()
		return ix.recreate("corrupt: bad format marker")
	}
	if v > index.FormatVersion {
		bi.Close()
		return fmt.Errorf("index: format %d, this build reads up to %d: %w", v, index.FormatVersion, core.ErrFormatTooNew)
	}
	if v < index.FormatVersion {
		bi.Close()
		return ix.recreate(fmt.Sprintf("old format %d", v))
	}
	gv, err := bi.GetInternal(keyGen)
	if err != nil {
		bi.Close()
		return ix.recreate("corrupt: " + err.Error())
	}
	ix.bi = bi
	switch {
	case len(gv) != 8:
		ix.needsRebuild, ix.reason = true, "incomplete"
	case binary.BigEndian.Uint64(gv) != ix.opts.Generation:
		ix.needsRebuild = true
		ix.reason = fmt.Sprintf("stale: generation %d, store %d", binary.BigEndian.Uint64(gv), ix.opts.Generation)
	}
	return nil
}

// safeOpen opens a bleve index, turning a panic on corrupt files into an error.
func safeOpen(p string) (bi bleve.Index, err error) {
	defer func() {
		if r := recover(); r != nil {
			bi, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	forgetFailure(p)
	bi, err = bleve.OpenUsing(p, scorchConfig())
	if err != nil {
		return nil, err
	}
	// Touch the index so that unreadable segments fail here.
	if _, err = bi.DocCount(); err != nil {
		bi.Close()
		return nil, err
	}
	return bi, nil
}

// recreate replaces the index with an empty one and marks it for rebuild.
func (ix *Index) recreate(reason string) error {
	if err := os.RemoveAll(ix.path()); err != nil {
		return fmt.Errorf("index: remove %s: %w", reason, err)
	}
	if err := ix.create(false); err != nil {
		return err
	}
	ix.needsRebuild, ix.reason = true, reason
	return nil
}

// scorchConfig is the runtime configuration of the bleve (scorch) index:
// a batch returns once its docs are searchable, without waiting for them to
// be persisted (scorch's default waits for a persisted snapshot per batch:
// 1,000 docs added 20 at a time took 2.0 s to become searchable, 0.6 s
// without the wait; an import test under -race went from 7.7 s to ~2 s).
// Snapshots are persisted in
// the background, each with the internal values (generation) of the batches
// it holds, so a crash loses only a suffix of batches together with their
// generation marks: the index is then stale and rebuilt. Close and Rebuild
// wait for persistence (persist).
//
// Merged segments are capped at maxSegmentDocs documents: merging builds a
// segment's term dictionary (an FST) in memory, and with scorch's default
// cap (5M documents) the merges of a 1M-message store grew one such buffer
// to 64 MB, the largest part of a bulk load's heap peak.
func scorchConfig() map[string]interface{} {
	return map[string]interface{}{
		"unsafe_batch":           true,
		"scorchMergePlanOptions": map[string]interface{}{"MaxSegmentSize": maxSegmentDocs},
		"asyncErrorCallbackName": asyncErrorCallback,
	}
}

// maxSegmentDocs caps the documents of a merged segment (see scorchConfig):
// a 1M-message store has five or more segments at the top tier, each
// searched in turn.
const maxSegmentDocs = 200_000

// newBleve creates an empty bleve index at p with the package's mapping.
func newBleve(p string) (bleve.Index, error) {
	forgetFailure(p)
	return bleve.NewUsing(p, newMapping(), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, scorchConfig())
}

// persist waits until everything batched into bi (the bleve index at p)
// so far is persisted, or until scorch reports that it cannot persist
// (asyncerr.go).
func persist(bi bleve.Index, p string) error {
	f := failureOf(scorchPath(p))
	select {
	case <-f.ch:
		return fmt.Errorf("index: persist %s: %w", p, f.err)
	default:
	}
	b := bi.NewBatch()
	b.SetInternal(keyPersist, []byte{1})
	done := make(chan error, 1)
	b.SetPersistedCallback(func(err error) { done <- err })
	if err := bi.Batch(b); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-f.ch:
		return fmt.Errorf("index: persist %s: %w", p, f.err)
	}
}

// create makes a new empty bleve index; complete records the generation so
// that the index counts as up to date.
func (ix *Index) create(complete bool) error {
	bi, err := newBleve(ix.path())
	if err != nil {
		return fmt.Errorf("index: create: %w", err)
	}
	b := bi.NewBatch()
	b.SetInternal(keyFormat, []byte(strconv.Itoa(index.FormatVersion)))
	if complete {
		b.SetInternal(keyGen, genBytes(ix.opts.Generation))
	}
	if err := bi.Batch(b); err != nil {
		bi.Close()
		return fmt.Errorf("index: create: %w", err)
	}
	ix.bi = bi
	return nil
}

func genBytes(g uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], g)
	return b[:]
}

// newMapping is the index mapping: text fields with the chat analyzer,
// keyword fields for scopes, numeric seq and timestamp, BM25 scoring.
func newMapping() *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bindex.BM25Scoring
	im.DefaultAnalyzer = index.AnalyzerChat
	dm := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = index.AnalyzerChat
	text.Store = false // per Options.StoreText, set on each document
	text.IncludeTermVectors = false
	text.IncludeInAll = false
	dm.AddFieldMappingsAt(fText, text)
	ctxf := bleve.NewTextFieldMapping()
	ctxf.Analyzer = index.AnalyzerChat
	ctxf.Store = false
	ctxf.IncludeTermVectors = false
	ctxf.IncludeInAll = false
	dm.AddFieldMappingsAt(fCtx, ctxf)
	pos := bleve.NewKeywordFieldMapping()
	pos.Store = false
	pos.IncludeInAll = false
	pos.IncludeTermVectors = false
	dm.AddFieldMappingsAt(fPos, pos)
	meta := bleve.NewKeywordFieldMapping()
	meta.Index = false
	meta.Store = true
	meta.IncludeInAll = false
	dm.AddFieldMappingsAt(fMeta, meta)
	for _, f := range []string{fAgent, fConv, fSession, fKind} {
		k := bleve.NewKeywordFieldMapping()
		k.Store = false
		k.IncludeInAll = false
		k.IncludeTermVectors = false
		dm.AddFieldMappingsAt(f, k)
	}
	ts := bleve.NewKeywordFieldMapping() // terms from tsAnalyzer, see timeterms.go
	ts.Store = false
	ts.IncludeInAll = false
	ts.IncludeTermVectors = false
	dm.AddFieldMappingsAt(fTS, ts)
	im.DefaultMapping = dm
	return im
}

// NeedsRebuild reports whether the index was missing, stale, incomplete or
// corrupt when opened and has not been rebuilt since.
func (ix *Index) NeedsRebuild() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.needsRebuild
}

// RebuildReason says why NeedsRebuild is true ("" when it is not).
func (ix *Index) RebuildReason() string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.needsRebuild {
		return ""
	}
	return ix.reason
}

// Add enqueues docs for indexing and returns at once (it blocks only while
// more than Options.MaxLag docs or Options.MaxLagBytes of text are
// pending). Docs of one session should be added in Seq order: the previous
// turn's text is indexed as context of the next. Adding an id again
// replaces the doc.
func (ix *Index) Add(docs ...index.Doc) {
	if len(docs) == 0 {
		return
	}
	ix.enqueue(docs, 0, false)
}

// AddGeneration is Add followed by a generation mark, atomically in queue
// order: the generation moves by delta (negative: back, never below 0)
// from the one last set, and is recorded with these docs once they are
// indexed (see SetGeneration). The caller keeps no count and holds no lock
// of its own while Add waits for room in the queue.
func (ix *Index) AddGeneration(delta int64, docs ...index.Doc) {
	ix.enqueue(docs, delta, true)
}

// enqueue waits for room, then queues docs and, when mark, a generation
// mark moved by delta, under one hold of mu.
func (ix *Index) enqueue(docs []index.Doc, delta int64, mark bool) {
	ix.mu.Lock()
	if len(docs) > 0 && ix.queue.Full() {
		ix.waiting++
		ix.queue.WaitRoom(func() bool { return ix.closed || ix.err != nil })
		ix.waiting--
	}
	if ix.closed {
		ix.mu.Unlock()
		return
	}
	for _, d := range docs {
		ix.queue.Push(item{doc: d})
	}
	ix.enq += uint64(len(docs))
	if mark {
		switch {
		case delta >= 0:
			ix.wantGen += uint64(delta)
		default:
			ix.wantGen -= min(uint64(-delta), ix.wantGen)
		}
		ix.queue.Push(item{gen: ix.wantGen, isMark: true})
	}
	ix.mu.Unlock()
}

// Delete removes docs by id (queued in order with Add, so a doc added and
// then deleted is gone once both are applied; an unknown id is no error).
// Lag counts pending deletions as docs.
func (ix *Index) Delete(ids ...string) {
	if len(ids) == 0 {
		return
	}
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return
	}
	for _, id := range ids {
		ix.queue.Push(item{doc: index.Doc{ID: id}, isDel: true})
	}
	ix.enq += uint64(len(ids))
	ix.mu.Unlock()
}

// ConversationDocIDs returns the ids of every doc of a conversation, once
// the docs added before the call are indexed (for deleting them all).
func (ix *Index) ConversationDocIDs(ctx context.Context, conversation string) ([]string, error) {
	if err := ix.Flush(ctx); err != nil {
		return nil, err
	}
	q := termQ(fConv, conversation)
	ix.bmu.RLock()
	defer ix.bmu.RUnlock()
	if ix.isClosed() {
		return nil, index.ErrClosed
	}
	var ids []string
	const page = 10_000
	for {
		req := bleve.NewSearchRequestOptions(q, page, 0, false)
		req.SortBy([]string{"_id"})
		if len(ids) > 0 {
			req.SearchAfter = []string{ids[len(ids)-1]}
		}
		res, err := ix.bi.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("index: conversation docs: %w", err)
		}
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		if len(res.Hits) < page {
			break
		}
	}
	return ids, nil
}

// docBytes is what a queued doc counts toward Options.MaxLagBytes.
func docBytes(d *index.Doc) int { return len(d.Text) + len(d.Context) }

// SetGeneration records that everything of the store up to generation gen
// has been added: once the docs added before this call are indexed, gen is
// stored in the index (atomically with them), so a later Open with
// Options.Generation == gen finds the index up to date.
func (ix *Index) SetGeneration(gen uint64) {
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return
	}
	ix.wantGen = gen
	ix.queue.Push(item{gen: gen, isMark: true})
	ix.mu.Unlock()
}

// Generation returns the generation last set (SetGeneration, or
// Options.Generation moved by every AddGeneration since): what the index
// records once everything added so far is indexed.
func (ix *Index) Generation() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.wantGen
}

// Waiting returns the number of Add calls waiting for room in the queue.
func (ix *Index) Waiting() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.waiting
}

// Lag returns the number of docs added but not yet searchable.
func (ix *Index) Lag() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return int(ix.enq - ix.done)
}

// Flush waits until every doc added before the call is searchable, the
// context ends, or the index fails or closes.
func (ix *Index) Flush(ctx context.Context) error {
	ix.mu.Lock()
	target := ix.queue.Pushed()
	ix.mu.Unlock()
	for {
		ix.mu.Lock()
		doneNow := ix.queue.Done() >= target
		err, closed, ch := ix.err, ix.closed, ix.queue.ProgressC()
		ix.mu.Unlock()
		if err != nil {
			return err
		}
		if doneNow {
			return nil
		}
		if closed {
			return index.ErrClosed
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("index: flush: %w", ctx.Err())
		case <-ch:
		}
	}
}

// worker indexes queued docs in batches until Close.
func (ix *Index) worker() {
	defer ix.wg.Done()
	for {
		ix.mu.Lock()
		if !ix.queue.WaitWork() {
			ix.mu.Unlock()
			return // closed, and what was queued is indexed
		}
		// A batch is at most BatchSize docs and maxBatchBytes of text:
		// Bleve analyses a whole batch before indexing it, and that
		// analysis holds several times the text.
		items := ix.queue.Take(ix.opts.BatchSize, maxBatchBytes) // room for Add at once
		ix.mu.Unlock()

		if ix.opts.BeforeBatch != nil {
			ix.opts.BeforeBatch()
		}
		err := ix.apply(items)
		ndocs := 0
		for i := range items {
			if !items[i].isMark {
				ndocs++
			}
		}
		ix.mu.Lock()
		ix.done += uint64(ndocs)
		if err != nil && ix.err == nil {
			ix.err = err
		}
		if err != nil && !ix.needsRebuild {
			// The batch's docs are not in the index: from now on no
			// generation mark may say it is complete, so the next Open
			// finds it stale and rebuilds it (else those docs would never
			// be searchable again).
			ix.needsRebuild, ix.reason = true, "a batch failed: "+err.Error()
		}
		ix.queue.Finish(len(items)) // wakes Flush and Add
		ix.mu.Unlock()
	}
}

// maxBatchBytes bounds the text of one indexing batch (see worker).
const maxBatchBytes = 4 << 20

// apply indexes one batch of items into the live index and, while a
// rebuild builds one aside, into that one too (docs the worker indexes
// after the rebuild's source was read are in the rebuilt index). A
// generation mark is not recorded in the live index while it needs a
// rebuild: it lacks the store's older docs (a rebuild that failed or was
// cancelled by Close, or one not started yet), and recording the
// generation would make the next Open take it for complete. In the aside
// index it is recorded under keyAsideGen, which says which generation a
// resumed rebuild may continue from.
func (ix *Index) apply(items []item) error {
	ix.bmu.RLock()
	defer ix.bmu.RUnlock()
	if ix.failApply != nil {
		if err := ix.failApply(); err != nil {
			return fmt.Errorf("index: batch: %w", err)
		}
	}
	ix.mu.Lock()
	incomplete := ix.needsRebuild
	ix.mu.Unlock()
	b := ix.bi.NewBatch()
	a := ix.aside
	var ab *bleve.Batch
	if a != nil && a.err == nil {
		ab = a.bi.NewBatch()
	}
	for i := range items {
		it := &items[i]
		switch {
		case it.isMark:
			if !incomplete {
				b.SetInternal(keyGen, genBytes(it.gen))
			}
			if ab != nil {
				ab.SetInternal(keyAsideGen, genBytes(it.gen))
			}
			ix.appliedGen = it.gen
		case it.isDel:
			b.Delete(it.doc.ID)
			if ab != nil {
				ab.Delete(it.doc.ID)
				a.deleted[it.doc.ID] = struct{}{}
			}
		default:
			cx := ix.prev.Context(&it.doc)
			if err := b.IndexAdvanced(ix.document(&it.doc, cx)); err != nil {
				return fmt.Errorf("index: batch: %w", err)
			}
			if ab != nil {
				if err := ab.IndexAdvanced(ix.document(&it.doc, cx)); err != nil {
					return fmt.Errorf("index: batch: %w", err)
				}
				delete(a.deleted, it.doc.ID)
			}
		}
	}
	if err := ix.bi.Batch(b); err != nil {
		return fmt.Errorf("index: batch: %w", err)
	}
	if ab != nil {
		if err := a.bi.Batch(ab); err != nil {
			a.err = fmt.Errorf("index: batch into the rebuilt index: %w", err)
		}
	}
	return nil
}

// document builds the bleve document of d, with cx indexed as its context
// (index.TurnMemory.Context). A document is indexed into one bleve index only:
// Batch analyzes it in place.
func (ix *Index) document(d *index.Doc, cx string) *document.Document {
	doc := document.NewDocument(d.ID)
	textOpts := bindex.IndexField
	if ix.opts.StoreText {
		textOpts |= bindex.StoreField
	}
	doc.AddField(document.NewTextFieldCustom(fText, nil, []byte(d.Text), textOpts, ix.chat))
	if cx != "" {
		doc.AddField(document.NewTextFieldCustom(fCtx, nil, []byte(cx), bindex.IndexField, ix.chat))
	}
	kw := bindex.IndexField
	doc.AddField(document.NewTextFieldWithIndexingOptions(fAgent, nil, []byte(d.Agent), kw))
	doc.AddField(document.NewTextFieldWithIndexingOptions(fConv, nil, []byte(d.Conversation), kw))
	doc.AddField(document.NewTextFieldWithIndexingOptions(fSession, nil, []byte(d.Session), kw))
	kind := d.Kind
	if kind == "" {
		kind = index.KindMessage
	}
	doc.AddField(document.NewTextFieldWithIndexingOptions(fKind, nil, []byte(kind), kw))
	doc.AddField(document.NewTextFieldCustom(fTS, nil, tsValue(d.Timestamp), kw, tsAnalyzer{}))
	doc.AddField(document.NewTextFieldWithIndexingOptions(fPos, nil, []byte(posKey(d.Session, d.Seq)), bindex.IndexField))
	doc.AddField(document.NewTextFieldWithIndexingOptions(fMeta, nil, encodeMeta(d, kind), bindex.StoreField))
	return doc
}

// encodeMeta packs the fields a hit carries into one stored value (loading
// one stored field per hit instead of eight is most of a query's
// allocations): uvarint-length-prefixed agent, conversation, session, role
// and kind, then seq (uvarint), timestamp (varint) and the text hash (8
// bytes).
func encodeMeta(d *index.Doc, kind string) []byte {
	b := make([]byte, 0, 40+len(d.Agent)+len(d.Conversation)+len(d.Session)+len(d.Role)+len(kind))
	for _, s := range []string{d.Agent, d.Conversation, d.Session, d.Role, kind} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, d.Seq)
	b = binary.AppendVarint(b, d.Timestamp)
	return binary.BigEndian.AppendUint64(b, index.TextKey(d.Text))
}

// decodeMeta unpacks encodeMeta into h; false when b is malformed.
func decodeMeta(b []byte, h *index.Hit) bool {
	var strs [5]string
	for i := range strs {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return false
		}
		strs[i] = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	seq, k := binary.Uvarint(b)
	if k <= 0 {
		return false
	}
	b = b[k:]
	ts, k := binary.Varint(b)
	if k <= 0 || len(b)-k != 8 {
		return false
	}
	h.Agent, h.Conversation, h.Session, h.Role, h.Kind = strs[0], strs[1], strs[2], strs[3], strs[4]
	h.Seq, h.Timestamp = seq, ts
	h.SetTextKey(binary.BigEndian.Uint64(b[k:]))
	return true
}

func posKey(session string, seq uint64) string {
	return session + "\x1f" + strconv.FormatUint(seq, 10)
}

// Compact merges the index's segments into one (scorch force merge), which
// makes queries cheaper; Rebuild does it at the end. It blocks until done.
func (ix *Index) Compact(ctx context.Context) error {
	ix.bmu.RLock()
	defer ix.bmu.RUnlock()
	if ix.isClosed() {
		return index.ErrClosed
	}
	return forceMerge(ctx, ix.bi)
}

// forceMerge merges bi's segments into one.
func forceMerge(ctx context.Context, bi bleve.Index) error {
	adv, err := bi.Advanced()
	if err != nil {
		return fmt.Errorf("index: compact: %w", err)
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil
	}
	if err := s.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions); err != nil {
		return fmt.Errorf("index: compact: %w", err)
	}
	return nil
}

// DocCount returns the number of searchable docs.
func (ix *Index) DocCount() (uint64, error) {
	ix.bmu.RLock()
	defer ix.bmu.RUnlock()
	if ix.isClosed() {
		return 0, index.ErrClosed
	}
	n, err := ix.bi.DocCount()
	if err != nil {
		return 0, fmt.Errorf("index: doc count: %w", err)
	}
	return n, nil
}

func (ix *Index) isClosed() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.closed
}

// Close indexes what is queued, stops the worker and closes the index.
// It is idempotent.
func (ix *Index) Close() error {
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return nil
	}
	ix.closed = true
	stop, ended := ix.stopRebuild, ix.rebuildEnded
	ix.mu.Unlock()
	if stop != nil {
		// A running rebuild stops, saving its progress (it resumes at the
		// next Open).
		stop()
		<-ended
	}
	ix.mu.Lock()
	ix.queue.Close() // the worker drains the queue, then stops
	ix.mu.Unlock()
	ix.wg.Wait() // what is queued is indexed (into the aside index too)
	ix.mu.Lock()
	ix.queue.Broadcast()
	ix.mu.Unlock()
	ix.bmu.Lock()
	defer ix.bmu.Unlock()
	var errs []error
	if a := ix.aside; a != nil {
		if err := persist(a.bi, filepath.Join(ix.dir, a.slot)); err != nil {
			errs = append(errs, fmt.Errorf("index: close: persist the index being rebuilt: %w", err))
		}
		if err := closeBleve(a.bi, filepath.Join(ix.dir, a.slot)); err != nil {
			errs = append(errs, fmt.Errorf("index: close the index being rebuilt: %w", err))
		}
	}
	if err := persist(ix.bi, ix.path()); err != nil {
		errs = append(errs, fmt.Errorf("index: close: persist: %w", err))
	}
	if err := closeBleve(ix.bi, ix.path()); err != nil {
		errs = append(errs, fmt.Errorf("index: close: %w", err))
	}
	return errors.Join(errs...)
}
