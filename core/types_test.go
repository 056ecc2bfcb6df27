package core

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// OpenClaw-shaped JSON objects, one per params/result type, with every
// field the contract names. (Optional booleans such as isHeartbeat are
// encoded only when true: false and absent mean the same to OpenClaw.)
var roundTrips = []struct {
	name string
	new  func() any
	json string
}{
	{"Info", func() any { return new(Info) }, `{"id":"lossless","name":"Lossless","version":"0.1.0","ownsCompaction":true,
		"turnMaintenanceMode":"background","acceptedHostParams":["sessionKey","prompt","runtimeSettings","sessionTarget","runtimeContext","abortSignal"],
		"transcriptSemantics":{"currentTurnFence":"before-current-turn-entry-v1","turnAdvancementIdempotency":"atomic-idempotent-v1"},
		"hostRequirements":{"agent-run":{"requiredCapabilities":["bootstrap","assemble-before-prompt"],"unsupportedMessage":"Use the embedded runtime."},
		"manual-compact":{"requiredCapabilities":["compact"]}}}`},
	{"BootstrapParams", func() any { return new(BootstrapParams) }, `{"sessionId":"s1","sessionKey":"agent:main:s1",
		"sessionTarget":{"kind":"file","path":"/x"},"sessionFile":"/a/s1.jsonl",
		"runtimeSettings":{"schemaVersion":1,"runtime":{"host":"gateway","mode":"normal","harnessId":null,"runtimeId":"r1"},
		"model":{"requested":"opus","resolved":"claude-opus-4-5","provider":"anthropic","family":null},
		"contextEngineSelection":{"selectedId":"lossless","source":"configured"},"executionHost":{"id":"h","label":"Host"},
		"limits":{"promptTokenBudget":180000,"maxOutputTokens":null},"diagnostics":{"fallbackReason":null,"degradedReason":null}},
		"runtimeContext":{"cwd":"/w","tokenBudget":180000,"currentTokenCount":1200,"promptCache":{"retention":"5m","lastCacheTouchAt":1},"sessionTarget":"t"}}`},
	{"BootstrapResult", func() any { return new(BootstrapResult) }, `{"bootstrapped":true,"importedMessages":42,"reason":"imported"}`},
	{"MaintainParams", func() any { return new(MaintainParams) }, `{"sessionId":"s1","sessionKey":"k","sessionTarget":"t","sessionFile":"/f","reason":"turn",
		"runtimeSettings":{"schemaVersion":1},"runtimeContext":{"cwd":"/w"}}`},
	{"MaintainResult", func() any { return new(MaintainResult) }, `{"changed":false,"bytesFreed":0,"rewrittenEntries":0}`},
	{"MaintainResult changed", func() any { return new(MaintainResult) }, `{"changed":true,"bytesFreed":1024,"rewrittenEntries":3,"reason":"pruned"}`},
	{"IngestParams", func() any { return new(IngestParams) }, `{"sessionId":"s1","sessionKey":"k","message":{"role":"user","content":"hi <b>","timestamp":1,"x-unknown":[1]},"isHeartbeat":true}`},
	{"IngestResult", func() any { return new(IngestResult) }, `{"ingested":false}`},
	{"IngestBatchParams", func() any { return new(IngestBatchParams) }, `{"sessionId":"s1","sessionKey":"k","messages":[{"role":"user","content":"a"},
		{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"a":1}}],"stopReason":"toolUse"}]}`},
	{"IngestBatchResult", func() any { return new(IngestBatchResult) }, `{"ingestedCount":0}`},
	{"AfterTurnParams", func() any { return new(AfterTurnParams) }, `{"sessionId":"s1","sessionKey":"k","sessionTarget":"t","sessionFile":"/f",
		"messages":[{"role":"user","content":"a"}],"prePromptMessageCount":0,"autoCompactionSummary":"sum","isHeartbeat":true,"tokenBudget":1000,
		"runtimeSettings":{"schemaVersion":1},"runtimeContext":{}}`},
	{"AssembleParams", func() any { return new(AssembleParams) }, `{"sessionId":"s1","sessionKey":"k","messages":[{"role":"user","content":"a"}],
		"tokenBudget":128000,"availableTools":["lcm_grep","lcm_expand"],"citationsMode":"auto","model":"claude-opus-4-5","prompt":"what did we decide?",
		"runtimeSettings":{"schemaVersion":1},"runtimeContext":{"cwd":"/w"}}`},
	{"AssembleResult", func() any { return new(AssembleResult) }, `{"messages":[{"role":"user","content":"a"}],"estimatedTokens":12,
		"systemPromptAddition":"You have lcm tools.","promptAuthority":"preassembly_may_overflow",
		"contextProjection":{"mode":"thread_bootstrap","epoch":"3","fingerprint":"abc"}}`},
	{"CompactParams", func() any { return new(CompactParams) }, `{"sessionId":"s1","sessionKey":"k","agentId":"main","sessionTarget":"t","tokenBudget":1000,
		"force":true,"currentTokenCount":2000,"compactionTarget":"budget","customInstructions":"focus on tests",
		"runtimeSettings":{"schemaVersion":1},"runtimeContext":{"cwd":"/w"}}`},
	{"CompactResult", func() any { return new(CompactResult) }, `{"ok":true,"compacted":true,"reason":"done","result":{"summary":"S","firstKeptEntryId":"e4",
		"tokensBefore":2000,"tokensAfter":500,"details":{"readFiles":["a"]},"sessionId":"s2","sessionTarget":{"k":"v"},"sessionFile":"/s2.jsonl"}}`},
	{"CompactResult minimal", func() any { return new(CompactResult) }, `{"ok":false,"compacted":false}`},
	{"CommitTurnParams", func() any { return new(CommitTurnParams) }, `{"advancementKey":"adv-1",
		"admission":{"agentId":"main","sessionId":"s1","sessionKey":"k","storePath":"/p","generation":"9f3c0d2e7a4b4c1d9e8f7a6b5c4d3e2f","entryId":"e1","rawSeq":10,
		"effectiveParentId":null,"activeMessagePosition":4,"idempotencyKey":"i1","logicalTurnId":"t1","role":"user"},
		"terminal":{"agentId":"main","sessionId":"s1","sessionKey":"k","storePath":"/p","generation":"9f3c0d2e7a4b4c1d9e8f7a6b5c4d3e2f","entryId":"e3","rawSeq":12,
		"effectiveParentId":"e2","activeMessagePosition":6},
		"messages":[{"role":"user","content":"a"}],"sessionId":"s1","sessionKey":"k","sessionTarget":"t",
		"runtimeSettings":{"schemaVersion":1},"runtimeContext":{},"isHeartbeat":true}`},
	{"CommitTurnResult", func() any { return new(CommitTurnResult) }, `{"status":"duplicate"}`},
	{"SubagentSpawnParams", func() any { return new(SubagentSpawnParams) }, `{"parentSessionKey":"p","childSessionKey":"c","contextMode":"fork",
		"parentSessionId":"ps","parentSessionFile":"/p.jsonl","childSessionId":"cs","childSessionFile":"/c.jsonl","ttlMs":60000}`},
	{"SubagentEndedParams", func() any { return new(SubagentEndedParams) }, `{"childSessionKey":"c","reason":"swept"}`},
	{"FactoryOptions", func() any { return new(FactoryOptions) }, `{"config":{"a":[1,{"b":null}]},"agentDir":"/a","workspaceDir":"/w"}`},
	{"RewriteRequest", func() any { return new(RewriteRequest) }, `{"replacements":[{"entryId":"e1","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"isError":false}}]}`},
	{"RewriteResult", func() any { return new(RewriteResult) }, `{"changed":true,"bytesFreed":5,"rewrittenEntries":1}`},
	{"RewriteRequest guarded", func() any { return new(RewriteRequest) }, `{"replacements":[{"entryId":"e1","message":{"role":"user","content":"x"}}],"allowedRewriteSuffixEntryIds":["e1","e2"]}`},
	{"RewriteResult refused", func() any { return new(RewriteResult) }, `{"changed":false,"bytesFreed":0,"rewrittenEntries":0,"reason":"rewrite suffix guard failed"}`},
	{"LLMRequest", func() any { return new(LLMRequest) }, `{"system":"s","messages":[{"role":"user","content":"q"}],"maxTokens":100}`},
	{"LLMResponse", func() any { return new(LLMResponse) }, `{"text":"answer"}`},
}

