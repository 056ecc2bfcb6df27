package transcript

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/diskspace"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Result reports one import of a session file.
type Result struct {
	// SessionID is the conversation's session id: the id in the file's
	// header (or the caller's).
	SessionID string `json:"sessionId"`
	// Imported counts messages stored by this run, Duplicates messages
	// already stored (skipped).
	Imported   int `json:"imported"`
	Duplicates int `json:"duplicates"`
	// Summaries counts compaction entries imported as summaries.
	Summaries int `json:"summaries"`
	// Malformed lists the lines skipped, with their line numbers.
	Malformed []core.LineError `json:"malformed,omitempty"`
	// Bytes is the number of bytes of the file read by this run.
	Bytes int64 `json:"bytes"`
	// Resumed is true when the run continued from a checkpoint (only the
	// appended part was read); false for a first import or a rewritten file.
	Resumed bool `json:"resumed"`
}

// importBatch is the number of message entries counted and stored at once.
const importBatch = 512

// Chunk is what the engine stores at once during an import: the message
// entries of up to importBatch lines (Messages), then the chunk's entry
// maps, a compaction entry last (Import.Stored).
type Chunk struct {
	// Messages are the chunk's message entries, in file order; the engine
	// validates them (Reject: those it will not store), prepares and
	// stores the others (Valid).
	Messages []core.Message
	lines    []core.LineError // position of each Messages[i] (Err: Reject's)
	indexes  []int            // entry index of each Messages[i]
	rejected int
	ids      []core.Entry
	comp     *core.Entry
	// The file's position after the chunk (its checkpoint) and the offset
	// of its last entry (the start of the file's tail).
	offset      int64
	line, index int
	tail        int64
}

// Reject marks Messages[i] as not stored: err says why (the engine's
// validation). It is reported in Result.Malformed with its line; its
// entry still counts (its id is mapped, it ends the file's tail).
func (c *Chunk) Reject(i int, err error) {
	if c.lines[i].Err == nil {
		c.rejected++
	}
	c.lines[i].Err = err
}

// Valid returns the messages not rejected, in file order (the engine
// prepares and stores them and hands their sequence numbers to Stored).
func (c *Chunk) Valid() []core.Message {
	if c.rejected == 0 {
		return c.Messages
	}
	out := make([]core.Message, 0, len(c.Messages)-c.rejected)
	for i, m := range c.Messages {
		if c.lines[i].Err == nil {
			out = append(out, m)
		}
	}
	return out
}

// ImportPath is the path under which a file's import is checkpointed and
// locked: path made absolute (as it is when that fails).
func ImportPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// Import is one import (or incremental re-import) of an OpenClaw session
// JSONL file, which the engine's door drives: Open, then (unless Done)
// Begin with the conversation it resolved for SessionID, Next and Stored
// for each chunk (with its compaction entry through PlanCompaction and
// the conversation's Replace), Checkpoint after it, then Reconcile (under
// the conversation's lock) when Reconciling, and Finish. It streams the
// file in constant memory, resumes from the file's checkpoint when the
// file was only appended to, re-reads a rewritten or rotated file from the
// start without storing anything twice (reconciling the stored
// conversation with the file's order), and skips malformed lines
// (reported in Malformed). Compaction entries become summaries (Method
// "imported") over the messages they replaced. The caller has entered the
// engine and holds the import lock of path (ImportPath: its key).
type Import struct {
	st    store.Store
	space *diskspace.Guard
	agent string
	path  string
	o     Options

	f         *os.File
	size      int64
	mtime     int64
	cp        Checkpoint
	res       Result
	start     int64
	line      int
	index     int
	prefix    hash.Hash // over [0, hashedTo): the checkpoint's PrefixHash
	hashedTo  int64
	headHash  string
	lastTail  int64
	sessionID string
	done      bool

	c   store.ConvID
	tag [8]byte
	rs  *reconcileState // set when the read must be reconciled (reconcile.go)

	pipe      *pipeline
	b         *lineBatch // the batch being cut into chunks
	bi        int        // its next line
	ended     bool       // the last batch is consumed
	ch        *Chunk     // the chunk being filled
	nmsg      int
	parseErrs []core.LineError
	last      Checkpoint
	progress  func(int64)
}

