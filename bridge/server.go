package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// DefaultMaxLineBytes bounds one incoming line unless Options.MaxLineBytes
// says otherwise: a little over the lossless engine's default
// maxMessageBytes (32 MiB), for the request around the message. A host
// that sends larger requests (a whole session view per afterTurn) raises it
// (lossless serve --max-line-bytes).
const DefaultMaxLineBytes = 40 << 20

// DefaultMaxInFlight bounds the requests served at once unless
// Options.MaxInFlight says otherwise.
const DefaultMaxInFlight = 64

// DefaultMaxQueued bounds the requests waiting for a slot unless
// Options.MaxQueued says otherwise.
const DefaultMaxQueued = 1024

// DefaultMaxQueuedBytes bounds the bytes of the requests waiting for a slot
// unless Options.MaxQueuedBytes says otherwise (1,024 requests of up to
// 40 MiB each would be 40 GiB).
const DefaultMaxQueuedBytes = 256 << 20

// maxRollbacks bounds the rollbacks of subagent spawns kept for a
// rollbackSubagentSpawn that may never come (a spawn that went well): the
// oldest are forgotten beyond it.
const maxRollbacks = 4096

// Options tune Serve. The zero value is usable.
type Options struct {
	// ServerName and ServerVersion are reported by initialize.
	ServerName    string
	ServerVersion string
	// MaxLineBytes bounds one incoming line; a longer line is discarded
	// (never held whole) and answered with a parse error naming the limit.
	// 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxInFlight bounds the requests served at once; later ones wait in
	// arrival order. 0 means DefaultMaxInFlight.
	MaxInFlight int
	// MaxQueued bounds the requests waiting for a slot. A request beyond it
	// is answered at once with CodeServerBusy (the client may retry); a
	// notification beyond it (it has no answer) is dropped and logged.
	// 0 means DefaultMaxQueued.
	MaxQueued int
	// MaxQueuedBytes bounds the bytes (their lines) of the requests waiting
	// for a slot, as MaxQueued bounds their number; a request that would
	// pass it while others wait is answered with CodeServerBusy. 0 means
	// DefaultMaxQueuedBytes.
	MaxQueuedBytes int
	// Logf, when set, receives diagnostics (malformed lines, write errors).
	// It must not write to Serve's writer.
	Logf func(format string, args ...any)
	// KeepEngineOpen leaves the engine open when Serve returns. By default an
	// engine that implements io.Closer is closed.
	KeepEngineOpen bool
	// AfterTurnNewMessagesOnly declares that the engine's AfterTurn reads
	// only p.NewMessages() and stores nothing twice, so the client may send
	// only the new messages each turn (the session view grows with the
	// history; sending all of it every turn costs O(history) per turn).
	AfterTurnNewMessagesOnly bool
	// Timing, when set, receives one line per request the engine served:
	// {"method","startMs","ms","ok"} (JSON), ms being the time inside the
	// engine call, host callbacks included. lossless-bench and the OpenClaw
	// end-to-end test read it to measure the engine's share of a turn.
	Timing func(method string, start time.Time, d time.Duration, ok bool)
	// Explorer, when set, answers the explorer method: where this process
	// serves the memory explorer. It may wait (ctx) for the engine to open;
	// without it explorer is an unknown method.
	Explorer func(ctx context.Context) (ExplorerInfo, error)
	// OnAssemble, when set, is told of every assemble the engine answered
	// (the memory explorer shows a session's last one). It runs on the
	// request's goroutine before the answer is sent: it must be quick.
	OnAssemble func(p core.AssembleParams, res core.AssembleResult)
}

// Static returns a factory that always returns e, ignoring the options.
func Static(e core.Engine) core.Factory {
	return func(context.Context, core.FactoryOptions) (core.Engine, error) { return e, nil }
}

