package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/lossless-engine/contextengine/core"
)

func TestDeterministicPerSeed(t *testing.T) {
	a := Messages(7, 2000)
	b := Messages(7, 2000)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("message %d differs between two runs of seed 7", i)
		}
	}
	c := Messages(8, 2000)
	same := 0
	for i := range a {
		if bytes.Equal(a[i], c[i]) {
			same++
		}
	}
	if same > 20 {
		t.Fatalf("seeds 7 and 8 share %d of 2000 messages; want different streams", same)
	}
	// Streaming and batch agree.
	g := New(7)
	for i := 0; i < 100; i++ {
		if m := g.Next(); !bytes.Equal(m, a[i]) {
			t.Fatalf("Next() #%d != Messages()[%d]", i, i)
		}
	}
}

func TestMessagesAreValidAndRealistic(t *testing.T) {
	const n = 4000
	msgs := Messages(1, n)
	roles := map[string]int{}
	var toolCalls, thinking, cjk, big, strContent, unknownField int
	callIDs := map[string]bool{}
	var total int
	for i, raw := range msgs {
		m, err := core.ParseMessage(raw)
		if err != nil {
			t.Fatalf("message %d: %v\n%s", i, err, raw)
		}
		if !json.Valid(raw) || bytes.ContainsAny(raw, "\n") {
			t.Fatalf("message %d is not one line of valid JSON", i)
		}
		roles[m.Role()]++
		total += len(raw)
		if len(raw) > 20000 {
			big++
		}
		if m.ContentIsString() {
			strContent++
		}
		for _, b := range m.Blocks() {
			switch b.Type {
			case core.BlockToolCall:
				toolCalls++
				callIDs[b.ID] = true
			case core.BlockThinking:
				thinking++
			}
		}
		if m.Role() == core.RoleToolResult && !callIDs[m.ToolCallID()] {
			t.Fatalf("message %d: toolResult for unknown call %q", i, m.ToolCallID())
		}
		if bytes.Contains(raw, []byte(`"responseId":"resp_`)) {
			unknownField++
		}
		for _, r := range m.Text() {
			if unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Hangul, r) {
				cjk++
				break
			}
		}
	}
	for _, role := range []string{core.RoleUser, core.RoleAssistant, core.RoleToolResult, core.RoleBashExecution} {
		if roles[role] == 0 {
			t.Errorf("no %s messages in %d", role, n)
		}
	}
	if roles[core.RoleAssistant] < roles[core.RoleUser] || roles[core.RoleToolResult] < roles[core.RoleUser] {
		t.Errorf("role mix %v: want more assistant and tool results than user turns", roles)
	}
	checks := map[string]int{"tool calls": toolCalls, "thinking blocks": thinking, "CJK messages": cjk,
		"tool outputs over 20 KB": big, "string contents": strContent, "unknown fields": unknownField}
	for what, k := range checks {
		if k == 0 {
			t.Errorf("no %s in %d messages", what, n)
		}
	}
	if avg := total / n; avg < 400 || avg > 5000 {
		t.Errorf("average message size %d bytes; real sessions are ~1-3 KB", avg)
	}
	t.Logf("roles %v, avg %d B, big %d, cjk %d", roles, total/n, big, cjk)
}

func TestIdentifiersRecur(t *testing.T) {
	// Identifiers mentioned early come back later, as in real sessions.
	g := New(3)
	var early, late strings.Builder
	for i := 0; i < 4000; i++ {
		m := g.Next()
		if i < 2000 {
			early.Write(m)
		} else {
			late.Write(m)
		}
	}
	found := 0
	for _, id := range g.idents {
		if strings.Contains(early.String(), id) && strings.Contains(late.String(), id) {
			found++
		}
	}
	if found == 0 {
		t.Fatal("no identifier appears in both halves of the stream")
	}
}

func TestWriteSessionIsValidTranscript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	const n = 1500
	info, err := WriteSessionFile(path, 11, n)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Malformed) != 0 {
		t.Fatalf("%d malformed lines, first: %v", len(tr.Malformed), tr.Malformed[0])
	}
	if tr.Header == nil || tr.Header.Version != 4 || tr.Header.ID != info.ID {
		t.Fatalf("header %+v, want version 4 id %s", tr.Header, info.ID)
	}
	st, _ := os.Stat(path)
	if st.Size() != info.Bytes || tr.Size != info.Bytes {
		t.Fatalf("sizes: file %d, read %d, info %d", st.Size(), tr.Size, info.Bytes)
	}
	if len(tr.Entries) != info.Entries || info.Entries <= n {
		t.Fatalf("entries %d, info %d, want more than %d (some non-message entries)", len(tr.Entries), info.Entries, n)
	}
	// Every entry is on the active branch (parent links form one chain).
	if got := len(tr.ActiveBranch()); got != len(tr.Entries) {
		t.Fatalf("active branch has %d of %d entries", got, len(tr.Entries))
	}
	want := Messages(11, n)
	var got [][]byte
	for _, e := range tr.Entries {
		if e.Type == core.EntryMessage {
			got = append(got, e.Message.Raw())
		}
	}
	if len(got) != n {
		t.Fatalf("%d message entries, want %d", len(got), n)
	}
	var mb int64
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d in the file differs from Messages(11)[%d]", i, i)
		}
		mb += int64(len(want[i]))
	}
	if mb != info.MessageBytes {
		t.Fatalf("MessageBytes %d, want %d", info.MessageBytes, mb)
	}
	// The window without compactions is every message.
	if w := tr.Window().Messages(); len(w) != n {
		t.Fatalf("window has %d messages, want %d", len(w), n)
	}
	// Deterministic file bytes.
	var buf bytes.Buffer
	if _, err := WriteSession(&buf, 11, n); err != nil {
		t.Fatal(err)
	}
	disk, _ := os.ReadFile(path)
	if !bytes.Equal(disk, buf.Bytes()) {
		t.Fatal("two writes of seed 11 differ")
	}
}