// Open opens the session file at path for agent's import into st (space:
// the store's free-space guard, nil for none), reads its checkpoint and
// names its session: sessionID when set, else the checkpoint's when the
// import resumes, else the id in the file's header, else the file's name.
func Open(ctx context.Context, st store.Store, space *diskspace.Guard, agent, sessionID, path string, o Options) (*Import, error) {
	path = ImportPath(path)
	im := &Import{st: st, space: space, agent: agent, path: path, o: o, prefix: sha256.New()}
	// Look before opening: opening a named pipe blocks until a writer comes.
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("lossless: import: %s is not a regular file (%s): %w", path, st.Mode().Type(), ErrNotSessionFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lossless: import: %w", err)
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lossless: import: %w", err)
	}
	switch {
	case fst.IsDir():
		f.Close()
		return nil, fmt.Errorf("lossless: import: %s is a directory, not a session file: %w", path, ErrNotSessionFile)
	case !fst.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("lossless: import: %s is not a regular file (%s): %w", path, fst.Mode().Type(), ErrNotSessionFile)
	}
	im.f, im.size, im.mtime = f, fst.Size(), fst.ModTime().UnixNano()
	var cp Checkpoint
	hasCP := st.View(context.WithoutCancel(ctx), func(r store.Reader) error {
		var err error
		cp, err = r.FileCheckpoint(agent, path)
		return err
	}) == nil
	if !hasCP {
		cp = Checkpoint{}
	}
	im.cp = cp
	if hasCP && CheckpointValid(f, fst, cp, im.prefix) {
		im.hashedTo = cp.Offset
		im.res.Resumed = true
		if cp.Offset == fst.Size() {
			im.res.SessionID, im.sessionID = cp.SessionID, cp.SessionID
			im.done = true
			return im, nil
		}
		im.start, im.line, im.index = cp.Offset, cp.Line, cp.Index
		if sessionID == "" {
			sessionID = cp.SessionID
		}
	}
	im.headHash = cp.HeadHash
	if !im.res.Resumed {
		im.headHash = HashFirstLine(f)
		if sessionID == "" {
			if h := firstHeader(f, o); h != nil {
				sessionID = h.ID
			}
		}
	}
	if sessionID == "" {
		sessionID = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	im.sessionID = sessionID
	im.lastTail = cp.TailStart
	if _, err := f.Seek(im.start, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("lossless: import: %w", err)
	}
	return im, nil
}

// firstHeader returns the session header of f's first non-empty line, nil
// when it holds none (the pipeline's line rules: a line over the bound,
// malformed or torn holds none).
func firstHeader(f *os.File, o Options) *core.Header {
	lr := &lineReader{r: bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10), max: o.MaxMessageBytes + LineMargin}
	var buf []byte
	var lines []rawLine
	if ok, err := lr.next(&buf, &lines); !ok || err != nil || lines[0].tooLong > 0 {
		return nil
	}
	_, hdr, err := core.ParseEntryLine(buf[lines[0].from:lines[0].to], false)
	if err != nil {
		return nil
	}
	return hdr
}

// Done reports that the file holds nothing new since its checkpoint:
// there is nothing to resolve or read (Result says so).
func (im *Import) Done() bool { return im.done }

// SessionID is the session the file is imported under (Open).
func (im *Import) SessionID() string { return im.sessionID }

// Close closes the file and stops the pipeline. It is safe to call more
// than once.
func (im *Import) Close() error {
	if im.pipe != nil {
		im.pipe.stop()
		im.pipe = nil
	}
	if im.f == nil {
		return nil
	}
	err := im.f.Close()
	im.f = nil
	return err
}

// Begin starts the read into conversation c (the one the engine resolved
// for SessionID). A read from the start into a conversation that holds
// messages is reconciled with them (reconcile.go): Begin returns true when
// it needs the conversation's NextSeq for that (read under its lock), to
// be given to BeginReconcile.
func (im *Import) Begin(ctx context.Context, c store.ConvID) (needNextSeq bool, err error) {
	im.c = c
	im.tag = FileTag(im.sessionID)
	im.res.SessionID = im.sessionID
	im.progress, _ = ctx.Value(progressKey{}).(func(int64))
	im.pipe = startPipeline(ctx, im.f, im.start, im.line, im.index, im.o)
	if im.res.Resumed {
		return false, nil
	}
	rs, need, err := maybeReconcile(ctx, im.st, c, im.tag, im.cp.Reconcile)
	im.rs = rs
	return need, err
}

