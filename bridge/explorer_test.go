package bridge

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// TestExplorerMethod: explorer answers what Options.Explorer says, after
// initialize; without the option it is an unknown method, and an error of
// the option is the call's error.
func TestExplorerMethod(t *testing.T) {
	want := ExplorerInfo{URL: "http://127.0.0.1:4321/", Token: "t0k"}
	c := startServer(t, Static(newFake()), Options{Explorer: func(context.Context) (ExplorerInfo, error) { return want, nil }})
	if m := c.call(MethodExplorer, map[string]any{}); m.Error == nil {
		t.Fatalf("explorer before initialize answered %s", m.Result)
	}
	c.initialize()
	var got ExplorerInfo
	c.ok(MethodExplorer, map[string]any{}, &got)
	if got != want {
		t.Fatalf("explorer = %+v, want %+v", got, want)
	}

	none := startServer(t, Static(newFake()), Options{})
	none.initialize()
	m := none.call(MethodExplorer, map[string]any{})
	if m.Error == nil || m.Error.Code != CodeMethodNotFound {
		t.Fatalf("explorer without Options.Explorer: %+v %s, want method not found", m.Error, m.Result)
	}

	failing := startServer(t, Static(newFake()), Options{Explorer: func(context.Context) (ExplorerInfo, error) {
		return ExplorerInfo{}, errors.New("ui: the engine is not open yet")
	}})
	failing.initialize()
	if m := failing.call(MethodExplorer, map[string]any{}); m.Error == nil || m.Error.Message == "" {
		t.Fatalf("a failing explorer answered %s", m.Result)
	}
}

// TestOnAssemble: the hook sees each assemble the engine answered, with
// its params and result.
func TestOnAssemble(t *testing.T) {
	var got []core.AssembleParams
	var mu sync.Mutex
	c := startServer(t, Static(newFake()), Options{OnAssemble: func(p core.AssembleParams, res core.AssembleResult) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
	}})
	c.initialize()
	c.ok(MethodAssemble, map[string]any{"sessionId": "s", "messages": []any{}, "tokenBudget": 100, "prompt": "hi"}, nil)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].SessionID != "s" || got[0].Prompt != "hi" || got[0].TokenBudget != 100 {
		t.Fatalf("OnAssemble saw %+v", got)
	}
}