// Serve reads newline-delimited JSON-RPC 2.0 requests from r and writes the
// responses (and host callback requests) to w until r ends or ctx is
// cancelled. The engine is made by factory on the initialize request.
// Requests run concurrently, so responses may come out of order; each carries
// its request's id.
//
// When r ends, Serve waits for the requests in flight to finish (their host
// callbacks fail with ErrConnectionClosed) and returns nil; when ctx is
// cancelled, it cancels them, waits, and returns ctx.Err(). In both cases it
// then closes the engine (see Options.KeepEngineOpen); when that fails,
// Serve returns the close error instead (on a cancellation too: it does
// not wrap ctx.Err(), so a caller that takes context.Canceled for a normal
// shutdown still hears of it). A write error on w cancels everything and
// is returned.
func Serve(ctx context.Context, r io.Reader, w io.Writer, factory core.Factory, opts Options) error {
	if factory == nil {
		return errors.New("bridge: nil factory")
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	if opts.MaxQueuedBytes <= 0 {
		opts.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if opts.ServerName == "" {
		opts.ServerName = "contextengine-bridge"
	}
	base, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{
		factory:   factory,
		opts:      opts,
		w:         w,
		base:      base,
		cancelAll: cancel,
		inflight:  map[string]context.CancelFunc{},
		rollbacks: map[string]func(context.Context) error{},
		pending:   map[string]chan Message{},
		closed:    make(chan struct{}),
	}
	s.handlers = s.handlerMap()
	return s.run(ctx, r)
}

type server struct {
	factory   core.Factory
	opts      Options
	base      context.Context
	cancelAll context.CancelFunc

	wmu  sync.Mutex
	w    io.Writer
	werr error

	mu           sync.Mutex
	engine       core.Engine
	inflight     map[string]context.CancelFunc
	running      int      // requests being served (at most Options.MaxInFlight)
	queue        []queued // requests waiting for a slot, in arrival order
	queueBytes   int      // the bytes of their lines
	rollbacks    map[string]func(context.Context) error
	rollbackIDs  []string // rollbacks' ids, oldest first (bounded by maxRollbacks)
	nextRollback uint64
	pending      map[string]chan Message
	closed       chan struct{} // closed when the input ended
	closedOnce   sync.Once

	handlers map[string]handler
	nextCall atomic.Uint64
	wg       sync.WaitGroup
}

type lineResult struct {
	line    []byte
	tooLong bool
	err     error
}

func (s *server) run(ctx context.Context, r io.Reader) error {
	lines := make(chan lineResult)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, tooLong, err := readLine(br, s.opts.MaxLineBytes)
			select {
			case lines <- lineResult{line, tooLong, err}:
			case <-s.base.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	var result error
loop:
	for {
		select {
		case <-s.base.Done():
			result = ctx.Err()
			if result == nil {
				result = s.writeErr()
			}
			break loop
		case lr := <-lines:
			if lr.tooLong {
				s.tooLong(lr.line)
			} else if len(bytes.TrimSpace(lr.line)) > 0 {
				s.dispatchLine(lr.line)
			}
			if lr.err != nil {
				if lr.err != io.EOF {
					result = fmt.Errorf("bridge: read: %w", lr.err)
				}
				break loop
			}
		}
	}
	// The input ended (or we were cancelled): host callbacks can no longer be
	// answered.
	s.closedOnce.Do(func() { close(s.closed) })
	if result != nil {
		s.cancelAll()
	}
	s.wg.Wait()
	if !s.opts.KeepEngineOpen {
		s.mu.Lock()
		e := s.engine
		s.engine = nil
		s.mu.Unlock()
		if c, ok := e.(io.Closer); ok {
			if err := c.Close(); err != nil {
				switch {
				case result == nil:
					result = fmt.Errorf("bridge: close engine: %w", err)
				case ctx.Err() != nil && errors.Is(result, ctx.Err()):
					// A shutdown (a signal) whose close failed (a full
					// disk): the failure is the news, not the signal.
					result = fmt.Errorf("bridge: close engine after %v: %w", result, err)
				}
			}
		}
	}
	if result == nil {
		result = s.writeErr()
	}
	return result
}

// readLine reads one line (without its newline). A line longer than max is
// consumed up to its newline and reported as tooLong.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > max+1 { // +1: the newline
				// Keep only the head (where "id" and "method" are), to
				// answer the request or fail the host call it belongs to.
				buf = append(buf, frag...)
				tooLong, buf = true, bytes.Clone(buf[:min(len(buf), lineHeadBytes)])
			} else {
				buf = append(buf, frag...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return buf, true, err
		}
		buf = bytes.TrimRight(buf, "\r\n")
		return buf, false, err
	}
}

func (s *server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

func (s *server) writeErr() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.werr
}

// write writes one line. A write error cancels everything.
func (s *server) write(b []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.werr != nil {
		return
	}
	b = append(b, '\n')
	if _, err := s.w.Write(b); err != nil {
		s.werr = fmt.Errorf("bridge: write: %w", err)
		s.logf("%v", s.werr)
		s.cancelAll()
	}
}

func (s *server) writeResult(id json.RawMessage, result any) {
	body, err := encode(result)
	if err != nil {
		s.writeError(id, &Error{Code: CodeInternalError, Message: "encode result: " + err.Error()})
		return
	}
	var b bytes.Buffer
	b.Grow(len(body) + 48)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":`)
	b.Write(body)
	b.WriteByte('}')
	s.write(b.Bytes())
}

func (s *server) writeError(id json.RawMessage, e *Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, err := encode(e)
	if err != nil {
		body = []byte(`{"code":-32603,"message":"encode error"}`)
	}
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"error":`)
	b.Write(body)
	b.WriteByte('}')
	s.write(b.Bytes())
}

// lineHeadBytes is how much of an over-long line is kept to find its id.
const lineHeadBytes = 4 << 10

// tooLong answers a line over MaxLineBytes, of which head is the start: a
// request is answered with an error under its id (the caller would wait
// forever for a null id), the answer to a host callback fails that
// callback; anything else gets a parse error with a null id.
func (s *server) tooLong(head []byte) {
	s.logf("bridge: discarded a line longer than %d bytes", s.opts.MaxLineBytes)
	msg := fmt.Sprintf("line longer than %d bytes (lossless serve --max-line-bytes; messages over maxMessageBytes are refused anyway)", s.opts.MaxLineBytes)
	id, method := lineHead(head)
	switch {
	case id != nil && method != "":
		s.writeError(id, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + msg})
	case id != nil:
		s.mu.Lock()
		ch, ok := s.pending[idKey(id)]
		delete(s.pending, idKey(id))
		s.mu.Unlock()
		if ok {
			ch <- Message{ID: id, Error: &Error{Code: CodeInvalidRequest, Message: "the host's answer was a " + msg}}
			return
		}
		fallthrough
	default:
		s.writeError(nil, &Error{Code: CodeParseError, Message: "parse error: " + msg})
	}
}

// lineHead reads the "id" and "method" of a JSON-RPC object from the start
// of its line, as far as they come before its params, result or error.
func lineHead(head []byte) (id json.RawMessage, method string) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return id, method
		}
		key, _ := t.(string)
		switch key {
		case "id":
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return id, method
			}
			if s := string(raw); s != "null" && (s[0] == '"' || s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
				id = raw
			}
		case "method":
			if dec.Decode(&method) != nil {
				return id, method
			}
		case "jsonrpc":
			var v any
			if dec.Decode(&v) != nil {
				return id, method
			}
		default:
			return id, method // params, result, error: the rest is cut
		}
	}
	return id, method
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// nestedDeeper reports whether line nests arrays and objects deeper than
// max (outside strings): valid JSON encoding/json refuses.
func nestedDeeper(line []byte, max int) bool {
	depth, inStr, esc := 0, false, false
	for _, b := range line {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case b == '\\':
				esc = true
			case b == '"':
				inStr = false
			}
		case b == '"':
			inStr = true
		case b == '[' || b == '{':
			if depth++; depth > max {
				return true
			}
		case b == ']' || b == '}':
			depth--
		}
	}
	return false
}

func (s *server) dispatchLine(line []byte) {
	m, derr := DecodeMessage(line)
	if derr != nil {
		s.logf("bridge: %s", derr.Message)
		if m.ID == nil && nestedDeeper(line, maxJSONDepth) {
			// Valid JSON nested deeper than the decoder goes: a request
			// whose id comes before its params is answered under that id
			// (with a null id its caller would wait for ever).
			if id, method := lineHead(line[:min(len(line), lineHeadBytes)]); id != nil && method != "" {
				s.writeError(id, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + derr.Message})
				return
			}
		}
		s.writeError(m.ID, derr)
		return
	}
	switch {
	case m.IsResponse():
		s.mu.Lock()
		ch, ok := s.pending[idKey(m.ID)]
		delete(s.pending, idKey(m.ID))
		s.mu.Unlock()
		if ok {
			ch <- m
		} else {
			s.logf("bridge: response to unknown id %s", m.ID)
		}
	case m.Method == MethodCancelRequest:
		var p CancelParams
		if err := json.Unmarshal(m.Params, &p); err != nil || p.ID == nil {
			if m.IsRequest() {
				s.writeError(m.ID, &Error{Code: CodeInvalidParams, Message: "invalid params: $/cancelRequest needs {id}"})
			}
			return
		}
		key := idKey(p.ID)
		s.mu.Lock()
		cancel := s.inflight[key]
		// A request still waiting for a slot is answered now, not when a
		// slot frees up.
		var dropped *queued
		for i := range s.queue {
			if s.queue[i].key == key {
				q := s.queue[i]
				dropped = &q
				s.queueBytes -= q.size
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				delete(s.inflight, key)
				break
			}
		}
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		if dropped != nil {
			s.writeError(dropped.id, &Error{Code: CodeRequestCancelled, Message: "request cancelled before it started"})
			s.wg.Done()
		}
		if m.IsRequest() {
			s.writeResult(m.ID, nil)
		}
	case m.Method == MethodInitialize:
		// Synchronous, so that requests after it see the engine.
		s.respond(m, s.initialize)
	default:
		key, size := "", len(line)
		var ctx context.Context
		var cancel context.CancelFunc
		if m.IsRequest() {
			key = idKey(m.ID)
			s.mu.Lock()
			_, dup := s.inflight[key]
			if !dup {
				ctx, cancel = context.WithCancel(s.base)
				s.inflight[key] = cancel
			}
			s.mu.Unlock()
			if dup {
				s.writeError(m.ID, &Error{Code: CodeInvalidRequest, Message: "invalid request: duplicate id of a request in flight"})
				return
			}
		} else {
			ctx, cancel = context.WithCancel(s.base)
		}
		job := func() {
			defer cancel()
			// The id is free again before the response is written: a client
			// may reuse it as soon as it has the response.
			release := func() {
				if key != "" {
					s.mu.Lock()
					delete(s.inflight, key)
					s.mu.Unlock()
				}
			}
			s.respondCtx(ctx, m, release)
		}
		s.mu.Lock()
		if s.running >= s.opts.MaxInFlight {
			if len(s.queue) >= s.opts.MaxQueued || (len(s.queue) > 0 && s.queueBytes+size > s.opts.MaxQueuedBytes) {
				// Full: refuse now rather than hold the request in memory.
				if key != "" {
					delete(s.inflight, key)
				}
				s.mu.Unlock()
				cancel()
				if m.IsRequest() {
					s.writeError(m.ID, &Error{Code: CodeServerBusy,
						Message: fmt.Sprintf("server busy: %d requests running and %d (%d bytes) waiting (the limits: %d, %d bytes); retry later", s.running, len(s.queue), s.queueBytes, s.opts.MaxQueued, s.opts.MaxQueuedBytes)})
				} else {
					s.logf("bridge: notification %s dropped: %d requests running and %d waiting", m.Method, s.opts.MaxInFlight, s.opts.MaxQueued)
				}
				return
			}
			// Beyond the bound a request waits its turn (FIFO); the reader
			// goes on, so host callback answers still arrive.
			s.wg.Add(1)
			s.queue = append(s.queue, queued{key: key, id: m.ID, job: job, size: size})
			s.queueBytes += size
			s.mu.Unlock()
			return
		}
		s.wg.Add(1)
		s.running++
		s.mu.Unlock()
		go s.work(job)
	}
}

// queued is a request waiting for a slot: its id (key is its inflight key,
// "" for a notification) and the job that serves it.
type queued struct {
	key  string
	id   json.RawMessage
	job  func()
	size int // bytes of its line
}

// work runs job, then the queued jobs, until the queue is empty.
func (s *server) work(job func()) {
	for job != nil {
		job()
		s.wg.Done()
		s.mu.Lock()
		job = nil
		if len(s.queue) > 0 {
			job = s.queue[0].job
			s.queueBytes -= s.queue[0].size
			s.queue[0] = queued{}
			s.queue = s.queue[1:]
		} else {
			s.running--
		}
		s.mu.Unlock()
	}
}

type handler func(ctx context.Context, m Message) (any, error)

func (s *server) respond(m Message, h handler) {
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	s.finish(ctx, m, h, func() {})
}

func (s *server) respondCtx(ctx context.Context, m Message, release func()) {
	h, ok := s.handlers[m.Method]
	if !ok {
		release()
		if m.IsRequest() {
			s.writeError(m.ID, &Error{Code: CodeMethodNotFound, Message: "method not found: " + m.Method})
		}
		return
	}
	s.finish(ctx, m, h, release)
}

// finish runs h, calls release, then writes the response.
func (s *server) finish(ctx context.Context, m Message, h handler, release func()) {
	start := time.Now()
	result, err := s.call(ctx, m, h)
	if s.opts.Timing != nil {
		s.opts.Timing(m.Method, start, time.Since(start), err == nil)
	}
	release()
	if !m.IsRequest() {
		if err != nil {
			s.logf("bridge: notification %s: %v", m.Method, err)
		}
		return
	}
	if err != nil {
		s.writeError(m.ID, toRPCError(ctx, err))
		return
	}
	s.writeResult(m.ID, result)
}

// call runs h, turning a panic into an internal error.
func (s *server) call(ctx context.Context, m Message, h handler) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.logf("bridge: panic in %s: %v\n%s", m.Method, p, debug.Stack())
			err = &Error{Code: CodeInternalError, Message: fmt.Sprintf("internal error: panic in %s: %v", m.Method, p)}
		}
	}()
	return h(ctx, m)
}

func toRPCError(ctx context.Context, err error) *Error {
	// Only the server's own errors keep their code; an *Error that came back
	// from a host callback, wrapped by the engine, is an engine error here.
	if re, ok := err.(*Error); ok {
		return re
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ctx.Err())) {
		return &Error{Code: CodeRequestCancelled, Message: "request cancelled: " + err.Error()}
	}
	if errors.Is(err, ErrNotInitialized) {
		return &Error{Code: CodeServerNotInitialized, Message: err.Error()}
	}
	e := &Error{Code: CodeEngineError, Message: err.Error()}
	if kind := errorKind(err); kind != "" {
		e.Data, _ = json.Marshal(map[string]string{"kind": kind})
	}
	return e
}

func invalidParams(method string, err error) error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("invalid params for %s: %v", method, err)}
}

func notImplemented(method string) error {
	return &Error{Code: CodeMethodNotFound, Message: "method not found: the engine does not implement " + method}
}

// decode unmarshals params (absent params decode as {}). A session id,
// session key or agent id that is not valid UTF-8 is refused before
// (checkNames): decoding would replace it.
func decode(m Message, v any) error {
	if m.Params == nil {
		return nil
	}
	if firstByte(m.Params) != '{' {
		return invalidParams(m.Method, errors.New("params must be an object"))
	}
	// A name decoding would alter is refused first (names.go).
	if err := checkNames(m.Params, nameDepth); err != nil {
		e := &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("invalid params for %s: %v", m.Method, err)}
		e.Data, _ = json.Marshal(map[string]string{"kind": errorKind(core.ErrInvalidSessionID)})
		return e
	}
	if err := json.Unmarshal(m.Params, v); err != nil {
		return invalidParams(m.Method, err)
	}
	return nil
}

func (s *server) currentEngine() (core.Engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.engine == nil {
		return nil, fmt.Errorf("%w: send initialize first", ErrNotInitialized)
	}
	return s.engine, nil
}

func (s *server) initialize(ctx context.Context, m Message) (any, error) {
	var p InitializeParams
	if err := decode(m, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	existing := s.engine
	s.mu.Unlock()
	if existing != nil {
		return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: already initialized (dispose first)"}
	}
	e, err := s.factory(ctx, p.FactoryOptions)
	if err != nil {
		return nil, fmt.Errorf("bridge: create engine: %w", err)
	}
	if e == nil {
		return nil, fmt.Errorf("bridge: create engine: %w: factory returned nil", core.ErrInvalidEngine)
	}
	info := e.Info()
	if err := info.Validate(); err != nil {
		if c, ok := e.(io.Closer); ok {
			_ = c.Close()
		}
		return nil, fmt.Errorf("bridge: create engine: %w", err)
	}
	s.mu.Lock()
	s.engine = e
	s.mu.Unlock()
	return InitializeResult{ProtocolVersion: ProtocolVersion, Info: info, Methods: Methods(e),
		Server:                   ServerInfo{Name: s.opts.ServerName, Version: s.opts.ServerVersion},
		AfterTurnNewMessagesOnly: s.opts.AfterTurnNewMessagesOnly}, nil
}

// Methods lists the contract methods e implements, sorted: always info,
// ingest, assemble and compact, plus the optional ones it has (and dispose
// when it is an io.Closer).
func Methods(e core.Engine) []string {
	out := []string{MethodInfo, MethodIngest, MethodAssemble, MethodCompact}
	if _, ok := e.(core.Bootstrapper); ok {
		out = append(out, MethodBootstrap)
	}
	if _, ok := e.(core.Maintainer); ok {
		out = append(out, MethodMaintain)
	}
	if _, ok := e.(core.BatchIngester); ok {
		out = append(out, MethodIngestBatch)
	}
	if _, ok := e.(core.AfterTurner); ok {
		out = append(out, MethodAfterTurn)
	}
	if _, ok := e.(core.TurnCommitter); ok {
		out = append(out, MethodCommitTurn)
	}
	if _, ok := e.(core.SubagentSpawner); ok {
		out = append(out, MethodPrepareSubagentSpawn)
	}
	if _, ok := e.(core.SubagentEndListener); ok {
		out = append(out, MethodOnSubagentEnded)
	}
	if _, ok := e.(io.Closer); ok {
		out = append(out, MethodDispose)
	}
	if _, ok := e.(core.ToolCaller); ok {
		out = append(out, MethodToolsCall, MethodToolsList)
	}
	sort.Strings(out)
	return out
}

func (s *server) handlerMap() map[string]handler {
	return map[string]handler{
		MethodInfo: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			return e.Info(), nil
		},
		MethodIngest: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			var p core.IngestParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			if p.Message.IsZero() {
				return nil, invalidParams(m.Method, errors.New("missing message"))
			}
			return e.Ingest(ctx, p)
		},
		MethodIngestBatch: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			b, ok := e.(core.BatchIngester)
			if !ok {
				return nil, notImplemented(m.Method)
			}
			var p core.IngestBatchParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			return b.IngestBatch(ctx, p)
		},
		MethodAssemble: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			var p core.AssembleParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			p.RuntimeContext = s.attach(p.RuntimeContext, m)
			res, err := e.Assemble(ctx, p)
			if err != nil {
				return nil, err
			}
			if res.Messages == nil {
				res.Messages = []core.Message{}
			}
			if s.opts.OnAssemble != nil {
				s.opts.OnAssemble(p, res)
			}
			return res, nil
		},
		MethodCompact: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			var p core.CompactParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			p.RuntimeContext = s.attach(p.RuntimeContext, m)
			return e.Compact(ctx, p)
		},
		MethodBootstrap: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			b, ok := e.(core.Bootstrapper)
			if !ok {
				return nil, notImplemented(m.Method)
			}
			var p core.BootstrapParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			p.RuntimeContext = s.attach(p.RuntimeContext, m)
			return b.Bootstrap(ctx, p)
		},
		MethodMaintain: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			mt, ok := e.(core.Maintainer)
			if !ok {
				return nil, notImplemented(m.Method)
			}
			var p core.MaintainParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			p.RuntimeContext = s.attach(p.RuntimeContext, m)
			return mt.Maintain(ctx, p)
		},
		MethodAfterTurn: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			a, ok := e.(core.AfterTurner)
			if !ok {
				return nil, notImplemented(m.Method)
			}
			var p core.AfterTurnParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			p.RuntimeContext = s.attach(p.RuntimeContext, m)
			return nil, a.AfterTurn(ctx, p)
		},
		MethodCommitTurn: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			c, ok := e.(core.TurnCommitter)
			if !ok {
				return nil, notImplemented(m.Method)
			}
			var p core.CommitTurnParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			p.RuntimeContext = s.attach(p.RuntimeContext, m)
			return c.CommitTurn(ctx, p)
		},
		MethodPrepareSubagentSpawn: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			sp, ok := e.(core.SubagentSpawner)
			if !ok {
				return nil, notImplemented(m.Method)
			}
			var p core.SubagentSpawnParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			prep, err := sp.PrepareSubagentSpawn(ctx, p)
			if err != nil {
				return nil, err
			}
			if prep == nil || prep.Rollback == nil {
				return nil, nil
			}
			s.mu.Lock()
			s.nextRollback++
			id := "rb" + strconv.FormatUint(s.nextRollback, 10)
			s.rollbacks[id] = prep.Rollback
			s.rollbackIDs = append(s.rollbackIDs, id)
			for len(s.rollbackIDs) > maxRollbacks {
				// The oldest spawn's rollback is forgotten (its spawn went
				// well long ago, or its host is gone).
				delete(s.rollbacks, s.rollbackIDs[0])
				s.rollbackIDs = s.rollbackIDs[1:]
			}
			s.mu.Unlock()
			return SpawnResult{RollbackID: id}, nil
		},
		MethodRollbackSubagentSpawn: func(ctx context.Context, m Message) (any, error) {
			var p RollbackParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			s.mu.Lock()
			fn := s.rollbacks[p.RollbackID]
			delete(s.rollbacks, p.RollbackID)
			s.mu.Unlock()
			if fn == nil {
				// Rollback must be safe to call more than once: a second call
				// (or an unknown id) is a no-op.
				return nil, nil
			}
			return nil, fn(ctx)
		},
		MethodOnSubagentEnded: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			l, ok := e.(core.SubagentEndListener)
			if !ok {
				return nil, notImplemented(m.Method)
			}
			var p core.SubagentEndedParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			return nil, l.OnSubagentEnded(ctx, p)
		},
		MethodExplorer: func(ctx context.Context, m Message) (any, error) {
			if s.opts.Explorer == nil {
				return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: this process serves no memory explorer (lossless serve --ui)"}
			}
			if _, err := s.currentEngine(); err != nil {
				return nil, err
			}
			info, err := s.opts.Explorer(ctx)
			if err != nil {
				return nil, fmt.Errorf("bridge: explorer: %w", err)
			}
			return info, nil
		},
		MethodToolsList: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			tc, ok := e.(core.ToolCaller)
			if !ok {
				return []core.ToolDef{}, nil
			}
			return tc.ToolDefs(), nil
		},
		MethodToolsCall: func(ctx context.Context, m Message) (any, error) {
			e, err := s.currentEngine()
			if err != nil {
				return nil, err
			}
			tc, ok := e.(core.ToolCaller)
			if !ok {
				return nil, notImplemented(m.Method)
			}
			var p core.ToolCallParams
			if err := decode(m, &p); err != nil {
				return nil, err
			}
			if p.Name == "" {
				return nil, invalidParams(m.Method, errors.New("missing name"))
			}
			return tc.CallTool(ctx, p)
		},
		MethodDispose: func(ctx context.Context, m Message) (any, error) {
			s.mu.Lock()
			e := s.engine
			s.engine = nil
			s.rollbacks = map[string]func(context.Context) error{}
			s.rollbackIDs = nil
			s.mu.Unlock()
			if c, ok := e.(io.Closer); ok {
				if err := c.Close(); err != nil {
					return nil, fmt.Errorf("bridge: dispose: %w", err)
				}
			}
			return nil, nil
		},
	}
}

// attach fills rc's host callbacks with stubs that call the client, for the
// callbacks the request lists in hostCallbacks.
func (s *server) attach(rc *core.RuntimeContext, m Message) *core.RuntimeContext {
	if len(m.HostCallbacks) == 0 || m.ID == nil {
		return rc
	}
	if rc == nil {
		rc = &core.RuntimeContext{}
	}
	reqID := m.ID
	for _, name := range m.HostCallbacks {
		switch name {
		case CallbackRewriteTranscriptEntries:
			rc.RewriteTranscriptEntries = func(ctx context.Context, req core.RewriteRequest) (core.RewriteResult, error) {
				var out core.RewriteResult
				err := s.callHost(ctx, MethodHostRewriteTranscriptEntries, CallbackParams{RequestID: reqID, Request: req}, &out)
				return out, err
			}
		case CallbackLLMComplete:
			rc.LLMComplete = func(ctx context.Context, req core.LLMRequest) (core.LLMResponse, error) {
				var out core.LLMResponse
				err := s.callHost(ctx, MethodHostLLMComplete, CallbackParams{RequestID: reqID, Request: req}, &out)
				return out, err
			}
		case CallbackReadTranscript:
			rc.ReadTranscript = func(ctx context.Context, req core.TranscriptReadRequest) (core.TranscriptPage, error) {
				var out core.TranscriptPage
				err := s.callHost(ctx, MethodHostReadTranscript, CallbackParams{RequestID: reqID, Request: req}, &out)
				return out, err
			}
		}
	}
	return rc
}

// callHost sends a server → client request and waits for its response.
func (s *server) callHost(ctx context.Context, method string, params any, out any) error {
	body, err := encode(params)
	if err != nil {
		return fmt.Errorf("bridge: encode %s: %w", method, err)
	}
	id := `"h` + strconv.FormatUint(s.nextCall.Add(1), 10) + `"`
	ch := make(chan Message, 1)
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return fmt.Errorf("bridge: %s: %w", method, ErrConnectionClosed)
	default:
	}
	s.pending[id] = ch
	s.mu.Unlock()
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.WriteString(id)
	b.WriteString(`,"method":`)
	mb, _ := json.Marshal(method)
	b.Write(mb)
	b.WriteString(`,"params":`)
	b.Write(body)
	b.WriteByte('}')
	s.write(b.Bytes())
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return fmt.Errorf("bridge: host %s: %w", method, resp.Error)
		}
		if out != nil && resp.Result != nil && !isNull(resp.Result) {
			if err := json.Unmarshal(resp.Result, out); err != nil {
				return fmt.Errorf("bridge: host %s: decode result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		s.write([]byte(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id + `}}`))
		return fmt.Errorf("bridge: host %s: %w", method, ctx.Err())
	case <-s.closed:
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		return fmt.Errorf("bridge: host %s: %w", method, ErrConnectionClosed)
	}
}
