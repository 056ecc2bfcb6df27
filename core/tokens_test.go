package core

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

func TestTiktokenEncodingsDiffer(t *testing.T) {
	o, err := NewTiktoken(EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewTiktoken(EncodingCL100k)
	if err != nil {
		t.Fatal(err)
	}
	if o.Name() != EncodingO200k || c.Name() != EncodingCL100k {
		t.Fatal("names")
	}
	if o.CountText("hello world") != 2 || c.CountText("hello world") != 2 || o.CountText("") != 0 {
		t.Fatalf("hello world: %d %d", o.CountText("hello world"), c.CountText("hello world"))
	}
	// On real multilingual text the vocabularies disagree (o200k is denser).
	text := "上下文引擎决定模型在每次运行时看到什么。Die Zusammenfassung bleibt erhalten. func (g *Guarded) Assemble(ctx context.Context) error { return nil }"
	no, nc := o.CountText(text), c.CountText(text)
	if no == nc || no <= 0 || nc <= 0 || no > nc {
		t.Fatalf("o200k %d, cl100k %d", no, nc)
	}
	if _, err := NewTiktoken("p50k_base"); err == nil {
		t.Fatal("unknown encoding accepted")
	}
	if d, _ := NewTiktoken(""); d.Name() != EncodingO200k {
		t.Fatal("default encoding")
	}
	if n, _ := NewCounter(CounterChars4); n.Name() != CounterChars4 {
		t.Fatal("NewCounter chars4")
	}
}

func TestChars4(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"12345678", 2},
		{"你好", 2},      // 2 CJK × 4 = 8 → 2
		{"日本語テキスト", 7}, // Han + Katakana: one token each
		{"한국어", 3},     // Hangul
		{"ab你", 2},     // (2 + 4) / 4 → ceil 2
		{"éèê", 1},     // accented Latin weighs 1
		{strings.Repeat("x", 401), 101},
	}
	for _, tc := range tests {
		if got := (Chars4{}).CountText(tc.in); got != tc.want {
			t.Errorf("Chars4(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestCountMessage(t *testing.T) {
	tc := Chars4{}
	img := MustParseMessage(`{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image","data":"` + strings.Repeat("A", 4000) + `","mimeType":"image/png"}]}`)
	if got := CountMessage(tc, img); got != 1+ImageTokens {
		t.Fatalf("image message = %d", got)
	}
	call := MustParseMessage(`{"role":"assistant","content":[{"type":"toolCall","id":"some-long-id-not-counted","name":"bash","arguments":{"command":"ls"}}],"usage":{"input":999}}`)
	if got, want := CountMessage(tc, call), tc.CountText("bash")+tc.CountText(`{"command":"ls"}`); got != want {
		t.Fatalf("tool call = %d, want %d", got, want)
	}
	think := MustParseMessage(`{"role":"assistant","content":[{"type":"thinking","thinking":"12345678"},{"type":"text","text":"abcd"}]}`)
	if got := CountMessage(tc, think); got != 3 {
		t.Fatalf("thinking+text = %d", got)
	}
	bash := MustParseMessage(`{"role":"bashExecution","command":"abcd","output":"abcdefgh","exitCode":0}`)
	if got := CountMessage(tc, bash); got != 3 {
		t.Fatalf("bash = %d", got)
	}
	sum := MustParseMessage(`{"role":"compactionSummary","summary":"abcdabcd","tokensBefore":5}`)
	if got := CountMessage(tc, sum); got != 2 {
		t.Fatalf("summary = %d", got)
	}
	str := MustParseMessage(`{"role":"user","content":"abcdabcdabcd"}`)
	if got := CountMessage(tc, str); got != 3 {
		t.Fatalf("string content = %d", got)
	}
	if CountMessages(tc, []Message{str, sum}) != 5 || EstimateChars4([]Message{str, sum}) != 5 {
		t.Fatal("CountMessages")
	}
	o := DefaultCounter()
	if CountMessage(o, img) != 1+ImageTokens {
		t.Fatal("image with tiktoken")
	}
}

func TestTruncate(t *testing.T) {
	o := DefaultCounter()
	s := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 50) + "终点"
	for _, max := range []int{0, 1, 7, 50, 300, 10_000} {
		out := Truncate(o, s, max)
		if n := o.CountText(out); n > max {
			t.Fatalf("Truncate(%d) has %d tokens", max, n)
		}
		if !strings.HasPrefix(s, out) {
			t.Fatal("not a prefix")
		}
		if max >= 50 && max < o.CountText(s) && o.CountText(out) < max/2 {
			t.Fatalf("Truncate(%d) too short: %d", max, o.CountText(out))
		}
	}
	if Truncate(o, s, 10_000) != s {
		t.Fatal("fits but truncated")
	}
	cjk := strings.Repeat("上下文", 100)
	if out := Truncate(Chars4{}, cjk, 10); !strings.HasPrefix(cjk, out) || (Chars4{}).CountText(out) > 10 || !utf8String(out) {
		t.Fatalf("CJK truncate %q", out)
	}
}

func utf8String(s string) bool { return utf8Valid([]byte(s)) }

// TestTiktokenNoNetwork runs this test binary again with every proxy pointing
// at a dead address and an empty tiktoken cache, and checks that counting
// still works: the BPE files come from the offline loader, never the network.
func TestTiktokenNoNetwork(t *testing.T) {
	if os.Getenv("CORE_TIKTOKEN_CHILD") == "1" {
		for _, enc := range []string{EncodingO200k, EncodingCL100k} {
			c, err := NewTiktoken(enc)
			if err != nil {
				t.Fatalf("%s: %v", enc, err)
			}
			t.Logf("COUNT %s %d", enc, c.CountText("offline counting works"))
		}
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestTiktokenNoNetwork$", "-test.v", "-test.count=1")
	dead := "http://127.0.0.1:9"
	cmd.Env = append(os.Environ(), "CORE_TIKTOKEN_CHILD=1", "HTTP_PROXY="+dead, "HTTPS_PROXY="+dead,
		"http_proxy="+dead, "https_proxy="+dead, "ALL_PROXY="+dead, "NO_PROXY=", "no_proxy=",
		"TIKTOKEN_CACHE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	want := DefaultCounter().CountText("offline counting works")
	if !strings.Contains(string(out), "COUNT o200k_base "+strconv.Itoa(want)) || !strings.Contains(string(out), "COUNT cl100k_base ") {
		t.Fatalf("child output:\n%s", out)
	}
}

func TestCountRealTranscript(t *testing.T) {
	path := testutil.SharedFile(t, "data/pi-mono/large-session.jsonl")
	tr, err := readCached(path)
	if err != nil {
		t.Fatal(err)
	}
	msgs := tr.Window().Messages()
	c4 := CountMessages(Chars4{}, msgs)
	// LOSSLESS.md: ~139K tokens. Both estimates land in that neighbourhood.
	if c4 < 100_000 || c4 > 200_000 {
		t.Fatalf("chars4 estimate %d", c4)
	}
	// tiktoken on a sample (the whole file takes seconds under -race): the
	// two estimates agree within a factor of two.
	sample := msgs[:150]
	o, c := CountMessages(DefaultCounter(), sample), CountMessages(Chars4{}, sample)
	if o < c/2 || o > 2*c {
		t.Fatalf("o200k %d vs chars4 %d on %d messages", o, c, len(sample))
	}
}

func BenchmarkCountMessage(b *testing.B) {
	m := AssistantText(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100), 0)
	for _, tc := range []TokenCounter{Chars4{}, DefaultCounter()} {
		b.Run(tc.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				CountMessage(tc, m)
			}
		})
	}
}

func TestCheckCounterName(t *testing.T) {
	for _, name := range []string{CounterChars4, "", EncodingO200k, EncodingCL100k} {
		if err := CheckCounterName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
		if _, err := NewCounter(name); err != nil {
			t.Errorf("NewCounter(%q) fails where CheckCounterName accepts: %v", name, err)
		}
	}
	if err := CheckCounterName("p50k"); err == nil {
		t.Error("an unknown encoding was accepted")
	}
	if _, err := NewCounter("p50k"); err == nil {
		t.Error("NewCounter accepted an unknown encoding that CheckCounterName refuses")
	}
}