func TestParamsResultsJSONRoundTrip(t *testing.T) {
	for _, tc := range roundTrips {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.new()
			dec := json.NewDecoder(bytes.NewReader([]byte(tc.json)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Fatalf("decode: %v", err)
			}
			enc, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			var want, got any
			if err := json.Unmarshal([]byte(tc.json), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(enc, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("round trip differs\nwant %s\n got %s", tc.json, enc)
			}
		})
	}
}

func TestRuntimeContextAccessors(t *testing.T) {
	var p AssembleParams
	if err := json.Unmarshal([]byte(`{"sessionId":"s","messages":[],"runtimeContext":{"tokenBudget":1234,"cwd":"/w","x":{"y":1}}}`), &p); err != nil {
		t.Fatal(err)
	}
	if n, ok := p.RuntimeContext.Int("tokenBudget"); !ok || n != 1234 {
		t.Fatal("Int")
	}
	if s, ok := p.RuntimeContext.String("cwd"); !ok || s != "/w" {
		t.Fatal("String")
	}
	if _, ok := p.RuntimeContext.Int("cwd"); ok {
		t.Fatal("Int of a string")
	}
	var nilRC *RuntimeContext
	if _, ok := nilRC.Int("x"); ok {
		t.Fatal("nil context")
	}
	if !(AssembleParams{AvailableTools: []string{"a", "b"}}).HasTool("b") {
		t.Fatal("HasTool")
	}
	ap := AfterTurnParams{Messages: []Message{UserText("a", 0), UserText("b", 0)}, PrePromptMessageCount: 1}
	if n := ap.NewMessages(); len(n) != 1 || n[0].Text() != "b" {
		t.Fatal("NewMessages")
	}
	ap.PrePromptMessageCount = 9
	if len(ap.NewMessages()) != 0 {
		t.Fatal("NewMessages past the end")
	}
	if (Info{ID: "x"}).Validate() == nil || (Info{Name: "x"}).Validate() == nil || (Info{ID: "x", Name: "y"}).Validate() != nil {
		t.Fatal("Info.Validate")
	}
}

// OpenClaw sends a generation token as a string; a number is accepted too
// and kept as its decimal text; anything else is refused.
func TestGenerationToken(t *testing.T) {
	for in, want := range map[string]GenerationToken{`"9f3c0d2e"`: "9f3c0d2e", `12`: "12", `null`: ""} {
		var g GenerationToken
		if err := json.Unmarshal([]byte(in), &g); err != nil || g != want {
			t.Fatalf("%s: got %q, %v; want %q", in, g, err, want)
		}
	}
	var g GenerationToken
	if err := json.Unmarshal([]byte(`{"x":1}`), &g); err == nil {
		t.Fatal("an object was accepted as a generation")
	}
}
