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

// goodSummary is what a model that does its job answers for
// sampleConversation: the goal, what was done and what is next, with the
// conversation's identifiers (CheckSummary takes it).
const goodSummary = `Goal: migrate the session store in /srv/app/store/session.go to Badger; keep /var/lib/app/sessions until the import is verified.
Done: importer in store/import_badger.go (WriteBatch, 3x faster); tests pass. Session id format 3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b unchanged.
Blocked: migration on staging db.internal:5432 failed: permission denied for table sessions.
Next: ask ops for the grant, rerun the import with commit 9f8e7d6c; document the rollback at https://wiki.example.com/runbooks/session-store.`