// BeginReconcile starts the reconciliation of a read from the start into
// a conversation whose NextSeq is next (nothing to reconcile when it holds
// no message: next <= 1).
func (im *Import) BeginReconcile(ctx context.Context, next uint64) error {
	if next <= 1 {
		return nil
	}
	rs, err := beginReconcile(ctx, im.st, im.space, im.c, im.tag, next)
	im.rs = rs
	return err
}

// Next returns the next chunk to store, nil at the end of the file. The
// chunk is the caller's: Next may be called again (from one goroutine)
// while another stores the chunks before it (Stored, Checkpoint, in file
// order), so that the next chunk is prepared while one is stored.
func (im *Import) Next(ctx context.Context) (*Chunk, error) {
	im.ch = &Chunk{}
	im.nmsg = 0
	for !im.ended {
		if im.b == nil {
			b, err := im.pipe.nextBatch()
			if err != nil {
				return nil, err
			}
			im.b, im.bi = b, 0
		}
		b := im.b
		for im.bi < len(b.out) {
			pl := &b.out[im.bi]
			ln := b.lines[im.bi]
			im.bi++
			switch pl.kind {
			case plMalformed:
				im.parseErrs = append(im.parseErrs, pl.lerr)
				continue
			case plHeader:
				continue // the session's header: read by Open
			}
			ent := &pl.ent
			im.lastTail = ent.Offset
			if ent.ID != "" {
				im.ch.ids = append(im.ch.ids, core.Entry{ID: ent.ID, Index: ent.Index})
			}
			switch ent.Type {
			case core.EntryMessage:
				im.nmsg++
				im.ch.Messages = append(im.ch.Messages, ent.Message)
				im.ch.lines = append(im.ch.lines, core.LineError{Line: ln.line, Offset: ln.offset})
				im.ch.indexes = append(im.ch.indexes, ent.Index)
				if im.nmsg >= importBatch {
					return im.cut(ctx, ln.end, ln.line, ln.index+1)
				}
			case core.EntryCompaction:
				im.ch.comp = ent
				return im.cut(ctx, ln.end, ln.line, ln.index+1)
			}
		}
		// The batch is consumed (and its chunks stored, but the one
		// being filled).
		if b.last {
			im.ended = true
			return im.cut(ctx, b.endOffset, b.endLine, b.endIndex)
		}
		im.next()
	}
	im.next()
	return nil, nil
}

// next gives the consumed batch back and reports the progress.
func (im *Import) next() {
	b := im.b
	if b == nil {
		return
	}
	im.b = nil
	if im.progress != nil {
		im.progress(b.endOffset)
	}
	if !b.last {
		im.pipe.release(b)
	}
}

// cut ends the chunk being filled at the file's position offset (after
// line, with index entries before it).
func (im *Import) cut(ctx context.Context, offset int64, line, index int) (*Chunk, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lossless: import: %w", err)
	}
	ch := im.ch
	ch.offset, ch.line, ch.index, ch.tail = offset, line, index, im.lastTail
	if ch.comp != nil {
		// The entry's buffers belong to the pipeline's batch, reused once
		// consumed (perhaps before the chunk is stored): copied.
		ent := *ch.comp
		ent.Raw = bytes.Clone(ent.Raw)
		ent.Details = bytes.Clone(ent.Details)
		ent.Message = core.Message{}
		ch.comp = &ent
	}
	im.ch = nil
	return ch, nil
}

// Stored records that ch's valid messages are stored (seqs: their
// sequence numbers, in the order of Valid; imported: how many were new):
// it writes the chunk's entry maps and returns its compaction entry for
// the engine to apply (PlanCompaction, then the conversation's Replace;
// nil when there is none, or when it waits for the reconciliation).
func (im *Import) Stored(ctx context.Context, ch *Chunk, seqs []uint64, imported int) (*core.Entry, error) {
	im.res.Imported += imported
	im.res.Duplicates += len(seqs) - imported
	for _, l := range ch.lines {
		if l.Err != nil {
			im.res.Malformed = append(im.res.Malformed, l)
		}
	}
	if im.rs != nil && ch.comp != nil {
		// Applied after the reconciliation (reconcile.go).
		im.rs.comps = append(im.rs.comps, *ch.comp)
		ch.comp = nil
	}
	if len(seqs) > 0 || len(ch.ids) > 0 {
		// Bookkeeping of messages stored: written whether or not ctx is
		// done by then.
		wb, err := newBatch(context.WithoutCancel(ctx), im.st, im.space)
		if err != nil {
			return nil, err
		}
		defer wb.Cancel()
		j := 0
		for i := range ch.lines {
			if ch.lines[i].Err != nil {
				continue
			}
			if err := wb.PutEntrySeq(im.c, im.tag, store.EntriesCurrent, uint64(ch.indexes[i]), seqs[j]); err != nil {
				return nil, fmt.Errorf("lossless: write entry map: %w", err)
			}
			j++
		}
		for _, ent := range ch.ids {
			if err := wb.PutEntryIndex(im.c, im.tag, ent.ID, uint64(ent.Index)); err != nil {
				return nil, fmt.Errorf("lossless: write entry map: %w", err)
			}
		}
		if err := wb.Flush(); err != nil {
			return nil, fmt.Errorf("lossless: write entry map: %w", err)
		}
	}
	return ch.comp, nil
}

