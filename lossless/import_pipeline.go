package lossless

import (
	"context"
	"crypto/sha256"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/transcript"
)

// The import pipeline is lossless/transcript's (pipeline.go there): its
// workers prepare each message through the engine's preparePending.

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

// importLineMargin is what an import line may hold beyond
// Config.MaxMessageBytes (the entry around the message, JSON escaping).
const importLineMargin = transcript.LineMargin

// defaultImportOpts returns the pipeline's default sizes (importFileOpts
// sets the engine's MaxMessageBytes).
func defaultImportOpts() importOpts { return transcript.DefaultOptions() }

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
