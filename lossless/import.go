package lossless

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/transcript"
)

// checkpoint is an imported file's progress (transcript.Checkpoint).
type checkpoint = transcript.Checkpoint

// Import imports (or incrementally re-imports) an OpenClaw session JSONL
// file into agent's store ("" = Config.AgentID). It streams the file in
// constant memory, resumes from the file's checkpoint when the file was
// only appended to, re-reads a rewritten or rotated file from the start
// without storing anything twice, and skips malformed lines (reported in
// Malformed). Compaction entries become summaries (Method "imported") over
// the messages they replaced.
func (e *Engine) Import(ctx context.Context, agent, sessionFile string) (transcript.Result, error) {
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

// The import pipeline is lossless/transcript's (pipeline.go there): its
// workers parse the file ahead of importChunks, which prepares each chunk's
// messages in parallel across the cores (ingest.Prepare).

// WithImportProgress returns a copy of ctx under which Import and Bootstrap
// report their progress through a file: fn is called with the file offset
// up to which the import has read the file and handed its messages on to
// be stored (the store may be up to one chunk behind: the engine prepares
// the next chunk while it stores one), after every batch (at most a few
// hundred KiB apart), from one goroutine at a time (the import's
// read-ahead, not the caller's), so it must return quickly. A resumed import starts at its
// checkpoint's offset; a file already imported calls fn not at all. The
// CLI's import progress bar is drawn from it (cmd/lossless), in bytes, so
// that a single large file moves the bar too.
func WithImportProgress(ctx context.Context, fn func(offset int64)) context.Context {
	return transcript.WithProgress(ctx, fn)
}

// importOpts sizes the import pipeline (transcript.Options).
type importOpts = transcript.Options

// defaultImportOpts returns the pipeline's default sizes (importFileOpts
// sets the engine's MaxMessageBytes).
func defaultImportOpts() importOpts { return transcript.DefaultOptions() }

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

func (e *Engine) importFile(ctx context.Context, agent, sessionID, sessionKey, path string) (transcript.Result, error) {
	return e.importFileOpts(ctx, agent, sessionID, sessionKey, path, defaultImportOpts())
}

// importFileOpts is the import of one file (lossless/transcript.Import)
// with the engine entered, under the file's import lock (lockImport): the
// door resolves the file's session, then stores each chunk the import
// reads (validated, prepared and stored by the write path, its compaction
// entry through the conversation's Replace), and reconciles a rewritten
// file under the conversation's lock.
func (e *Engine) importFileOpts(ctx context.Context, agent, sessionID, sessionKey, path string, o importOpts) (transcript.Result, error) {
	done, err := e.enter()
	if err != nil {
		return transcript.Result{}, err
	}
	defer done()
	path = transcript.ImportPath(path)
	unlock, err := e.lockImport(ctx, agent, path)
	if err != nil {
		return transcript.Result{}, err
	}
	defer unlock()
	o.MaxMessageBytes = e.cfg.MaxMessageBytes
	o.Fault = e.cfg.hooks.reconcileFault
	im, err := transcript.Open(ctx, e.st, e.space, agent, sessionID, path, o)
	if err != nil {
		return transcript.Result{}, err
	}
	defer im.Close()
	if im.Done() {
		return im.Result(ctx)
	}
	if err := e.importChunks(ctx, im, agent, sessionKey); err != nil {
		return im.Partial(), err
	}
	if im.Reconciling() {
		if err := e.reconcileImport(ctx, im); err != nil {
			return im.Partial(), err
		}
	}
	return im.Result(ctx)
}

// importChunks resolves im's session (made when new) and stores every
// chunk im reads, moving the file's checkpoint past each.
func (e *Engine) importChunks(ctx context.Context, im *transcript.Import, agent, sessionKey string) error {
	c, err := e.resolve(ctx, agent, im.SessionID(), sessionKey, true)
	if err != nil {
		return err
	}
	needNext, err := im.Begin(ctx, c)
	if err != nil {
		return err
	}
	if needNext {
		s, err := e.lockConv(ctx, c)
		if err != nil {
			return err
		}
		next := s.rec.NextSeq
		s.unlock()
		if err := im.BeginReconcile(ctx, next); err != nil {
			return err
		}
	}
	// Chunks are read, validated and prepared one ahead of the one stored
	// (preparing is the costly part: token counts, in parallel across the
	// cores), in file order.
	type prepared struct {
		ch *transcript.Chunk
		ps []pending
	}
	pctx, cancel := context.WithCancel(ctx)
	ready := make(chan prepared, 1)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // the goroutine is done with im before it is closed
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ready)
		for {
			ch, err := im.Next(pctx)
			if err != nil || ch == nil {
				errc <- err
				return
			}
			for i, m := range ch.Messages {
				if err := validateMessage(m, e.cfg.MaxMessageBytes); err != nil {
					ch.Reject(i, err)
				}
			}
			var ps []pending
			if msgs := ch.Valid(); len(msgs) > 0 {
				if ps, err = e.prepare(pctx, msgs, false); err != nil {
					errc <- err
					return
				}
			}
			select {
			case ready <- prepared{ch, ps}:
			case <-pctx.Done():
				errc <- fmt.Errorf("lossless: import: %w", pctx.Err())
				return
			}
		}
	}()
	for p := range ready {
		if err := e.storeChunk(ctx, im, c, p.ch, p.ps); err != nil {
			return err
		}
	}
	return <-errc
}

// storeChunk stores chunk ch of im (its messages prepared as ps) into
// conversation c, applies its compaction entry, and moves the file's
// checkpoint past it.
func (e *Engine) storeChunk(ctx context.Context, im *transcript.Import, c convID, ch *transcript.Chunk, ps []pending) error {
	var seqs []uint64
	n := 0
	if len(ps) > 0 {
		var err error
		if n, err = e.ingestInto(ctx, c, ps); err != nil {
			return err
		}
		seqs = make([]uint64, len(ps))
		for i := range ps {
			seqs[i] = ps[i].Seq
		}
	}
	comp, err := im.Stored(ctx, ch, seqs, n)
	if err != nil {
		return err
	}
	if comp != nil {
		if err := e.importCompaction(ctx, im, *comp); err != nil {
			return err
		}
	}
	return im.Checkpoint(ctx, ch, seqs)
}

// reconcileImport reconciles a rewritten file's read (im.Reconcile) under
// its conversation's lock, behind the free-space guard, then applies the
// compaction entries it held back.
func (e *Engine) reconcileImport(ctx context.Context, im *transcript.Import) error {
	if err := e.checkSpace(); err != nil {
		return err
	}
	s, err := e.lockConv(ctx, im.Conv())
	if err != nil {
		return err
	}
	err = im.Reconcile(ctx)
	s.unlock()
	if err != nil {
		return err
	}
	for _, ent := range im.Deferred() {
		if err := e.importCompaction(ctx, im, ent); err != nil {
			return err
		}
	}
	return nil
}

// importCompaction imports compaction entry ent of im's file as a summary
// (transcript.PlanCompaction) through the conversation's Replace (which
// feeds the recall index); a conflict with a write meanwhile imports
// nothing.
func (e *Engine) importCompaction(ctx context.Context, im *transcript.Import, ent core.Entry) error {
	c := im.Conv()
	p, err := transcript.PlanCompaction(ctx, e.st, c, im.Tag(), ent)
	if err != nil || p == nil {
		return err
	}
	p.Summary.Tokens = core.CountMessage(e.tc, RenderSummary(p.Summary))
	p.Item.Tokens = p.Summary.Tokens
	conv := &Conversation{e: e, id: c}
	if err := conv.replace(ctx, p.Old, p.Summary, p.Item); err != nil {
		if errors.Is(err, dag.ErrConflict) {
			return nil
		}
		return err
	}
	im.Summarized()
	return nil
}
