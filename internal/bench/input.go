package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// synthMessages returns the first n messages of seed's synthetic stream,
// parsed, and their total JSON size.
func synthMessages(seed uint64, n int) ([]core.Message, int64, error) {
	g := synth.New(seed)
	out := make([]core.Message, n)
	var bytes int64
	for i := range out {
		raw := g.Next()
		m, err := core.ParseMessage(raw)
		if err != nil {
			return nil, 0, fmt.Errorf("bench: synthetic message %d: %w", i, err)
		}
		out[i] = m
		bytes += int64(len(raw))
	}
	return out, bytes, nil
}

// turns splits msgs into turns: each starts at a user message (or at the
// first message) and runs up to the next user message.
func turns(msgs []core.Message) [][]core.Message {
	var out [][]core.Message
	start := 0
	for i := 1; i <= len(msgs); i++ {
		if i == len(msgs) || msgs[i].Role() == core.RoleUser {
			out = append(out, msgs[start:i])
			start = i
		}
	}
	return out
}

func sessionKey(id string) string { return "agent:main:" + id }

// ingestBatched stores msgs turn by turn, with IngestBatch when the engine
// has it and one Ingest per message otherwise.
func ingestBatched(ctx context.Context, e core.Engine, session, key string, msgs []core.Message, p Progress) error {
	bi, ok := e.(core.BatchIngester)
	for _, t := range turns(msgs) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ok {
			if _, err := bi.IngestBatch(ctx, core.IngestBatchParams{SessionID: session,
				SessionKey: key, Messages: t}); err != nil {
				return fmt.Errorf("ingestBatch: %w", err)
			}
		} else {
			for _, m := range t {
				if _, err := e.Ingest(ctx, core.IngestParams{SessionID: session,
					SessionKey: key, Message: m}); err != nil {
					return fmt.Errorf("ingest: %w", err)
				}
			}
		}
		p.Add(len(t))
	}
	return nil
}

// bootstrap imports a session file into e.
func bootstrap(ctx context.Context, e core.Engine, session, file string) (core.BootstrapResult, error) {
	b, ok := e.(core.Bootstrapper)
	if !ok {
		return core.BootstrapResult{}, fmt.Errorf("bootstrap: %w", ErrUnsupported)
	}
	res, err := b.Bootstrap(ctx, core.BootstrapParams{SessionID: session, SessionKey: sessionKey(session),
		SessionFile: file})
	if err != nil {
		return res, fmt.Errorf("bootstrap %s: %w", file, err)
	}
	return res, nil
}

func closeEngine(e core.Engine) error {
	if c, ok := e.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (r *runner) flush(ctx context.Context, t Target, e core.Engine) error {
	if t.Flush == nil {
		return nil
	}
	if err := t.Flush(ctx, e); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// transcriptMessages reads the message entries of a session file.
func transcriptMessages(path string) ([]core.Message, *core.Transcript, error) {
	tr, err := core.ReadTranscript(path)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	var out []core.Message
	for _, e := range tr.Entries {
		if e.Type == core.EntryMessage {
			out = append(out, e.Message)
		}
	}
	return out, tr, nil
}
