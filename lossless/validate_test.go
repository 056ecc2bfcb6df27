package lossless

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// TestBadSessionIDRefused: a session id or key holding a NUL byte or
// invalid UTF-8 is refused by every call that takes one, on both
// backends, with an error naming the field and wrapping
// core.ErrInvalidSessionID, and nothing is stored. (Before, Badger stored
// it and PostgreSQL refused it with a raw SQLSTATE.)
func TestBadSessionIDRefused(t *testing.T) {
	backends := map[string]func(t *testing.T) *Engine{
		"badger": func(t *testing.T) *Engine { return openTest(t) },
		"postgres": func(t *testing.T) *Engine {
			e, err := openPG(context.Background(), pgtest.NewDB(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			ctx := context.Background()
			msg := core.UserText("hello", 1)
			file := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(file, []byte(`{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}`+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, bad := range []struct{ id, key, field, why string }{
				{"a\x00b", "", "sessionId", "NUL"},
				{"a\xffb", "", "sessionId", "UTF-8"},
				{"ok", "agent:main:\x00", "sessionKey", "NUL"},
			} {
				calls := map[string]func() error{
					"ingest": func() error {
						_, err := e.Ingest(ctx, core.IngestParams{SessionID: bad.id, SessionKey: bad.key, Message: msg})
						return err
					},
					"ingestBatch": func() error {
						_, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: bad.id, SessionKey: bad.key, Messages: []core.Message{msg}})
						return err
					},
					"bootstrap": func() error {
						_, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: bad.id, SessionKey: bad.key, SessionFile: file})
						return err
					},
					"commitTurn": func() error {
						_, err := e.CommitTurn(ctx, core.CommitTurnParams{AdvancementKey: "k1", SessionID: bad.id, SessionKey: bad.key, Messages: []core.Message{msg}})
						return err
					},
					"assemble": func() error {
						_, err := e.Assemble(ctx, core.AssembleParams{SessionID: bad.id, SessionKey: bad.key, TokenBudget: 1000})
						return err
					},
				}
				for call, f := range calls {
					err := f()
					if !errors.Is(err, core.ErrInvalidSessionID) || !strings.Contains(err.Error(), bad.field) || !strings.Contains(err.Error(), bad.why) {
						t.Errorf("%s with %s %q: %v, want an error naming %s (%s) wrapping core.ErrInvalidSessionID", call, bad.field, bad.id+bad.key, err, bad.field, bad.why)
					}
				}
			}
			if n := countMessages(t, e); n != 0 {
				t.Errorf("%d messages stored after refused calls", n)
			}
			if s, err := e.Sessions(ctx, ""); err != nil || len(s) != 0 {
				t.Errorf("sessions after refused calls: %v, %v", s, err)
			}
		})
	}
}