// Summarized counts a compaction entry the engine imported as a summary.
func (im *Import) Summarized() { im.res.Summaries++ }

// Checkpoint moves the file's checkpoint past ch (stored, with its
// compaction entry applied).
func (im *Import) Checkpoint(ctx context.Context, ch *Chunk, seqs []uint64) error {
	if fault := im.o.Fault; im.rs != nil && fault != nil {
		if err := fault("stored"); err != nil {
			return err
		}
	}
	if im.rs != nil {
		im.rs.order = append(im.rs.order, seqs...)
	}
	tailHash, err := HashRange(im.f, ch.tail, ch.offset)
	if err != nil {
		return err
	}
	if ch.offset > im.hashedTo {
		if _, err := io.Copy(im.prefix, io.NewSectionReader(im.f, im.hashedTo, ch.offset-im.hashedTo)); err != nil {
			return fmt.Errorf("lossless: import: %w", err)
		}
		im.hashedTo = ch.offset
	}
	ncp := Checkpoint{SessionID: im.sessionID, Conv: im.c.String(), Offset: ch.offset, Line: ch.line,
		Index: ch.index, MtimeNs: im.mtime, HeadHash: im.headHash, TailStart: ch.tail, TailHash: tailHash,
		PrefixHash: hex.EncodeToString(im.prefix.Sum(nil))}
	if im.rs != nil {
		ncp.Reconcile = im.rs.from
	}
	im.last = ncp
	if err := im.saveCheckpoint(ctx, ncp); err != nil {
		return err
	}
	im.res.Bytes = ch.offset - im.start
	return nil
}

// Reconciling reports that the read must be reconciled with the messages
// the conversation held before it (Reconcile), once every chunk is stored.
func (im *Import) Reconciling() bool { return im.rs != nil }

// Reconcile puts the conversation's context in the file's order
// (reconcile.go). The caller holds the conversation's lock and has checked
// the store's free space.
func (im *Import) Reconcile(ctx context.Context) error {
	return reconcile(ctx, im.st, im.space, im.o, im.c, im.tag, im.rs, im.last.Index)
}

// Deferred returns the file's compaction entries held for after the
// reconciliation, in file order (to apply as Stored's).
func (im *Import) Deferred() []core.Entry {
	if im.rs == nil {
		return nil
	}
	return im.rs.comps
}

// Result ends the import: a reconciled read's checkpoint is cleared of its
// pending reconciliation, and the result is returned with every line
// skipped, in line order.
func (im *Import) Result(ctx context.Context) (Result, error) {
	if im.rs != nil {
		im.last.Reconcile = 0
		if err := im.saveCheckpoint(ctx, im.last); err != nil {
			return im.res, err
		}
	}
	res := im.res
	res.Malformed = append(im.parseErrs, res.Malformed...)
	sort.Slice(res.Malformed, func(i, j int) bool { return res.Malformed[i].Line < res.Malformed[j].Line })
	return res, nil
}

// Partial returns what the import did so far (an import that failed).
func (im *Import) Partial() Result { return im.res }

// saveCheckpoint writes the file's checkpoint (whether or not ctx is done
// by then: the writes it records are made).
func (im *Import) saveCheckpoint(ctx context.Context, cp Checkpoint) error {
	return update(context.WithoutCancel(ctx), im.st, im.space, func(tx store.Tx) error {
		if err := tx.PutFileCheckpoint(im.agent, im.path, cp); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
	})
}

// checkSpace returns an error wrapping store.ErrDiskFull when space (the
// store's free-space guard; nil: none) says the filesystem is too full to
// write, nil otherwise.
func checkSpace(space *diskspace.Guard) error {
	if err := space.Check(); err != nil {
		return fmt.Errorf("lossless: %w: %w", store.ErrDiskFull, err)
	}
	return nil
}

