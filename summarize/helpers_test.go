package summarize

import (
	"strings"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

var (
	piOnce sync.Once
	piText []string
	piErr  error
)

// piMonoTexts renders the real pi-mono transcripts as plain "role: text"
// lines, the way an engine hands messages to a summarizer.
func piMonoTexts(t testing.TB) []string {
	t.Helper()
	paths := testutil.PiMono(t)
	piOnce.Do(func() {
		for _, p := range paths {
			tr, err := core.ReadTranscript(p)
			if err != nil {
				piErr = err
				return
			}
			var b strings.Builder
			for _, e := range tr.Entries {
				m, ok := e.ModelMessage()
				if !ok {
					continue
				}
				b.WriteString(renderMessage(m))
			}
			piText = append(piText, b.String())
		}
	})
	if piErr != nil {
		t.Fatal(piErr)
	}
	return piText
}

func renderMessage(m core.Message) string {
	var b strings.Builder
	role := m.Role()
	if m.ToolName() != "" {
		role += " (" + m.ToolName() + ")"
	}
	b.WriteString(role)
	b.WriteString(": ")
	b.WriteString(m.Text())
	for _, c := range m.ToolCalls() {
		b.WriteString("\n[tool call " + c.Name + "] " + string(c.Arguments))
	}
	b.WriteString("\n")
	return b.String()
}

// counter returns the real tokenizer.
func counter(t testing.TB) core.TokenCounter {
	t.Helper()
	tc, err := core.NewTiktoken(core.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}
