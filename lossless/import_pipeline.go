package lossless

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/lossless-engine/contextengine/core"
)

// The import pipeline: one goroutine reads raw lines (bytes and positions,
// no parsing) into batches; workers parse each batch (entry and message
// decoded once), validate, hash and count its messages; the writer takes
// the parsed batches back in file order and stores them (importFile). The
// number of batches in flight is bounded (a free list), so memory stays
// constant in the file's size, and a batch's buffer is reused once written.

// importProgressKey is the context key of WithImportProgress.
type importProgressKey struct{}

// WithImportProgress returns a copy of ctx under which Import and Bootstrap
// report their progress through a file: fn is called with the file offset
// up to which the file has been read and stored, after every batch the
// import stores (at most a few hundred KiB apart), from the goroutine that
// stores them, so it must return quickly. A resumed import starts at its
// checkpoint's offset; a file already imported calls fn not at all. The
// CLI's import progress bar is drawn from it (cmd/lossless), in bytes, so
// that a single large file moves the bar too.
func WithImportProgress(ctx context.Context, fn func(offset int64)) context.Context {
	return context.WithValue(ctx, importProgressKey{}, fn)
}

// importOpts sizes the pipeline (tests use small batches and several
// workers to exercise reordering on small files).
type importOpts struct {
	workers    int // parsing goroutines (>= 1)
	batchLines int // lines per batch
	batchBytes int // bytes per batch (a batch holds at least one line)
}

// importLineMargin is what an import line may hold beyond
// Config.MaxMessageBytes (the entry around the message, JSON escaping).
const importLineMargin = 1 << 20

func defaultImportOpts() importOpts {
	return importOpts{workers: runtime.GOMAXPROCS(0), batchLines: 64, batchBytes: 256 << 10}
}

// rawLine is one non-empty line of a batch.
type rawLine struct {
	from, to int   // body (without "\r\n") in the batch buffer
	line     int   // 1-based line number
	index    int   // 0-based index among non-empty lines
	offset   int64 // byte offset of the line
	end      int64 // byte offset just past the line's newline
	// tooLong is the length of a line longer than the reader's bound: its
	// bytes were skipped, never held (from == to).
	tooLong int64
}

// Kinds of parsed lines.
const (
	plEntry     = iota // a transcript entry
	plHeader           // a session header
	plMalformed        // a malformed line (or an invalid message)
)

// parsedLine is a worker's result for one rawLine.
type parsedLine struct {
	kind   uint8
	ent    core.Entry   // plEntry (Raw set for compaction entries only)
	header *core.Header // plHeader
	lerr   core.LineError
	// valid is set for a message entry that passed validation; p is then
	// hashed and counted. invalid is set for one that did not (lerr says
	// why).
	valid, invalid bool
	p              pending
}

// lineBatch is a unit of the pipeline: raw lines in, parsed lines out.
type lineBatch struct {
	seq   int
	buf   []byte
	lines []rawLine
	out   []parsedLine
	// Reader state after the batch (its last line, and any empty lines
	// after it).
	endOffset         int64
	endLine, endIndex int
	last              bool // the last batch of the stream
	err               error
}

func (b *lineBatch) reset() {
	b.buf, b.lines = b.buf[:0], b.lines[:0]
	clear(b.out)
	b.out = b.out[:0]
	b.err, b.last = nil, false
}

// lineReader splits a stream into lines exactly as core.TranscriptReader
// does: positions count every line, indices every non-empty line; a last
// line without its newline is taken only when it is complete JSON (a
// writer may be in the middle of it).
type lineReader struct {
	r      *bufio.Reader
	offset int64
	line   int
	index  int
	eof    bool
	// max bounds the bytes of one line held in memory (0: no bound); a
	// longer line is skipped as it is read and reported (rawLine.tooLong).
	max int
}

