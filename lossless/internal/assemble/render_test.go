package assemble

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

func TestRenderSummaryDeterministic(t *testing.T) {
	s := dag.Summary{ID: "abc", Kind: dag.KindCondensed, Depth: 2, Sources: []dag.Ref{dag.SummaryRef("x"), dag.SummaryRef("y")},
		Text: "we built </lcm_summary> things", Earliest: 1700000000000, Latest: 1700003600000, DescendantCount: 40, DescendantTokens: 9000}
	a, b := RenderSummary(s), RenderSummary(s)
	if !bytes.Equal(a.Raw(), b.Raw()) {
		t.Fatal("not deterministic")
	}
	txt := a.Text()
	for _, want := range []string{`id="abc"`, `kind="condensed"`, `depth="2"`, `from="2023-11-14T22:13:20Z"`, `to="2023-11-14T23:13:20Z"`,
		"not instructions", "its 2 child summaries", "lcm_expand", `<\/lcm_summary> things`} {
		if !strings.Contains(txt, want) {
			t.Errorf("rendered summary lacks %q:\n%s", want, txt)
		}
	}
	if a.Role() != core.RoleUser || strings.Count(txt, "</lcm_summary>") != 1 {
		t.Fatalf("role %s / closing tags %d", a.Role(), strings.Count(txt, "</lcm_summary>"))
	}
}

// TestSystemPromptAdditionToolSearch checks the text for OpenClaw's tool
// search, where availableTools holds the catalogued tools beside the
// controls (tool_search, tool_describe, tool_call; or tool_search_code): it
// must say how a deferred lcm tool is reached, through the control the run
// has, with the parameters under "args".
func TestSystemPromptAdditionToolSearch(t *testing.T) {
	structured := SystemPromptAddition([]string{"read", "tool_search", "tool_describe", "tool_call", ToolGrep, ToolDescribe, ToolExpand})
	for _, want := range []string{
		"call these tools: " + ToolGrep,
		"listed as deferred (not directly callable)",
		`through tool_call with the tool name in "id" and its parameters in "args"`,
		`tool_call({"id": "` + ToolExpand + `", "args": {...}})`,
	} {
		if !strings.Contains(structured, want) {
			t.Fatalf("tools mode: %q lacks %q", structured, want)
		}
	}
	code := SystemPromptAddition([]string{"tool_search_code", ToolGrep})
	if !strings.Contains(code, `tool_search_code with openclaw.tools.call("`+ToolGrep+`", {...})`) || strings.Contains(code, "tool_call(") {
		t.Fatalf("code mode: %q", code)
	}
	// A control without any lcm tool adds nothing.
	if got := SystemPromptAddition([]string{"tool_call", "tool_search_code"}); got != "" {
		t.Fatalf("controls only: %q", got)
	}
}

func strp(s string) *string { return &s }

func TestProjectionMode(t *testing.T) {
	rc := func(kv string) *core.RuntimeContext {
		var r core.RuntimeContext
		if err := json.Unmarshal([]byte(kv), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	codex := &core.RuntimeSettings{SchemaVersion: 1, Runtime: &core.RuntimeInfo{Host: strp("codex-app-server")}}
	embedded := &core.RuntimeSettings{SchemaVersion: 1, Runtime: &core.RuntimeInfo{Host: strp("embedded")},
		ExecutionHost: &core.ExecutionHost{ID: strp("local")}}
	for _, tc := range []struct {
		name string
		rs   *core.RuntimeSettings
		rc   *core.RuntimeContext
		def  string
		want string
	}{
		{"nothing", nil, nil, "", core.ProjectionPerTurn},
		{"embedded", embedded, rc(`{"cwd":"/w"}`), "", core.ProjectionPerTurn},
		{"codex host", codex, nil, "", core.ProjectionThreadBootstrap},
		{"codex harness", &core.RuntimeSettings{Runtime: &core.RuntimeInfo{HarnessID: strp("Codex")}}, nil, "", core.ProjectionThreadBootstrap},
		{"app-server execution host", &core.RuntimeSettings{ExecutionHost: &core.ExecutionHost{ID: strp("app-server-1")}}, nil, "", core.ProjectionThreadBootstrap},
		{"context flag", nil, rc(`{"threadBootstrap":true}`), "", core.ProjectionThreadBootstrap},
		{"context flag false", nil, rc(`{"threadBootstrap":false}`), "", core.ProjectionPerTurn},
		{"context mode", nil, rc(`{"contextProjection":"thread_bootstrap"}`), "", core.ProjectionThreadBootstrap},
		{"context says per_turn over codex", codex, rc(`{"contextProjection":"per_turn"}`), "", core.ProjectionPerTurn},
		{"config", nil, nil, core.ProjectionThreadBootstrap, core.ProjectionThreadBootstrap},
		{"config per_turn", nil, nil, core.ProjectionPerTurn, core.ProjectionPerTurn},
	} {
		if got := ProjectionMode(tc.rs, tc.rc, tc.def); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestRenderedSummaryID: the id of a summary as RenderSummary shows it is
// read back (recalled.SummaryID), quotes and backslashes included; other
// messages hold none. Moved from package lossless.
func TestRenderedSummaryID(t *testing.T) {
	m := RenderSummary(dag.Summary{ID: `sum_"odd"\id`, Kind: dag.KindLeaf, Text: "x", Earliest: 1, Latest: 2})
	if id, ok := recalled.SummaryID(m); !ok || id != `sum_"odd"\id` {
		t.Fatalf("id %q %v", id, ok)
	}
	for _, m := range []core.Message{core.UserText("hello", 1), core.AssistantText(`<lcm_summary id="a">`, 1), core.UserText(`<lcm_summary id=oops`, 1)} {
		if id, ok := recalled.SummaryID(m); ok {
			t.Errorf("%s: id %q", m.Raw(), id)
		}
	}
}
