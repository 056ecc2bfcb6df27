package lossless

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
)

func TestProjectionPerTurn(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	for _, ingest := range []bool{false, true} {
		if ingest {
			if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: core.UserText("hi", 1)}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "s", Messages: []core.Message{core.UserText("hi", 1)}})
		if err != nil {
			t.Fatal(err)
		}
		if p := res.ContextProjection; p == nil || p.Mode != core.ProjectionPerTurn || p.Epoch != "" || p.Fingerprint != "" {
			t.Fatalf("projection %+v", p)
		}
	}
	tb := openTest(t, func(c *config.Config) { c.ContextProjection = core.ProjectionThreadBootstrap })
	res, err := tb.Assemble(ctx, core.AssembleParams{SessionID: "s", Messages: []core.Message{core.UserText("hi", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.ContextProjection; p == nil || p.Mode != core.ProjectionThreadBootstrap || p.Epoch != "0" || p.Fingerprint != Fingerprint(res.Messages, res.SystemPromptAddition) {
		t.Fatalf("configured thread bootstrap, unknown session: %+v", p)
	}
}

// TestProjectionEpoch: for a thread-bootstrap host the epoch is stable
// across ingests and changes after a compaction and after a rotation; the
// fingerprint is the hash of the assembled payload.
func TestProjectionEpoch(t *testing.T) {
	ctx := context.Background()
	path, _ := writeToolSession(t, t.TempDir(), 8, 600)
	e := openTest(t, func(c *config.Config) { c.FreshTailMessages = 4 })
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: "sess", SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{RuntimeContextThreadBootstrap: json.RawMessage("true")}}
	session := "sess"
	assemble := func() *core.ContextProjection {
		t.Helper()
		res, err := e.Assemble(ctx, core.AssembleParams{SessionID: session, TokenBudget: 100000, RuntimeContext: rc,
			AvailableTools: []string{ToolExpand}})
		if err != nil {
			t.Fatal(err)
		}
		p := res.ContextProjection
		if p == nil || p.Mode != core.ProjectionThreadBootstrap || p.Epoch == "" {
			t.Fatalf("projection %+v", p)
		}
		if p.Fingerprint != Fingerprint(res.Messages, res.SystemPromptAddition) {
			t.Fatalf("fingerprint %s is not the payload's", p.Fingerprint)
		}
		return p
	}
	next := 0
	ingest := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			next++
			m := core.UserText(fmt.Sprintf("more %d", next), int64(2_000_000_000_000+next))
			if _, err := e.Ingest(ctx, core.IngestParams{SessionID: session, Message: m}); err != nil {
				t.Fatal(err)
			}
		}
	}
	p0 := assemble()
	if again := assemble(); *again != *p0 {
		t.Fatalf("same payload, other projection: %+v vs %+v", again, p0)
	}
	seen := map[string]bool{p0.Fingerprint: true}
	for i := 0; i < 3; i++ {
		ingest(1)
		p := assemble()
		if p.Epoch != p0.Epoch {
			t.Fatalf("epoch changed on ingest %d: %s -> %s", i, p0.Epoch, p.Epoch)
		}
		if seen[p.Fingerprint] {
			t.Fatalf("fingerprint did not change with the payload")
		}
		seen[p.Fingerprint] = true
	}
	res, err := e.Compact(ctx, core.CompactParams{SessionID: session, TokenBudget: 400, Force: true})
	if err != nil || !res.Compacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	p1 := assemble()
	if p1.Epoch == p0.Epoch {
		t.Fatalf("epoch %s unchanged after compaction", p1.Epoch)
	}
	ingest(2)
	if p := assemble(); p.Epoch != p1.Epoch {
		t.Fatalf("epoch changed on ingest after compaction: %s -> %s", p1.Epoch, p.Epoch)
	}
	rot, err := e.Rotate(ctx, orchestrate.RotateParams{SessionID: session, SessionFile: path, TokenBudget: 100000})
	if err != nil {
		t.Fatal(err)
	}
	p2 := assemble()
	if p2.Epoch == p1.Epoch {
		t.Fatalf("epoch %s unchanged after rotation", p2.Epoch)
	}
	session = rot.SessionID // the host continues on the successor
	if p := assemble(); p.Epoch != p2.Epoch {
		t.Fatalf("the successor session has another epoch: %s vs %s", p.Epoch, p2.Epoch)
	}
	ingest(2)
	if p := assemble(); p.Epoch != p2.Epoch {
		t.Fatalf("epoch changed on ingest after rotation: %s -> %s", p2.Epoch, p.Epoch)
	}
	if got, err := e.Epoch(ctx, session, ""); err != nil || got != p2.Epoch {
		t.Fatalf("Epoch: %s %v, want %s", got, err, p2.Epoch)
	}
}