// next appends the next non-empty line's body to b. It returns false at the
// end of the stream (or a torn last line, left unread).
func (lr *lineReader) next(b *lineBatch) (bool, error) {
	for !lr.eof {
		start := len(b.buf)
		var err error
		skipped := int64(0) // bytes of a line over the bound, not kept
		for {
			var frag []byte
			frag, err = lr.r.ReadSlice('\n')
			if skipped > 0 {
				skipped += int64(len(frag))
			} else if lr.max > 0 && len(b.buf)-start+len(frag) > lr.max {
				skipped = int64(len(b.buf)-start) + int64(len(frag))
				b.buf = b.buf[:start]
			} else {
				b.buf = append(b.buf, frag...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		complete := err == nil
		if err != nil && err != io.EOF {
			b.buf = b.buf[:start]
			return false, fmt.Errorf("lossless: import: read transcript: %w", err)
		}
		if skipped > 0 {
			off := lr.offset
			lr.offset += skipped
			lr.line++
			if !complete {
				lr.eof = true // a torn last line: left for the next import
				lr.offset = off
				lr.line--
				return false, nil
			}
			b.lines = append(b.lines, rawLine{from: start, to: start, line: lr.line, index: lr.index,
				offset: off, end: lr.offset, tooLong: skipped})
			lr.index++
			return true, nil
		}
		raw := b.buf[start:]
		if len(raw) == 0 {
			lr.eof = true
			return false, nil
		}
		body := bytes.TrimRight(raw, "\r\n")
		if !complete {
			lr.eof = true
			if !json.Valid(bytes.TrimSpace(body)) {
				b.buf = b.buf[:start]
				return false, nil
			}
		}
		off := lr.offset
		lr.offset += int64(len(raw))
		lr.line++
		if len(bytes.TrimSpace(body)) == 0 {
			b.buf = b.buf[:start]
			continue
		}
		b.buf = b.buf[:start+len(body)]
		b.lines = append(b.lines, rawLine{from: start, to: start + len(body), line: lr.line,
			index: lr.index, offset: off, end: lr.offset})
		lr.index++
		return true, nil
	}
	return false, nil
}

// runImportPipeline reads r (positioned at start, with line and index lines
// before it) and calls write with each parsed batch in file order; write
// returns the batch when it is done with it. It returns write's first error,
// a read error, or ctx's error.
func (e *Engine) runImportPipeline(ctx context.Context, r io.Reader, start int64, line, index int, o importOpts,
	write func(*lineBatch) error) error {
	if o.workers < 1 {
		o.workers = 1
	}
	if o.batchLines < 1 {
		o.batchLines = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inFlight := 2*o.workers + 2
	free := make(chan *lineBatch, inFlight)
	for i := 0; i < inFlight; i++ {
		free <- &lineBatch{}
	}
	work := make(chan *lineBatch, inFlight)
	done := make(chan *lineBatch, inFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: stops the goroutines on an early return

	// Reader.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(work)
		lr := &lineReader{r: bufio.NewReaderSize(r, 256<<10), offset: start, line: line, index: index,
			max: e.cfg.MaxMessageBytes + importLineMargin}
		for seq := 0; ; seq++ {
			var b *lineBatch
			select {
			case b = <-free:
			case <-ctx.Done():
				return
			}
			b.reset()
			b.seq = seq
			for len(b.lines) < o.batchLines && (len(b.buf) < o.batchBytes || len(b.lines) == 0) {
				ok, err := lr.next(b)
				if err != nil {
					b.err = err
					break
				}
				if !ok {
					b.last = true
					break
				}
			}
			b.endOffset, b.endLine, b.endIndex = lr.offset, lr.line, lr.index
			if b.err != nil {
				b.last = true
			}
			select {
			case work <- b:
			case <-ctx.Done():
				return
			}
			if b.last {
				return
			}
		}
	}()

	// Workers.
	var wwg sync.WaitGroup
	for w := 0; w < o.workers; w++ {
		wg.Add(1)
		wwg.Add(1)
		go func() {
			defer wg.Done()
			defer wwg.Done()
			for b := range work {
				if b.err == nil {
					e.parseBatch(ctx, b)
				}
				select {
				case done <- b:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		wwg.Wait()
		close(done)
	}()

	// Writer: reorder by sequence number (at most inFlight batches wait).
	progress, _ := ctx.Value(importProgressKey{}).(func(int64))
	pending := make(map[int]*lineBatch, inFlight)
	next := 0
	for {
		var b *lineBatch
		var ok bool
		select {
		case b, ok = <-done:
		case <-ctx.Done():
			return fmt.Errorf("lossless: import: %w", ctx.Err())
		}
		if !ok {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: import: %w", err)
			}
			return errors.New("lossless: import: pipeline ended before its last batch")
		}
		pending[b.seq] = b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if b.err != nil {
				return b.err
			}
			if err := write(b); err != nil {
				return err
			}
			if progress != nil {
				progress(b.endOffset)
			}
			if b.last {
				return nil
			}
			free <- b // never blocks: the free list holds every batch
		}
	}
}

// parseBatch parses every line of b into b.out.
func (e *Engine) parseBatch(ctx context.Context, b *lineBatch) {
	if cap(b.out) < len(b.lines) {
		b.out = make([]parsedLine, len(b.lines))
	}
	b.out = b.out[:len(b.lines)]
	for i, ln := range b.lines {
		pl := &b.out[i]
		if ln.tooLong > 0 {
			pl.kind = plMalformed
			pl.lerr = core.LineError{Line: ln.line, Offset: ln.offset, Err: fmt.Errorf(
				"line of %d bytes is over the %d-byte limit (maxMessageBytes and a margin for the entry): skipped, not read into memory: %w",
				ln.tooLong, e.cfg.MaxMessageBytes+importLineMargin, core.ErrTooLarge)}
			continue
		}
		body := b.buf[ln.from:ln.to]
		ent, hdr, err := core.ParseEntryLine(body, false)
		switch {
		case err != nil:
			pl.kind = plMalformed
			pl.lerr = core.LineError{Line: ln.line, Offset: ln.offset, Err: err}
			continue
		case hdr != nil:
			pl.kind, pl.header = plHeader, hdr
			continue
		}
		ent.Line, ent.Index, ent.Offset = ln.line, ln.index, ln.offset
		pl.kind, pl.ent = plEntry, ent
		if ent.Type != core.EntryMessage {
			continue
		}
		if err := validateMessage(ent.Message, e.cfg.MaxMessageBytes); err != nil {
			// Still an entry (its id is mapped, it ends the tail), but
			// reported and not stored.
			pl.invalid = true
			pl.lerr = core.LineError{Line: ln.line, Offset: ln.offset, Err: err}
			continue
		}
		pl.valid = true
		e.preparePending(ctx, &pl.p, ent.Message)
	}
}

// preparePending hashes and counts one message (the per-message work of
// prepare and of the import pipeline's workers), with a cheaper hash of
// JSON that is already compact; flags already set on p are kept.
func (e *Engine) preparePending(ctx context.Context, p *pending, m core.Message) {
	p.msg = m
	p.hash = hashMessageRaw(m.Raw())
	if n, ok := e.counts.get(p.hash); ok {
		p.tokens = n
	} else {
		n, err := core.CountMessageContext(ctx, e.tc, m)
		if err != nil {
			return // ctx is done: the caller sees it and drops p
		}
		p.tokens = n
		e.counts.put(p.hash, p.tokens)
	}
	if (m.Role() == core.RoleAssistant && !m.HasVisibleContent()) ||
		(m.Role() == core.RoleBashExecution && m.ExcludeFromContext()) {
		p.flags |= flagHidden
	}
	if p.tokens > e.cfg.LargeContentTokens {
		p.flags |= flagLarge
		p.ref = largeReference(m, p.tokens)
		if rm, err := core.ParseMessage(p.ref); err == nil {
			p.refTokens = core.CountMessage(e.tc, rm)
		}
	}
}

// hashMessageRaw is hashRaw for the raw bytes of a parsed message (valid
// JSON): when they hold no whitespace outside strings, json.Compact would
// return them unchanged, so they are hashed as they are without it.
func hashMessageRaw(raw []byte) msgHash {
	if !compactJSON(raw) {
		return hashRaw(raw)
	}
	s := sha256.Sum256(raw)
	var h msgHash
	copy(h[:], s[:16])
	return h
}

// compactJSON reports whether valid JSON b has no whitespace outside its
// strings (so that json.Compact leaves it unchanged).
func compactJSON(b []byte) bool {
	in, esc := false, false
	for _, c := range b {
		if in {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
			continue
		}
		switch c {
		case '"':
			in = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}
