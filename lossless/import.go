package lossless

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
)

// ImportResult reports one import of a session file (transcript.Result).
type ImportResult = transcript.Result

// checkpoint is an imported file's progress (transcript.Checkpoint).
type checkpoint = transcript.Checkpoint

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

// The import pipeline is lossless/transcript's (pipeline.go there): its
// workers prepare each message through the engine's preparePending
// (ingest.go).

// WithImportProgress returns a copy of ctx under which Import and Bootstrap
// report their progress through a file: fn is called with the file offset
// up to which the file has been read and stored, after every batch the
// import stores (at most a few hundred KiB apart), from the goroutine that
// stores them, so it must return quickly. A resumed import starts at its
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

func (e *Engine) importFile(ctx context.Context, agent, sessionID, sessionKey, path string) (ImportResult, error) {
	return e.importFileOpts(ctx, agent, sessionID, sessionKey, path, defaultImportOpts())
}

// importFileOpts is the import of one file (lossless/transcript.Import)
// with the engine entered, under the file's import lock (lockImport).
func (e *Engine) importFileOpts(ctx context.Context, agent, sessionID, sessionKey, path string, o importOpts) (ImportResult, error) {
	done, err := e.enter()
	if err != nil {
		return ImportResult{}, err
	}
	defer done()
	path = transcript.ImportPath(path)
	unlock, err := e.lockImport(ctx, agent, path)
	if err != nil {
		return ImportResult{}, err
	}
	defer unlock()
	o.MaxMessageBytes = e.cfg.MaxMessageBytes
	o.Fault = e.cfg.hooks.reconcileFault
	return transcript.Import(ctx, importPort{e}, agent, sessionID, sessionKey, path, o)
}

// importPort is the engine as lossless/transcript's Port: what an import
// needs of it, over its unexported parts.
type importPort struct{ e *Engine }

var _ transcript.Port[pending] = importPort{}

// Store is the engine's store.
func (p importPort) Store() store.Store { return p.e.st }

// CheckSpace is the engine's free-space guard.
func (p importPort) CheckSpace() error { return p.e.checkSpace() }

// Resolve is resolve.
func (p importPort) Resolve(ctx context.Context, agent, sessionID, sessionKey string, create bool) (convID, error) {
	return p.e.resolve(ctx, agent, sessionID, sessionKey, create)
}

// LockConv is lockConv; it returns the conversation's NextSeq.
func (p importPort) LockConv(ctx context.Context, c convID) (uint64, func(), error) {
	s, err := p.e.lockConv(ctx, c)
	if err != nil {
		return 0, nil, err
	}
	return s.rec.NextSeq, s.unlock, nil
}

// Conversation returns conversation c's DAG store (the engine is entered
// by the import: convDAG calls the unexported methods).
func (p importPort) Conversation(c convID) dag.Store { return convDAG{&Conversation{e: p.e, id: c}} }

// Validate is validateMessage under the engine's MaxMessageBytes.
func (p importPort) Validate(m core.Message) error {
	return validateMessage(m, p.e.cfg.MaxMessageBytes)
}

// Prepare is preparePending.
func (p importPort) Prepare(ctx context.Context, pp *pending, m core.Message) {
	p.e.preparePending(ctx, pp, m)
}

// PrepareAll is prepare (no heartbeat flag).
func (p importPort) PrepareAll(ctx context.Context, msgs []core.Message) ([]pending, error) {
	return p.e.prepare(ctx, msgs, false)
}

// StoreMessages is ingestInto.
func (p importPort) StoreMessages(ctx context.Context, c convID, ps []pending) (int, error) {
	return p.e.ingestInto(ctx, c, ps)
}

// Seq returns the sequence number ingestInto gave pp.
func (importPort) Seq(pp *pending) uint64 { return pp.Seq }

// Hash returns pp's key (its message's hash).
func (importPort) Hash(pp *pending) store.Hash { return pp.Hash }

// SummaryTokens counts s rendered as the context shows it.
func (p importPort) SummaryTokens(s dag.Summary) int {
	return core.CountMessage(p.e.tc, RenderSummary(s))
}

// convDAG is a conversation as a dag.Store for a caller that has entered
// the engine already (Conversation's exported methods enter it again).
type convDAG struct{ c *Conversation }

// Items is Conversation.Items without entering the engine.
func (d convDAG) Items(ctx context.Context) ([]dag.Item, error) { return d.c.items(ctx) }

// MessageText is Conversation.MessageText.
func (d convDAG) MessageText(ctx context.Context, seq uint64) (string, error) {
	return d.c.MessageText(ctx, seq)
}

// Summary is Conversation.Summary without entering the engine.
func (d convDAG) Summary(ctx context.Context, id string) (dag.Summary, error) {
	return d.c.summary(ctx, id)
}

// Replace is Conversation.Replace without entering the engine.
func (d convDAG) Replace(ctx context.Context, old []dag.Item, s dag.Summary, item dag.Item) error {
	return d.c.replace(ctx, old, s, item)
}
