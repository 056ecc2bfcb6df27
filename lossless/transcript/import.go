package transcript

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
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

// importChunk is what the writer stores at once: message entries (up to
// importBatch), the ids of every entry, and a compaction entry last.
type importChunk[P any] struct {
	ps      []P
	indexes []int // entry index of each ps[i]
	ids     []core.Entry
	comp    *core.Entry
}

func (c *importChunk[P]) reset() {
	clear(c.ps)
	clear(c.ids)
	c.ps, c.indexes, c.ids, c.comp = c.ps[:0], c.indexes[:0], c.ids[:0], nil
}

// ImportPath is the path under which a file's import is checkpointed and
// locked: path made absolute (as it is when that fails).
func ImportPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// importer is one import of one file.
type importer[P any] struct {
	port  Port[P]
	agent string
	path  string
	o     Options
}

// Import imports (or incrementally re-imports) the OpenClaw session JSONL
// file at path into agent's store through port (sessionID and sessionKey:
// the caller's, else the file header's id, else the file's name). It
// streams the file in constant memory, resumes from the file's checkpoint
// when the file was only appended to, re-reads a rewritten or rotated file
// from the start without storing anything twice (reconciling the stored
// conversation with the file's order), and skips malformed lines (reported
// in Malformed). Compaction entries become summaries (Method "imported")
// over the messages they replaced. The caller has entered the engine and
// holds the import lock of path (ImportPath: its key).
func Import[P any](ctx context.Context, port Port[P], agent, sessionID, sessionKey, path string, o Options) (Result, error) {
	path = ImportPath(path)
	im := &importer[P]{port: port, agent: agent, path: path, o: o}
	return im.run(ctx, sessionID, sessionKey)
}

func (im *importer[P]) run(ctx context.Context, sessionID, sessionKey string) (Result, error) {
	port, agent, path := im.port, im.agent, im.path
	// Look before opening: opening a named pipe blocks until a writer comes.
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return Result{}, fmt.Errorf("lossless: import: %s is not a regular file (%s): %w", path, st.Mode().Type(), ErrNotSessionFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return Result{}, fmt.Errorf("lossless: import: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Result{}, fmt.Errorf("lossless: import: %w", err)
	}
	switch {
	case st.IsDir():
		return Result{}, fmt.Errorf("lossless: import: %s is a directory, not a session file: %w", path, ErrNotSessionFile)
	case !st.Mode().IsRegular():
		return Result{}, fmt.Errorf("lossless: import: %s is not a regular file (%s): %w", path, st.Mode().Type(), ErrNotSessionFile)
	}
	var cp Checkpoint
	hasCP := port.Store().View(context.WithoutCancel(ctx), func(r store.Reader) error {
		var err error
		cp, err = r.FileCheckpoint(agent, path)
		return err
	}) == nil
	if !hasCP {
		cp = Checkpoint{}
	}
	res := Result{}
	start := int64(0)
	line, index := 0, 0
	prefix := sha256.New() // over [0, hashedTo): the checkpoint's PrefixHash
	hashedTo := int64(0)
	if hasCP && CheckpointValid(f, st, cp, prefix) {
		hashedTo = cp.Offset
		if cp.Offset == st.Size() {
			res.SessionID = cp.SessionID
			res.Resumed = true
			return res, nil
		}
		start, line, index = cp.Offset, cp.Line, cp.Index
		res.Resumed = true
		if sessionID == "" {
			sessionID = cp.SessionID
		}
	}
	headHash := cp.HeadHash
	if !res.Resumed {
		headHash = HashFirstLine(f)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return Result{}, fmt.Errorf("lossless: import: %w", err)
	}

	// The pipeline (pipeline.go) reads and parses ahead; here, in file
	// order, chunks are stored, then the checkpoint moves past them.
	var c store.ConvID
	resolved := false
	var tag [8]byte
	var header *core.Header
	var parseErrs []core.LineError
	lastTail := cp.TailStart
	var ch importChunk[P]
	var rs *reconcileState // set when the read must be reconciled (reconcile.go)
	var last Checkpoint
	nmsg := 0
	flush := func(offset int64, line, index int) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("lossless: import: %w", err)
		}
		if !resolved {
			if sessionID == "" && header != nil {
				sessionID = header.ID
			}
			if sessionID == "" {
				sessionID = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			}
			var err error
			if c, err = port.Resolve(ctx, agent, sessionID, sessionKey, true); err != nil {
				return err
			}
			resolved = true
			tag = FileTag(sessionID)
			res.SessionID = sessionID
			if !res.Resumed {
				var err error
				if rs, err = maybeReconcile(ctx, port, c, tag, cp.Reconcile); err != nil {
					return err
				}
			}
		}
		if rs != nil && ch.comp != nil {
			// Applied after the reconciliation (reconcile.go); the entry's
			// buffers belong to the pipeline's batch, so it is copied.
			ent := *ch.comp
			ent.Raw = bytes.Clone(ent.Raw)
			ent.Details = bytes.Clone(ent.Details)
			ent.Message = core.Message{}
			rs.comps = append(rs.comps, ent)
			ch.comp = nil
		}
		if err := im.storeChunk(ctx, c, tag, &ch, &res); err != nil {
			return err
		}
		if fault := im.o.Fault; rs != nil && fault != nil {
			if err := fault("stored"); err != nil {
				return err
			}
		}
		if rs != nil {
			for i := range ch.ps {
				rs.order = append(rs.order, port.Seq(&ch.ps[i]))
			}
		}
		ch.reset()
		nmsg = 0
		tailHash, err := HashRange(f, lastTail, offset)
		if err != nil {
			return err
		}
		if offset > hashedTo {
			if _, err := io.Copy(prefix, io.NewSectionReader(f, hashedTo, offset-hashedTo)); err != nil {
				return fmt.Errorf("lossless: import: %w", err)
			}
			hashedTo = offset
		}
		ncp := Checkpoint{SessionID: sessionID, Conv: c.String(), Offset: offset, Line: line,
			Index: index, MtimeNs: st.ModTime().UnixNano(), HeadHash: headHash, TailStart: lastTail, TailHash: tailHash,
			PrefixHash: hex.EncodeToString(prefix.Sum(nil))}
		if rs != nil {
			ncp.Reconcile = rs.from
		}
		last = ncp
		if err := im.saveCheckpoint(ctx, ncp); err != nil {
			return err
		}
		res.Bytes = offset - start
		return nil
	}
	write := func(b *lineBatch[P]) error {
		for i := range b.out {
			pl := &b.out[i]
			ln := b.lines[i]
			switch pl.kind {
			case plMalformed:
				parseErrs = append(parseErrs, pl.lerr)
				continue
			case plHeader:
				if header == nil && ln.index == 0 {
					header = pl.header
				}
				continue
			}
			ent := &pl.ent
			lastTail = ent.Offset
			if ent.ID != "" {
				ch.ids = append(ch.ids, core.Entry{ID: ent.ID, Index: ent.Index})
			}
			switch ent.Type {
			case core.EntryMessage:
				nmsg++
				if pl.invalid {
					res.Malformed = append(res.Malformed, pl.lerr)
				} else {
					ch.ps = append(ch.ps, pl.p)
					ch.indexes = append(ch.indexes, ent.Index)
				}
				if nmsg >= importBatch {
					if err := flush(ln.end, ln.line, ln.index+1); err != nil {
						return err
					}
				}
			case core.EntryCompaction:
				ch.comp = ent
				if err := flush(ln.end, ln.line, ln.index+1); err != nil {
					return err
				}
			}
		}
		if b.last {
			return flush(b.endOffset, b.endLine, b.endIndex)
		}
		return nil
	}
	if err := runPipeline(ctx, port, f, start, line, index, im.o, write); err != nil {
		return res, err
	}
	if rs != nil {
		if err := reconcile(ctx, port, im.o, c, tag, rs, last.Index); err != nil {
			return res, err
		}
		for _, ent := range rs.comps {
			ok, err := importCompaction(ctx, port, c, tag, ent)
			if err != nil {
				return res, err
			}
			if ok {
				res.Summaries++
			}
		}
		last.Reconcile = 0
		if err := im.saveCheckpoint(ctx, last); err != nil {
			return res, err
		}
	}
	res.Malformed = append(parseErrs, res.Malformed...)
	sort.Slice(res.Malformed, func(i, j int) bool { return res.Malformed[i].Line < res.Malformed[j].Line })
	return res, nil
}

