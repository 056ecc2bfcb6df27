package recall

import (
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// TestMessageTextKey: the window's keys are the keys the index stores.
func TestMessageTextKey(t *testing.T) {
	msgs := []core.Message{
		core.UserText("Hello, World!", 1),
		core.MustParseMessage(`{"role":"user","content":"plain string content, ÄÖÜ","timestamp":1}`),
		core.AssistantToolCall("c1", "read_file", map[string]any{"path": "src/main.go", "lines": []int{1, 20}}, 2),
		core.ToolResult("c1", "read_file", "package main\n\nfunc main() {}", false, 3),
		core.MustParseMessage(`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"one"},{"type":"text","text":"two"},{"type":"toolCall","id":"x","name":"bash","arguments":{"cmd":"ls -la"}}],"timestamp":4}`),
		core.MustParseMessage(`{"role":"bashExecution","command":"go test ./...","output":"ok  pkg 0.1s","exitCode":0,"timestamp":5}`),
		core.MustParseMessage(`{"role":"compactionSummary","summary":"Earlier: we fixed the router.","tokensBefore":100,"timestamp":6}`),
		core.UserText(strings.Repeat("a long pasted log line 1234 ", 4000), 7),
		core.UserText("?!", 8),
	}
	for _, raw := range synth.Messages(3, 400) {
		m, err := core.ParseMessage(raw)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	for i, m := range msgs {
		if got, want := MessageTextKey(m), index.TextKey(recalled.IndexedText(m)); got != want {
			t.Fatalf("message %d (%s): key %x, want %x", i, m.Role(), got, want)
		}
	}
}

// TestWindowTextKeysCache: the keys of a window are the same from the
// cache, follow a changed window, and the cache holds a bounded number of
// conversations.
func TestWindowTextKeysCache(t *testing.T) {
	r := &WindowKeys{}
	w := []core.Message{core.UserText("alpha beta", 1), core.AssistantText("Gamma!", 2)}
	want := map[uint64]bool{MessageTextKey(w[0]): true, MessageTextKey(w[1]): true}
	var c store.ConvID
	for i := 0; i < 2; i++ {
		if got := r.TextKeys(c, true, w); len(got) != 2 || !got[MessageTextKey(w[0])] || !got[MessageTextKey(w[1])] {
			t.Fatalf("pass %d: %v, want %v", i, got, want)
		}
	}
	w2 := []core.Message{w[1], core.UserText("delta", 3)}
	if got := r.TextKeys(c, true, w2); len(got) != 2 || got[MessageTextKey(w[0])] || !got[MessageTextKey(w2[1])] {
		t.Fatalf("changed window: %v", got)
	}
	for i := 0; i < windowKeyConvs+40; i++ {
		var ci store.ConvID
		ci[0], ci[1] = byte(i), byte(i>>8)
		r.TextKeys(ci, true, w)
	}
	n := 0
	r.convs.Range(func(any, any) bool { n++; return true })
	if n > windowKeyConvs || int(r.count.Load()) != n {
		t.Fatalf("%d conversations cached (count %d), bound %d", n, r.count.Load(), windowKeyConvs)
	}
}
