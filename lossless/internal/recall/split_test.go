package recall

import (
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

func TestClassifyPrompt(t *testing.T) {
	toolFlow := []core.Message{core.AssistantToolCall("c1", "read", map[string]string{"path": "a.go"}, 1), core.ToolResult("c1", "read", "package a", false, 2)}
	for _, tc := range []struct {
		prompt string
		msgs   []core.Message
		want   promptIntent
	}{
		{"When did Caroline go to the LGBTQ support group?", nil, intentPast},
		{"What did Caroline research?", nil, intentPast},
		{"Where were the staging credentials kept?", nil, intentPast},
		{"What happened on 7 May 2023?", nil, intentPast},
		{"Which painting has she painted?", nil, intentPast},
		{"What are Joanna's hobbies?", nil, intentQuestion},
		{"how does the cache evict entries", nil, intentQuestion},
		{"fix the failing test in assemble.go", nil, intentTask},
		{"Run the tests again. Did they pass?", nil, intentTask},
		{"continue", nil, intentTask},
		{"ok, looks good", nil, intentTask},
		{"What did the tool print?", toolFlow, intentTask},
		{"What did the tool print?", toolFlow[:1], intentTask},
		{"What did we decide?" + strings.Repeat(" x", maxQuestionChars), nil, intentTask},
		{"", nil, intentTask},
	} {
		if got := classifyPrompt(tc.prompt, tc.msgs); got != tc.want {
			t.Errorf("classifyPrompt(%.60q, %d msgs) = %v, want %v", tc.prompt, len(tc.msgs), got, tc.want)
		}
	}
}