func TestLoCoMoFixture(t *testing.T) {
	b := LoCoMo(1, LoCoMoOptions{})
	if len(b) > 50<<10 {
		t.Fatalf("fixture is %d bytes, want < 50 KB", len(b))
	}
	if !bytes.Equal(b, LoCoMo(1, LoCoMoOptions{})) {
		t.Fatal("fixture not deterministic")
	}
	var samples []struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []LoCoMoQA                 `json:"qa"`
	}
	if err := json.Unmarshal(b, &samples); err != nil {
		t.Fatal(err)
	}
	if len(samples) != 2 {
		t.Fatalf("%d samples, want 2", len(samples))
	}
	for _, s := range samples {
		turns := map[string]string{}
		for k, v := range s.Conversation {
			if strings.HasPrefix(k, "session_") && !strings.HasSuffix(k, "date_time") {
				var ts []LoCoMoTurn
				if err := json.Unmarshal(v, &ts); err != nil {
					t.Fatalf("%s %s: %v", s.SampleID, k, err)
				}
				for _, tu := range ts {
					turns[tu.DiaID] = tu.Text
				}
			}
		}
		if _, ok := s.Conversation["session_1_date_time"]; !ok {
			t.Fatalf("%s: no session_1_date_time", s.SampleID)
		}
		answerable := 0
		for _, q := range s.QA {
			if q.Category == 5 {
				continue
			}
			answerable++
			if len(q.Evidence) == 0 {
				t.Fatalf("%s: question %q has no evidence", s.SampleID, q.Question)
			}
			for _, ev := range q.Evidence {
				text, ok := turns[ev]
				if !ok {
					t.Fatalf("%s: evidence %s of %q is not a turn", s.SampleID, ev, q.Question)
				}
				if !strings.Contains(text, fmt.Sprint(q.Answer)) {
					t.Fatalf("%s: evidence %s %q lacks the answer %v", s.SampleID, ev, text, q.Answer)
				}
			}
		}
		if answerable < 4 {
			t.Fatalf("%s: %d answerable questions, want at least 4", s.SampleID, answerable)
		}
	}
}

func ExampleWriteSession() {
	var buf bytes.Buffer
	info, err := WriteSession(&buf, 1, 100)
	if err != nil {
		panic(err)
	}
	tr, _ := core.ParseTranscript(&buf)
	fmt.Println(info.Messages, len(tr.Malformed), tr.Header.Version)
	// Output: 100 0 4
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	g := New(1)
	var n int64
	for b.Loop() {
		n += int64(len(g.Next()))
	}
	b.SetBytes(n / int64(b.N))
}

// BenchmarkCountTokens measures the o200k tiktoken counter on generated
// messages of several sizes (the cost every ingest pays once).
func BenchmarkCountTokens(b *testing.B) {
	tc := core.DefaultCounter()
	msgs := Messages(1, 4000)
	for _, size := range []int{1 << 10, 16 << 10, 128 << 10} {
		var sb strings.Builder
		for _, raw := range msgs {
			if sb.Len() >= size {
				break
			}
			m, _ := core.ParseMessage(raw)
			sb.WriteString(m.Text())
		}
		text := sb.String()[:size]
		for !isBoundary(text) {
			text = text[:len(text)-1]
		}
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tc.CountText(text)
			}
		})
	}
	b.Run("message", func(b *testing.B) {
		parsed := make([]core.Message, 1000)
		var bytesTotal int
		for i := range parsed {
			parsed[i], _ = core.ParseMessage(msgs[i])
			bytesTotal += len(msgs[i])
		}
		b.ReportAllocs()
		b.SetBytes(int64(bytesTotal / len(parsed)))
		i := 0
		for b.Loop() {
			core.CountMessage(tc, parsed[i%len(parsed)])
			i++
		}
	})
}

func isBoundary(s string) bool {
	return len(s) == 0 || s[len(s)-1] < 0x80
}
