package ui_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/ui"
)

// TestLastAssemble: the context view with last=1 shows the session's last
// recorded assemble (a turn's first: the one with a prompt, found by key or
// id) and assembles again with its budget and prompt; an assemble without
// a prompt is not recorded; without a record the view says so (no last)
// and uses the request's own parameters.
func TestLastAssemble(t *testing.T) {
	base := newFixture(t)
	var last ui.LastAssembles
	srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return base.e, nil }, ui.Options{Logf: t.Logf, LastAssemble: last.Get})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	f := &fixture{e: base.e, srv: srv, ts: ts}

	type answer struct {
		EffectiveBudget int              `json:"effectiveBudget"`
		Last            *ui.LastAssemble `json:"last"`
		Recall          struct {
			Status string `json:"status"`
		} `json:"recall"`
	}
	var a answer
	f.getJSON(t, "/api/context", q("agent", "main", "session", "s1", "last", "1"), &a)
	if a.Last != nil {
		t.Fatalf("a last assemble before any was recorded: %+v", a.Last)
	}

	ctx := context.Background()
	p := core.AssembleParams{SessionID: "s1", SessionKey: "agent:main:k1", Messages: []core.Message{}, TokenBudget: 900, Prompt: "what about the zebra?"}
	res, err := f.e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	last.Record(p, res)
	// A later assemble of the turn (no prompt) leaves the record alone.
	last.Record(core.AssembleParams{SessionID: "s1", SessionKey: "agent:main:k1", TokenBudget: 300}, core.AssembleResult{})

	for _, params := range [][]string{{"agent", "main", "session", "s1", "last", "1"}, {"agent", "main", "session", "s1", "key", "agent:main:k1", "last", "1"}} {
		a = answer{}
		f.getJSON(t, "/api/context", q(params...), &a)
		if a.Last == nil || a.Last.Budget != 900 || a.Last.Prompt != p.Prompt || a.Last.Messages != len(res.Messages) || a.Last.EstimatedTokens != res.EstimatedTokens {
			t.Fatalf("%v: last = %+v, want budget 900, the prompt, %d messages", params, a.Last, len(res.Messages))
		}
		if fmt.Sprint(a.Last.Cut != nil) != fmt.Sprint(res.Cut != nil) {
			t.Errorf("last cut %+v, the call's %+v", a.Last.Cut, res.Cut)
		}
		if a.EffectiveBudget != 900 {
			t.Errorf("%v: assembled again with budget %d, want the last call's 900", params, a.EffectiveBudget)
		}
	}
	// The request's own budget wins over the record's.
	a = answer{}
	f.getJSON(t, "/api/context", q("agent", "main", "session", "s1", "last", "1", "budget", "5000"), &a)
	if a.EffectiveBudget != 5000 || a.Last == nil {
		t.Errorf("with budget=5000: effective %d, last %v", a.EffectiveBudget, a.Last)
	}
}
