package tokens_test

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/tokens"
)

// reference is tiktoken-go's own o200k_base count, which tokens.O200k
// must match.
func reference(tb testing.TB) func(string) int {
	tb.Helper()
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(tokens.Encoding)
	if err != nil {
		tb.Fatal(err)
	}
	return func(s string) int { return len(enc.EncodeOrdinary(s)) }
}

func fast(tb testing.TB) *tokens.O200k {
	tb.Helper()
	f, err := tokens.NewO200k()
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// tricky are strings that exercise each alternative of the o200k pattern
// and its edges (contractions, case runs, Unicode marks and spaces, CJK).
var tricky = []string{"", "a", "Hello, world!", "don't STOP'LL we've", "  \n\n  x", "x  ", "   ", "\t\t\n",
	"1234567", "a1b22c333", "日本語のテキスト", "naïve café", "Ünïcödé ÀB", "//path/to/file.go\r\n",
	"  !!!\n/", " ?", "e\u0301\u0301", "ǅungla", "\u00a0\u2003x", "foo\u0085bar", "😀👍🏽 emoji",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", strings.Repeat(" ", 100) + "x", strings.Repeat("=", 300),
	"CamelCaseWordsHTTPServer", "ALLCAPS's", "x'S", "'re", "a're'", "ʰʰa"}

// piMonoMessages returns every step-th message of the real pi-mono
// transcripts.
func piMonoMessages(t *testing.T, step int) []core.Message {
	t.Helper()
	var msgs []core.Message
	for _, path := range testutil.PiMono(t) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		tr := core.NewTranscriptReader(f, 0, 0, 0)
		for i := 0; ; {
			e, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				t.Fatalf("%s: %v", path, err)
			}
			if e.Type != core.EntryMessage {
				continue
			}
			if i++; (i-1)%step != 0 {
				continue
			}
			msgs = append(msgs, e.Message)
		}
		f.Close()
	}
	return msgs
}

// piMonoTexts returns the texts of every step-th message of the pi-mono
// transcripts: each block's text, thinking, tool name and arguments.
func piMonoTexts(t *testing.T, step int) []string {
	t.Helper()
	var texts []string
	for _, m := range piMonoMessages(t, step) {
		for _, b := range m.Blocks() {
			texts = append(texts, b.Text, b.Thinking, b.Name, string(b.Arguments))
		}
	}
	return texts
}

// tokensStep is the share of the pi-mono messages the comparisons count:
// every 24th by default, as tiktoken-go is slow under -race; all with
// LOSSLESS_TOKENS_FULL=1.
func tokensStep() int {
	if os.Getenv("LOSSLESS_TOKENS_FULL") == "1" {
		return 1
	}
	return 24
}

// locomoTexts returns every string of the LoCoMo file: the turns of each
// conversation, the questions and answers, the summaries and observations.
func locomoTexts(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(testutil.SharedFile(t, "data/locomo/locomo-dev3.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("locomo-dev3.json: %v", err)
	}
	var texts []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			texts = append(texts, v)
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return texts
}

// TestCountsMatchTiktoken: the counter gives tiktoken-go's own count on
// the tricky strings, on every text of the real pi-mono transcripts (every
// 24th message by default, as tiktoken-go is slow under -race; all with
// LOSSLESS_TOKENS_FULL=1) and on every string of the LoCoMo conversations:
// moving legacy and the benchmarks to this counter moves no token count.
func TestCountsMatchTiktoken(t *testing.T) {
	ref, f := reference(t), fast(t)
	step := tokensStep()
	sets := []struct {
		name  string
		texts func(t *testing.T) []string // t: the subtest's, which may skip
	}{
		{"tricky", func(*testing.T) []string { return tricky }},
		{"pi-mono", func(t *testing.T) []string { return piMonoTexts(t, step) }},
		{"locomo", locomoTexts},
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			texts := set.texts(t)
			bad, total := 0, 0
			for _, s := range texts {
				a, b := ref(s), f.CountText(s)
				total += a
				if a != b {
					bad++
					if bad < 5 {
						t.Errorf("count(%.80q) = %d, tiktoken-go %d", s, b, a)
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d texts differ", bad, len(texts))
			}
			t.Logf("%d texts, %d tokens, all equal to tiktoken-go's", len(texts), total)
		})
	}
}

// TestCoreCountsWithO200k: core's o200k_base counter (what legacy,
// compaction, the summarizers and the benchmarks get from
// core.DefaultCounter and core.NewCounter) is this package's counter, and
// whole messages (every role: tool calls, bash executions, summaries)
// count as with tiktoken-go (core.NewTiktoken), one by one and in sum.
func TestCoreCountsWithO200k(t *testing.T) {
	named, err := core.NewCounter(core.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []core.TokenCounter{core.DefaultCounter(), named} {
		if _, ok := tc.(*tokens.O200k); !ok {
			t.Fatalf("core's o200k_base counter is a %T, not *tokens.O200k", tc)
		}
	}
	ref, err := core.NewTiktoken(core.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	msgs := append(piMonoMessages(t, tokensStep()), core.AssistantText("The quick brown fox can't jump over 12345 lazy dogs. 日本語", 0))
	bad := 0
	for i, m := range msgs {
		if a, b := core.CountMessage(ref, m), core.CountMessage(named, m); a != b {
			if bad++; bad < 5 {
				t.Errorf("message %d (%s): %d tokens, tiktoken-go %d", i, m.Role(), b, a)
			}
		}
	}
	a, b := core.CountMessages(ref, msgs), core.CountMessages(named, msgs)
	if bad > 0 || a != b {
		t.Fatalf("%d of %d messages differ; in sum %d tokens, tiktoken-go %d", bad, len(msgs), b, a)
	}
	t.Logf("%d messages, %d tokens, as tiktoken-go", len(msgs), a)
}

// FuzzCount: the counter agrees with tiktoken-go on any valid UTF-8 text.
func FuzzCount(f *testing.F) {
	for _, s := range []string{"hello world", "don't", "  \n x", "日本", "a1234", "{\"k\": [1, 2]}", "\r\n\r\n  /", "ǅ'S"} {
		f.Add(s)
	}
	ref, c := reference(f), fast(f)
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, '\uFFFD') || !utf8Valid(s) {
			return
		}
		if a, b := ref(s), c.CountText(s); a != b {
			t.Fatalf("count(%q) = %d, tiktoken-go %d", s, b, a)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }
