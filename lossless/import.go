package lossless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
)

// ImportResult reports one import of a session file.
type ImportResult struct {
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

// checkpoint is an imported file's progress (transcript.Checkpoint).
type checkpoint = transcript.Checkpoint

// importBatch is the number of message entries counted and stored at once.
const importBatch = 512

// Import imports (or incrementally re-imports) an OpenClaw session JSONL
// file into agent's store ("" = Config.AgentID). It streams the file in
// constant memory, resumes from the file's checkpoint when the file was
// only appended to, re-reads a rewritten or rotated file from the start
// without storing anything twice, and skips malformed lines (reported in
// Malformed). Compaction entries become summaries (Method "imported") over
// the messages they replaced.
func (e *Engine) Import(ctx context.Context, agent, sessionFile string) (ImportResult, error) {
	if agent == "" {
		agent = e.cfg.AgentID
	}
	return e.importFile(ctx, agent, "", "", sessionFile)
}

// Bootstrap imports the session's transcript (p.SessionFile) incrementally;
// see Import. A missing file is not an error: bootstrapped is false. When
// the host keeps the transcript itself (runtimeContext.transcriptStorage
// "sqlite", or a sessionFile that is a session key), sessionFile is never
// opened: the transcript is read through runtimeContext's ReadTranscript
// from the conversation's cursor (host.go).
func (e *Engine) Bootstrap(ctx context.Context, p core.BootstrapParams) (core.BootstrapResult, error) {
	agent, sessionID, sessionKey := e.sessionIdentity("", p.SessionID, p.SessionKey, p.SessionTarget)
	if sessionID == "" {
		return core.BootstrapResult{}, fmt.Errorf("lossless: bootstrap: %w", core.ErrEmptySessionID)
	}
	if err := checkSession(agent, sessionID, sessionKey); err != nil {
		return core.BootstrapResult{}, err
	}
	p.SessionID, p.SessionKey = sessionID, sessionKey
	if core.HostKeepsTranscript(p.SessionFile, p.RuntimeContext) {
		return e.bootstrapHost(ctx, p, agent, sessionID, sessionKey) // host.go
	}
	if p.SessionFile == "" {
		return core.BootstrapResult{Reason: "no session file"}, nil
	}
	res, err := e.importFile(ctx, agent, p.SessionID, p.SessionKey, p.SessionFile)
	if errors.Is(err, fs.ErrNotExist) {
		// A new session: make sure the conversation exists.
		if done, err2 := e.enter(); err2 == nil {
			_, err2 = e.resolve(ctx, agent, p.SessionID, p.SessionKey, true)
			done()
			if err2 != nil {
				return core.BootstrapResult{}, err2
			}
		}
		return core.BootstrapResult{Bootstrapped: false, Reason: "no transcript yet"}, nil
	}
	if err != nil {
		return core.BootstrapResult{}, err
	}
	r := core.BootstrapResult{Bootstrapped: true, ImportedMessages: res.Imported}
	if len(res.Malformed) > 0 {
		r.Reason = fmt.Sprintf("%d malformed lines skipped", len(res.Malformed))
	}
	return r, nil
}

// lockImport serialises imports of one file (or syncs of one host-kept
// transcript: path "host:<conversation>") of agent: the engine's lock and,
// on a shared store, the store's, so that two processes never import the
// same file at once (each would move its checkpoint). The returned func
// releases both.
func (e *Engine) lockImport(ctx context.Context, agent, path string) (func(), error) {
	key := agent + "\x00" + path
	unlock, err := e.importMus.lock(context.WithoutCancel(ctx), key)
	if err != nil {
		return nil, err
	}
	release, err := e.storeLock(ctx, importLockName(key))
	if err != nil {
		unlock()
		return nil, err
	}
	return func() {
		release()
		unlock()
	}, nil
}

func (e *Engine) importFile(ctx context.Context, agent, sessionID, sessionKey, path string) (ImportResult, error) {
	return e.importFileOpts(ctx, agent, sessionID, sessionKey, path, defaultImportOpts())
}

// importChunk is what the writer stores at once: message entries (up to
// importBatch), the ids of every entry, and a compaction entry last.
type importChunk struct {
	ps      []pending
	indexes []int // entry index of each ps[i]
	ids     []core.Entry
	comp    *core.Entry
}

func (c *importChunk) reset() {
	clear(c.ps)
	clear(c.ids)
	c.ps, c.indexes, c.ids, c.comp = c.ps[:0], c.indexes[:0], c.ids[:0], nil
}

func (e *Engine) importFileOpts(ctx context.Context, agent, sessionID, sessionKey, path string, o importOpts) (ImportResult, error) {
	done, err := e.enter()
	if err != nil {
		return ImportResult{}, err
	}
	defer done()
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	unlock, err := e.lockImport(ctx, agent, path)
	if err != nil {
		return ImportResult{}, err
	}
	defer unlock()

	// Look before opening: opening a named pipe blocks until a writer comes.
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return ImportResult{}, fmt.Errorf("lossless: import: %s is not a regular file (%s): %w", path, st.Mode().Type(), ErrNotSessionFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return ImportResult{}, fmt.Errorf("lossless: import: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ImportResult{}, fmt.Errorf("lossless: import: %w", err)
	}
	switch {
	case st.IsDir():
		return ImportResult{}, fmt.Errorf("lossless: import: %s is a directory, not a session file: %w", path, ErrNotSessionFile)
	case !st.Mode().IsRegular():
		return ImportResult{}, fmt.Errorf("lossless: import: %s is not a regular file (%s): %w", path, st.Mode().Type(), ErrNotSessionFile)
	}
	var cp checkpoint
	hasCP := e.st.View(context.WithoutCancel(ctx), func(r store.Reader) error {
		var err error
		cp, err = r.FileCheckpoint(agent, path)
		return err
	}) == nil
	if !hasCP {
		cp = checkpoint{}
	}
	res := ImportResult{}
	start := int64(0)
	line, index := 0, 0
	prefix := sha256.New() // over [0, hashedTo): the checkpoint's PrefixHash
	hashedTo := int64(0)
	if hasCP && transcript.CheckpointValid(f, st, cp, prefix) {
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
		headHash = transcript.HashFirstLine(f)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return ImportResult{}, fmt.Errorf("lossless: import: %w", err)
	}

	// The pipeline (import_pipeline.go) reads and parses ahead; here, in
	// file order, chunks are stored, then the checkpoint moves past them.
	var conv *Conversation
	var tag [8]byte
	var header *core.Header
	var parseErrs []core.LineError
	lastTail := cp.TailStart
	var ch importChunk
	var rs *reconcileState // set when the read must be reconciled (reconcile.go)
	var last checkpoint
	nmsg := 0
	flush := func(offset int64, line, index int) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("lossless: import: %w", err)
		}
		if conv == nil {
			if sessionID == "" && header != nil {
				sessionID = header.ID
			}
			if sessionID == "" {
				sessionID = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			}
			c, err := e.resolve(ctx, agent, sessionID, sessionKey, true)
			if err != nil {
				return err
			}
			conv = &Conversation{e: e, id: c, Agent: agent}
			tag = transcript.FileTag(sessionID)
			res.SessionID = sessionID
			if !res.Resumed {
				var err error
				if rs, err = e.maybeReconcile(ctx, c, tag, cp.Reconcile); err != nil {
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
		if err := e.storeChunk(ctx, conv, tag, &ch, &res); err != nil {
			return err
		}
		if fault := e.cfg.hooks.reconcileFault; rs != nil && fault != nil {
			if err := fault("stored"); err != nil {
				return err
			}
		}
		if rs != nil {
			for i := range ch.ps {
				rs.order = append(rs.order, ch.ps[i].seq)
			}
		}
		ch.reset()
		nmsg = 0
		tailHash, err := transcript.HashRange(f, lastTail, offset)
		if err != nil {
			return err
		}
		if offset > hashedTo {
			if _, err := io.Copy(prefix, io.NewSectionReader(f, hashedTo, offset-hashedTo)); err != nil {
				return fmt.Errorf("lossless: import: %w", err)
			}
			hashedTo = offset
		}
		ncp := checkpoint{SessionID: sessionID, Conv: conv.id.String(), Offset: offset, Line: line,
			Index: index, MtimeNs: st.ModTime().UnixNano(), HeadHash: headHash, TailStart: lastTail, TailHash: tailHash,
			PrefixHash: hex.EncodeToString(prefix.Sum(nil))}
		if rs != nil {
			ncp.Reconcile = rs.from
		}
		last = ncp
		if err := e.saveCheckpoint(ctx, agent, path, ncp); err != nil {
			return err
		}
		res.Bytes = offset - start
		return nil
	}
	write := func(b *lineBatch) error {
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
	if err := e.runImportPipeline(ctx, f, start, line, index, o, write); err != nil {
		return res, err
	}
	if rs != nil {
		if err := e.reconcile(ctx, conv.id, tag, rs, last.Index); err != nil {
			return res, err
		}
		for _, ent := range rs.comps {
			ok, err := e.importCompaction(ctx, conv, tag, ent)
			if err != nil {
				return res, err
			}
			if ok {
				res.Summaries++
			}
		}
		last.Reconcile = 0
		if err := e.saveCheckpoint(ctx, agent, path, last); err != nil {
			return res, err
		}
	}
	res.Malformed = append(parseErrs, res.Malformed...)
	sort.Slice(res.Malformed, func(i, j int) bool { return res.Malformed[i].Line < res.Malformed[j].Line })
	return res, nil
}

// saveCheckpoint writes file path's checkpoint (whether or not ctx is done
// by then: the writes it records are made).
func (e *Engine) saveCheckpoint(ctx context.Context, agent, path string, cp checkpoint) error {
	return e.storeUpdate(context.WithoutCancel(ctx), func(tx store.Tx) error {
		if err := tx.PutFileCheckpoint(agent, path, cp); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
	})
}

// Entry maps (store.EntriesCurrent: entry index -> seq, for message
// entries; and entry id -> index, for every entry with an id) resolve a
// compaction entry's firstKeptEntryId/Index to message sequence numbers.

// storeChunk stores a chunk: its messages, the entry maps, then its
// compaction entry as a summary.
func (e *Engine) storeChunk(ctx context.Context, conv *Conversation, tag [8]byte, ch *importChunk, res *ImportResult) error {
	if len(ch.ps) > 0 {
		n, err := e.ingestInto(ctx, conv.id, ch.ps)
		if err != nil {
			return err
		}
		res.Imported += n
		res.Duplicates += len(ch.ps) - n
	}
	if len(ch.ps) > 0 || len(ch.ids) > 0 {
		// Bookkeeping of messages stored: written whether or not ctx is
		// done by then.
		wb, err := e.storeBatch(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		defer wb.Cancel()
		for i, p := range ch.ps {
			if err := wb.PutEntrySeq(conv.id, tag, store.EntriesCurrent, uint64(ch.indexes[i]), p.seq); err != nil {
				return fmt.Errorf("lossless: write entry map: %w", err)
			}
		}
		for _, ent := range ch.ids {
			if err := wb.PutEntryIndex(conv.id, tag, ent.ID, uint64(ent.Index)); err != nil {
				return fmt.Errorf("lossless: write entry map: %w", err)
			}
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("lossless: write entry map: %w", err)
		}
	}
	if ch.comp != nil {
		ok, err := e.importCompaction(ctx, conv, tag, *ch.comp)
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
func (e *Engine) importCompaction(ctx context.Context, conv *Conversation, tag [8]byte, ent core.Entry) (bool, error) {
	sum := sha256.Sum256(append(append([]byte{}, conv.id[:]...), ent.Raw...))
	id := "imp-" + hex.EncodeToString(sum[:8])
	if _, err := conv.summary(ctx, id); err == nil {
		return false, nil
	}
	firstKept := ent.Index
	posEnd := ^uint64(0)
	err := e.st.View(ctx, func(r store.Reader) error {
		switch {
		case ent.FirstKeptEntryID != "":
			if x, err := r.EntryIndex(conv.id, tag, ent.FirstKeptEntryID); err == nil {
				firstKept = int(x)
			}
		case ent.FirstKeptEntryIndex != nil:
			firstKept = *ent.FirstKeptEntryIndex
		}
		for en, err := range r.Entries(conv.id, tag, store.EntriesCurrent, uint64(firstKept)) {
			if errors.Is(err, store.ErrCorrupt) {
				break // an entry that does not decode bounds nothing
			}
			if err != nil {
				return fmt.Errorf("lossless: read entry map: %w", err)
			}
			// The first kept message's place in the conversation (a
			// reconciled transcript may have moved it: reconcile.go).
			var perr error
			if posEnd, perr = orderPosOf(r, conv.id, en.Seq); perr != nil {
				return perr
			}
			break
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	items, err := conv.items(ctx)
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
	s.Tokens = core.CountMessage(e.tc, RenderSummary(s))
	item := dag.Item{Pos: run[0].Pos, Ref: dag.SummaryRef(id), Tokens: s.Tokens, Depth: 0, Timestamp: s.Latest}
	if err := conv.replace(ctx, run, s, item); err != nil {
		if errors.Is(err, dag.ErrConflict) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
