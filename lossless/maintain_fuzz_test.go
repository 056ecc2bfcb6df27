package lossless

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// FuzzMaintainTranscript feeds arbitrary transcript bytes (the host's file
// is outside input) to Bootstrap then Maintain with a rewriting host: no
// panic, no error other than a refused import, the stored messages never
// change, and every replacement names an entry of the file and stands for
// a stored message.
func FuzzMaintainTranscript(f *testing.F) {
	dir := f.TempDir()
	seedPath, _ := writeToolSession(f, dir, 2, 300)
	seed, err := os.ReadFile(seedPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"type":"session","version":3,"id":"x"}` + "\n" + `{"type":"message","id":"a","parentId":null,"message":{"role":"toolResult","toolCallId":"c","toolName":"t","content":"` + string(make([]byte, 0)) + `"}}`))
	f.Add([]byte("not json\n{\"type\":\"message\"}\n"))
	f.Add(append([]byte(nil), seed[:len(seed)/2]...))
	e := openTest(f, func(c *config.Config) { c.FreshTailMessages = 1; c.MaintainMinTokens = 10 })
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		ctx := context.Background()
		session := fmt.Sprintf("fz%d", n)
		path := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: session, SessionFile: path}); err != nil {
			return // refused input: nothing to maintain
		}
		var before [][]byte
		if c, err := e.Conversation(ctx, "", session); err == nil {
			_ = c
			before = storedMessages(t, e, "", session)
		}
		ids := map[string]bool{}
		if tr, err := core.ReadTranscript(path); err == nil {
			for _, ent := range tr.Entries {
				ids[ent.ID] = true
			}
		}
		rc := &core.RuntimeContext{RewriteTranscriptEntries: func(_ context.Context, req core.RewriteRequest) (core.RewriteResult, error) {
			for _, r := range req.Replacements {
				if !ids[r.EntryID] || r.EntryID == "" {
					t.Fatalf("replacement of unknown entry %q", r.EntryID)
				}
				if r.Message.Role() != core.RoleToolResult {
					t.Fatalf("replacement with role %q", r.Message.Role())
				}
			}
			return core.RewriteResult{Changed: len(req.Replacements) > 0, RewrittenEntries: len(req.Replacements)}, nil
		}}
		if _, err := e.Maintain(ctx, core.MaintainParams{SessionID: session, SessionFile: path, RuntimeContext: rc}); err != nil {
			t.Fatalf("maintain: %v", err)
		}
		if before != nil {
			if after := storedMessages(t, e, "", session); !equalRaws(after, before) {
				t.Fatal("maintain changed the stored messages")
			}
		}
	})
}
