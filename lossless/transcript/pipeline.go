package transcript

import (
	"bufio"
	"bytes"
	"context"
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
// decoded once); Import.Next takes the parsed batches back in file order
// and cuts them into the chunks the engine stores. The number of batches in
// flight is bounded (a free list), so memory stays constant in the file's
// size, and a batch's buffer is reused once consumed.

// progressKey is the context key of WithProgress.
type progressKey struct{}

// WithProgress returns a copy of ctx under which an import reports its
// progress through a file: fn is called with the file offset up to which
// up to which the import has read the file and handed its messages on to
// be stored (the store may be up to one chunk behind: the engine prepares
// the next chunk while it stores one), after every batch (at most a few
// hundred KiB apart), from one goroutine at a time (the import's
// read-ahead, not the caller's), so it must return quickly. A resumed import starts at its checkpoint's
// offset; a file already imported calls fn not at all.
func WithProgress(ctx context.Context, fn func(offset int64)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// Options size an import's pipeline and bound its lines (tests use small
// batches and several workers to exercise reordering on small files).
type Options struct {
	// Workers is the number of parsing goroutines (at least 1 is used).
	Workers int
	// BatchLines and BatchBytes bound a batch (a batch holds at least one
	// line).
	BatchLines, BatchBytes int
	// MaxMessageBytes is the engine's Config.MaxMessageBytes: a line over
	// MaxMessageBytes+LineMargin is skipped unread and reported.
	MaxMessageBytes int
	// Fault, when set, fails a rewrite import at a stage when it returns
	// an error (a test's seam): "stored" (after its first chunk is stored,
	// before that chunk's checkpoint) or "reconcile" (before the
	// reconciliation starts).
	Fault func(stage string) error
}

// LineMargin is what an import line may hold beyond
// Options.MaxMessageBytes (the entry around the message, JSON escaping).
const LineMargin = 1 << 20

// DefaultOptions returns the pipeline's default sizes: a worker per
// GOMAXPROCS, batches of 64 lines or 256 KiB (MaxMessageBytes and Fault
// unset).
func DefaultOptions() Options {
	return Options{Workers: runtime.GOMAXPROCS(0), BatchLines: 64, BatchBytes: 256 << 10}
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

// next appends the next non-empty line's body to b's buffer and its
// position to b's lines (buf and lines are in/out). It returns false at the
// end of the stream (or a torn last line, left unread).
func (lr *lineReader) next(buf *[]byte, lines *[]rawLine) (bool, error) {
	for !lr.eof {
		start := len(*buf)
		var err error
		skipped := int64(0) // bytes of a line over the bound, not kept
		for {
			var frag []byte
			frag, err = lr.r.ReadSlice('\n')
			if skipped > 0 {
				skipped += int64(len(frag))
			} else if lr.max > 0 && len(*buf)-start+len(frag) > lr.max {
				skipped = int64(len(*buf)-start) + int64(len(frag))
				*buf = (*buf)[:start]
			} else {
				*buf = append(*buf, frag...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		complete := err == nil
		if err != nil && err != io.EOF {
			*buf = (*buf)[:start]
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
			*lines = append(*lines, rawLine{from: start, to: start, line: lr.line, index: lr.index,
				offset: off, end: lr.offset, tooLong: skipped})
			lr.index++
			return true, nil
		}
		raw := (*buf)[start:]
		if len(raw) == 0 {
			lr.eof = true
			return false, nil
		}
		body := bytes.TrimRight(raw, "\r\n")
		if !complete {
			lr.eof = true
			if !json.Valid(bytes.TrimSpace(body)) {
				*buf = (*buf)[:start]
				return false, nil
			}
		}
		off := lr.offset
		lr.offset += int64(len(raw))
		lr.line++
		if len(bytes.TrimSpace(body)) == 0 {
			*buf = (*buf)[:start]
			continue
		}
		*buf = (*buf)[:start+len(body)]
		*lines = append(*lines, rawLine{from: start, to: start + len(body), line: lr.line,
			index: lr.index, offset: off, end: lr.offset})
		lr.index++
		return true, nil
	}
	return false, nil
}

// pipeline reads a stream ahead of its consumer: a reader goroutine cuts
// it into batches of raw lines, workers parse them (out of order), and next
// hands them back in stream order.
type pipeline struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	free    chan *lineBatch
	done    chan *lineBatch
	pending map[int]*lineBatch
	next    int
	ctx     context.Context
}

// startPipeline starts reading r (positioned at start, with line and index
// lines before it). The caller takes the batches with next, gives each
// back with release, and stops the pipeline with stop.
func startPipeline(ctx context.Context, r io.Reader, start int64, line, index int, o Options) *pipeline {
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.BatchLines < 1 {
		o.BatchLines = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	// Batches in flight: enough for the workers, and for a chunk's worth
	// of lines (importBatch) parsed ahead while the engine prepares and
	// stores the chunk before it.
	inFlight := 2*o.Workers + 2 + min(importBatch/o.BatchLines, 16)
	p := &pipeline{cancel: cancel, ctx: ctx, free: make(chan *lineBatch, inFlight),
		done: make(chan *lineBatch, inFlight), pending: make(map[int]*lineBatch, inFlight)}
	for i := 0; i < inFlight; i++ {
		p.free <- &lineBatch{}
	}
	work := make(chan *lineBatch, inFlight)

	// Reader.
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(work)
		lr := &lineReader{r: bufio.NewReaderSize(r, 256<<10), offset: start, line: line, index: index,
			max: o.MaxMessageBytes + LineMargin}
		for seq := 0; ; seq++ {
			var b *lineBatch
			select {
			case b = <-p.free:
			case <-ctx.Done():
				return
			}
			b.reset()
			b.seq = seq
			for len(b.lines) < o.BatchLines && (len(b.buf) < o.BatchBytes || len(b.lines) == 0) {
				ok, err := lr.next(&b.buf, &b.lines)
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
	for w := 0; w < o.Workers; w++ {
		p.wg.Add(1)
		wwg.Add(1)
		go func() {
			defer p.wg.Done()
			defer wwg.Done()
			for b := range work {
				if b.err == nil {
					parseBatch(o, b)
				}
				select {
				case p.done <- b:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		wwg.Wait()
		close(p.done)
	}()
	return p
}

// nextBatch returns the next batch in stream order (reordered by sequence
// number: at most inFlight batches wait): its parsed lines, or its read
// error. It returns ctx's error when the pipeline is stopped.
func (p *pipeline) nextBatch() (*lineBatch, error) {
	for {
		if b, ok := p.pending[p.next]; ok {
			delete(p.pending, p.next)
			p.next++
			if b.err != nil {
				return nil, b.err
			}
			return b, nil
		}
		var b *lineBatch
		var ok bool
		select {
		case b, ok = <-p.done:
		case <-p.ctx.Done():
			return nil, fmt.Errorf("lossless: import: %w", p.ctx.Err())
		}
		if !ok {
			if err := p.ctx.Err(); err != nil {
				return nil, fmt.Errorf("lossless: import: %w", err)
			}
			return nil, errors.New("lossless: import: pipeline ended before its last batch")
		}
		p.pending[b.seq] = b
	}
}

// release gives batch b back to the reader (never blocks: the free list
// holds every batch).
func (p *pipeline) release(b *lineBatch) { p.free <- b }

// stop stops the pipeline's goroutines and waits for them.
func (p *pipeline) stop() {
	p.cancel()
	p.wg.Wait()
}

// parseBatch parses every line of b into b.out.
func parseBatch(o Options, b *lineBatch) {
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
				ln.tooLong, o.MaxMessageBytes+LineMargin, core.ErrTooLarge)}
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
	}
}
