package ui_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// TestPiMono serves a store of the real pi-mono transcripts (imported,
// with their compaction entries as summaries): every session listed with
// its messages' own times, every message's bytes at /api/message as
// stored, the imported summaries in the DAG, a context whose parts add up.
// It skips without the shared data.
func TestPiMono(t *testing.T) {
	files := testutil.PiMono(t)
	e := openEngine(t)
	ctx := context.Background()
	for _, p := range files {
		if _, err := e.Import(ctx, "main", p); err != nil {
			t.Fatal(err)
		}
	}
	f := serve(t, e)
	var list listOf[sessionItem]
	f.getJSON(t, "/api/sessions", nil, &list)
	if list.Total != len(files) {
		t.Fatalf("%d sessions listed for %d transcripts", list.Total, len(files))
	}
	for _, s := range list.Items {
		if s.FirstMessage < 1_700_000_000_000 || s.LastMessage < s.FirstMessage || s.Messages < 100 {
			t.Fatalf("session %+v: times are the messages' own (2025), not the import's", s)
		}
		n := 0
		err := e.Messages(ctx, s.Agent, s.Session, func(seq uint64, m core.Message) error {
			code, body := f.get(t, "/api/message", q("agent", s.Agent, "session", s.Session, "seq", strconv.FormatUint(seq, 10)))
			if code != 200 || !bytes.Equal(body, m.Raw()) {
				t.Fatalf("%s message %d: %d, %d bytes; stored %d bytes", s.Session, seq, code, len(body), len(m.Raw()))
			}
			n++
			return nil
		})
		if err != nil || int64(n) != s.Messages {
			t.Fatalf("%s: %d of %d messages compared: %v", s.Session, n, s.Messages, err)
		}
		var c contextAnswer
		f.getJSON(t, "/api/context", q("agent", s.Agent, "session", s.Session, "budget", "32000", "prompt", "what did we decide about rpc mode?"), &c)
		sum := 0
		for _, p := range c.Parts {
			sum += p.Tokens
		}
		if c.EstimatedTokens == 0 || c.EstimatedTokens > 32000 || sum != c.EstimatedTokens {
			t.Fatalf("%s: context %d tokens, parts %+v", s.Session, c.EstimatedTokens, c.Parts)
		}
		if s.Summaries > 0 {
			var roots listOf[summaryItem]
			f.getJSON(t, "/api/summaries", q("agent", s.Agent, "session", s.Session), &roots)
			if roots.Total == 0 {
				t.Fatalf("%s: %d summaries stored, none in the context", s.Session, s.Summaries)
			}
		}
	}
}