// saveCheckpoint writes the file's checkpoint (whether or not ctx is done
// by then: the writes it records are made).
func (im *importer[P]) saveCheckpoint(ctx context.Context, cp Checkpoint) error {
	return update(context.WithoutCancel(ctx), im.port, func(tx store.Tx) error {
		if err := tx.PutFileCheckpoint(im.agent, im.path, cp); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
	})
}

// update is the engine's store.Store.Update behind its free-space guard.
func update[P any](ctx context.Context, port Port[P], fn func(store.Tx) error) error {
	if err := port.CheckSpace(); err != nil {
		return err
	}
	return port.Store().Update(ctx, fn)
}

// newBatch is the engine's store.Store.NewBatch behind its free-space
// guard.
func newBatch[P any](ctx context.Context, port Port[P]) (store.Batch, error) {
	if err := port.CheckSpace(); err != nil {
		return nil, err
	}
	return port.Store().NewBatch(ctx)
}

// Entry maps (store.EntriesCurrent: entry index -> seq, for message
// entries; and entry id -> index, for every entry with an id) resolve a
// compaction entry's firstKeptEntryId/Index to message sequence numbers.

// storeChunk stores a chunk: its messages, the entry maps, then its
// compaction entry as a summary.
func (im *importer[P]) storeChunk(ctx context.Context, c store.ConvID, tag [8]byte, ch *importChunk[P], res *Result) error {
	port := im.port
	if len(ch.ps) > 0 {
		n, err := port.StoreMessages(ctx, c, ch.ps)
		if err != nil {
			return err
		}
		res.Imported += n
		res.Duplicates += len(ch.ps) - n
	}
	if len(ch.ps) > 0 || len(ch.ids) > 0 {
		// Bookkeeping of messages stored: written whether or not ctx is
		// done by then.
		wb, err := newBatch(context.WithoutCancel(ctx), port)
		if err != nil {
			return err
		}
		defer wb.Cancel()
		for i := range ch.ps {
			if err := wb.PutEntrySeq(c, tag, store.EntriesCurrent, uint64(ch.indexes[i]), port.Seq(&ch.ps[i])); err != nil {
				return fmt.Errorf("lossless: write entry map: %w", err)
			}
		}
		for _, ent := range ch.ids {
			if err := wb.PutEntryIndex(c, tag, ent.ID, uint64(ent.Index)); err != nil {
				return fmt.Errorf("lossless: write entry map: %w", err)
			}
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("lossless: write entry map: %w", err)
		}
	}
	if ch.comp != nil {
		ok, err := importCompaction(ctx, port, c, tag, *ch.comp)
		if err != nil {
			return err
		}
		if ok {
			res.Summaries++
		}
	}
	return nil
}

// importCompaction turns a transcript compaction entry into a leaf summary
// (Method "imported") over the raw messages before its first kept entry
// that no summary covers yet. The summary id is derived from the entry, so
// a re-import finds it and does nothing.
func importCompaction[P any](ctx context.Context, port Port[P], c store.ConvID, tag [8]byte, ent core.Entry) (bool, error) {
	conv := port.Conversation(c)
	sum := sha256.Sum256(append(append([]byte{}, c[:]...), ent.Raw...))
	id := "imp-" + hex.EncodeToString(sum[:8])
	if _, err := conv.Summary(ctx, id); err == nil {
		return false, nil
	}
	firstKept := ent.Index
	posEnd := ^uint64(0)
	err := port.Store().View(ctx, func(r store.Reader) error {
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
	if err != nil {
		return false, err
	}
	items, err := conv.Items(ctx)
	if err != nil {
		return false, err
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
		return false, nil
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
	s.Tokens = port.SummaryTokens(s)
	item := dag.Item{Pos: run[0].Pos, Ref: dag.SummaryRef(id), Tokens: s.Tokens, Depth: 0, Timestamp: s.Latest}
	if err := conv.Replace(ctx, run, s, item); err != nil {
		if errors.Is(err, dag.ErrConflict) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
