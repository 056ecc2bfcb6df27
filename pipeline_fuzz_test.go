package contextengine

import (
	"bytes"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// checkPairing fails unless every tool call is followed by exactly its
// results, in call order, and no result stands anywhere else.
func checkPairing(t *testing.T, out []core.Message) {
	t.Helper()
	for i := 0; i < len(out); i++ {
		m := out[i]
		if m.Role() == core.RoleToolResult {
			t.Fatalf("result %d (%q) is not after its call", i, m.ToolCallID())
		}
		if m.Role() != core.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls() {
			if !ValidToolCallID(c.ID) {
				t.Fatalf("invalid id %q", c.ID)
			}
			i++
			if i >= len(out) || out[i].Role() != core.RoleToolResult || out[i].ToolCallID() != c.ID {
				t.Fatalf("call %q not answered right after its message", c.ID)
			}
			if _, ok := out[i].Field("details"); ok {
				t.Fatal("details kept")
			}
		}
	}
}

func FuzzPipeline(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":"hi"}
{"role":"assistant","content":[{"type":"toolCall","id":"a.1","name":"ls","arguments":{}}]}
{"role":"toolResult","toolCallId":"zz","toolName":"ls","content":[],"details":{}}
{"role":"user","content":"again"}
{"role":"toolResult","toolCallId":"a.1","toolName":"ls","content":[]}`), 1)
	f.Add([]byte(`{"role":"assistant","content":[{"type":"toolCall","id":"x","name":"a"},{"type":"toolCall","id":"x","name":"b"}]}
{"role":"toolResult","toolCallId":"x"}
{"role":"user","content":[{"type":"text","text":"u"}]}
{"role":"user","content":"v"}`), 2)
	f.Add([]byte(`{"role":"assistant","content":[{"type":"toolCall","id":"","name":"a"},{"type":"toolCall","id":"_","name":"b"}]}
{"role":"toolResult","toolCallId":""}`), 0)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		var in []core.Message
		for _, l := range bytes.Split(data, []byte("\n")) {
			if m, err := core.ParseMessage(l); err == nil {
				in = append(in, m)
			}
		}
		out, _ := Sanitize(in)
		checkPairing(t, out)
		again, rep := Sanitize(out)
		if rep.Changed() || len(again) != len(out) {
			t.Fatalf("Sanitize is not idempotent: %+v", rep)
		}
		for i := range out {
			if !bytes.Equal(again[i].Raw(), out[i].Raw()) {
				t.Fatalf("second pass changed message %d", i)
			}
		}
		merged := Validate(out, ValidateOptions{MergeConsecutiveUser: true})
		for i := 1; i < len(merged); i++ {
			if merged[i].Role() == core.RoleUser && merged[i-1].Role() == core.RoleUser {
				t.Fatal("consecutive user messages after Validate")
			}
		}
		checkPairing(t, merged)
		limited := Limit(merged, limit%20)
		checkPairing(t, limited)
		if len(limited) > len(merged) {
			t.Fatal("Limit grew the history")
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{plugins: {slots: {contextEngine: "x",}, entries: {x: {config: {a: 1}}}}}`))
	f.Add([]byte(`// c
{"plugins": {"enabled": false, "deny": ["x"]}}`))
	f.Add([]byte(`{plugins: {entries: {x: {enabled: "yes"}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		res := c.Resolve()
		if res.EngineID == "" || res.Reason == "" || res.Detail == "" {
			t.Fatalf("incomplete resolution %+v", res)
		}
		if res.EngineID != LegacyID && res.EngineID != res.Slot {
			t.Fatalf("engine %q not from the slot %q", res.EngineID, res.Slot)
		}
	})
}