// update is st.Update behind the free-space guard.
func update(ctx context.Context, st store.Store, space *diskspace.Guard, fn func(store.Tx) error) error {
	if err := checkSpace(space); err != nil {
		return err
	}
	return st.Update(ctx, fn)
}

// newBatch is st.NewBatch behind the free-space guard.
func newBatch(ctx context.Context, st store.Store, space *diskspace.Guard) (store.Batch, error) {
	if err := checkSpace(space); err != nil {
		return nil, err
	}
	return st.NewBatch(ctx)
}

// Entry maps (store.EntriesCurrent: entry index -> seq, for message
// entries; and entry id -> index, for every entry with an id) resolve a
// compaction entry's firstKeptEntryId/Index to message sequence numbers.

// Compaction is a compaction entry's summary, for the conversation's
// Replace (dag.Store's): Summary over Old at Item's place. The engine sets
// the tokens of Summary and Item (Summary rendered as the context shows
// it).
type Compaction struct {
	Old     []dag.Item
	Summary dag.Summary
	Item    dag.Item
}

// PlanCompaction turns a transcript compaction entry of conversation c
// (file tag) into a leaf summary (Method "imported") over the raw messages
// before its first kept entry that no summary covers yet, read from st; nil
// when there is nothing to summarize or the summary exists. The summary
// id is derived from the entry, so a re-import finds it and does nothing.
func PlanCompaction(ctx context.Context, st store.Store, c store.ConvID, tag [8]byte, ent core.Entry) (*Compaction, error) {
	sum := sha256.Sum256(append(append([]byte{}, c[:]...), ent.Raw...))
	id := "imp-" + hex.EncodeToString(sum[:8])
	firstKept := ent.Index
	posEnd := ^uint64(0)
	var items []dag.Item
	exists := false
	err := st.View(ctx, func(r store.Reader) error {
		if _, err := records.GetSummary(r, c, id); err == nil {
			exists = true
			return nil
		}
		switch {
		case ent.FirstKeptEntryID != "":
			if x, err := r.EntryIndex(c, tag, ent.FirstKeptEntryID); err == nil {
				firstKept = int(x)
			}
		case ent.FirstKeptEntryIndex != nil:
			firstKept = *ent.FirstKeptEntryIndex
		}
		for en, err := range r.Entries(c, tag, store.EntriesCurrent, uint64(firstKept)) {
			if errors.Is(err, store.ErrCorrupt) {
				break // an entry that does not decode bounds nothing
			}
			if err != nil {
				return fmt.Errorf("lossless: read entry map: %w", err)
			}
			// The first kept message's place in the conversation (a
			// reconciled transcript may have moved it: reconcile.go).
			var perr error
			if posEnd, perr = records.OrderPosOf(r, c, en.Seq); perr != nil {
				return perr
			}
			break
		}
		return nil
	})
	if err != nil || exists {
		return nil, err
	}
	// The items in a view of their own, as the conversation's Items reads
	// them.
	err = st.View(ctx, func(r store.Reader) error {
		var err error
		items, err = records.ReadItems(ctx, r, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	var run []dag.Item
	for _, it := range items {
		if it.IsSummary() {
			run = run[:0]
			continue
		}
		if it.Pos >= posEnd {
			break
		}
		run = append(run, it)
	}
	if len(run) == 0 {
		return nil, nil
	}
	s := dag.Summary{ID: id, Kind: dag.KindLeaf, Depth: 0, Text: ent.Summary, Method: dag.MethodImported,
		Earliest: run[0].Timestamp, Latest: run[len(run)-1].Timestamp, DescendantCount: len(run)}
	for _, it := range run {
		s.Sources = append(s.Sources, it.Ref)
		s.DescendantTokens += it.Tokens
	}
	if t, err := time.Parse(time.RFC3339Nano, ent.Timestamp); err == nil {
		s.CreatedAt = t.UnixMilli()
	}
	item := dag.Item{Pos: run[0].Pos, Ref: dag.SummaryRef(id), Depth: 0, Timestamp: s.Latest}
	return &Compaction{Old: run, Summary: s, Item: item}, nil
}

// Conv returns the conversation the import writes to (Begin's).
func (im *Import) Conv() store.ConvID { return im.c }

// Tag returns the file's tag in the conversation's entry maps.
func (im *Import) Tag() [8]byte { return im.tag }
