package summarize

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
)

const sampleConversation = `user: We need to migrate the session store in /srv/app/store/session.go to Badger. Never delete the old files in /var/lib/app/sessions until the import is verified.
assistant: I'll start by reading the current store. Let me look at the code first.
toolResult (read): package store
	func Open(dir string) (*Store, error) {
		return nil, nil
	}
assistant: The store opens files one by one. I decided to use a WriteBatch instead of one transaction per message, because it is 3x faster.
user: Sounds good. Also please keep the session id format 3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b unchanged.
assistant: Implemented the importer in store/import_badger.go and added tests. The tests pass.
bashExecution: go test ./store/...
ok  	example.com/app/store	0.412s
assistant: Running the migration against staging at db.internal:5432 failed with error: permission denied for table sessions.
assistant: Next step is to ask ops for the grant, then rerun the import with commit 9f8e7d6c.
user: ok, I'm waiting for ops. Meanwhile document the rollback procedure at https://wiki.example.com/runbooks/session-store.
`

func extractive(t testing.TB) *Extractive { return NewExtractive(counter(t)) }

// withNoise inserts a long tool output (code) into the sample, so that the
// summary must choose.
func withNoise(s string) string {
	var b strings.Builder
	b.WriteString("toolResult (read): // file listing follows\n")
	for i := 0; i < 80; i++ {
		fmt.Fprintf(&b, "\tvar value%d = compute(%d, \"padding text for line %d\");\n", i, i*7, i)
	}
	k := strings.Index(s, "user: Sounds good")
	return s[:k] + b.String() + s[k:]
}

func TestExtractiveSectionsAndContent(t *testing.T) {
	tc := counter(t)
	e := NewExtractive(tc)
	out, err := e.Summarize(context.Background(), core.SummarizeRequest{Text: withNoise(sampleConversation), TargetTokens: 300, Kind: core.SummaryCompaction})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	for _, h := range []string{"## Goal", "## Constraints and preferences", "## Progress", "### Done", "### In progress", "### Blocked", "## Key decisions", "## Next steps", "## Critical context"} {
		if !strings.Contains(out, h+"\n") {
			t.Errorf("missing heading %q", h)
		}
	}
	// sections in order
	last := -1
	for _, h := range sectionHeadings {
		i := strings.Index(out, h)
		if i < last {
			t.Errorf("heading %q out of order", h)
		}
		last = i
	}
	section := func(h string) string {
		i := strings.Index(out, h+"\n")
		rest := out[i+len(h)+1:]
		if j := strings.Index(rest, "\n#"); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	checks := []struct{ heading, want string }{
		{"## Goal", "migrate the session store"},
		{"## Constraints and preferences", "Never delete the old files"},
		{"## Key decisions", "WriteBatch"},
		{"### Done", "Implemented the importer"},
		{"### Blocked", "waiting for ops"},
		{"## Next steps", "ask ops for the grant"},
		{"## Critical context", "permission denied"},
	}
	for _, c := range checks {
		if s := section(c.heading); !strings.Contains(s, c.want) {
			t.Errorf("section %s lacks %q:\n%s", c.heading, c.want, s)
		}
	}
	if n := tc.CountText(out); n > 300 {
		t.Errorf("%d tokens > target 300", n)
	}
}

func TestExtractiveKeepsIdentifiers(t *testing.T) {
	e := extractive(t)
	out, err := e.Summarize(context.Background(), core.SummarizeRequest{Text: withNoise(sampleConversation), TargetTokens: 300, Kind: core.SummaryLeaf})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, id := range ident.Values(sampleConversation) {
		if id != "toolResult" && id != "bashExecution" { // rendered role markers
			ids = append(ids, id)
		}
	}
	if len(ids) < 6 {
		t.Fatalf("only %d identifiers found in the sample: %v", len(ids), ids)
	}
	for _, id := range ids {
		if !strings.Contains(out, id) {
			t.Errorf("identifier %q lost:\n%s", id, out)
		}
	}
}

func TestExtractiveDeterministic(t *testing.T) {
	e := extractive(t)
	texts := append([]string{sampleConversation}, randomTexts(rand.New(rand.NewSource(1)), 3)...)
	for _, txt := range texts {
		for _, kind := range []string{core.SummaryLeaf, core.SummaryCompaction} {
			req := core.SummarizeRequest{Text: txt, TargetTokens: 120, Kind: kind, Focus: "store"}
			a, err1 := e.Summarize(context.Background(), req)
			b, err2 := e.Summarize(context.Background(), req)
			if err1 != nil || err2 != nil || a != b {
				t.Fatalf("not deterministic: %v %v\n%s\n----\n%s", err1, err2, a, b)
			}
		}
	}
}

func TestExtractiveFocus(t *testing.T) {
	tc := counter(t)
	e := NewExtractive(tc)
	// a small target: without focus the rollback sentence does not make it.
	req := core.SummarizeRequest{Text: sampleConversation, TargetTokens: 90, Kind: core.SummaryLeaf}
	plain, err := e.Summarize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Focus = "the rollback runbook"
	focused, err := e.Summarize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(focused, "Focus: the rollback runbook\n") {
		t.Errorf("no Focus line:\n%s", focused)
	}
	if strings.Contains(plain, "rollback procedure") {
		t.Fatalf("test setup: the rollback sentence fits without focus:\n%s", plain)
	}
	if !strings.Contains(focused, "rollback procedure") {
		t.Errorf("focus did not prefer the matching sentence:\n%s", focused)
	}
	if n := tc.CountText(focused); n > 90 {
		t.Errorf("%d tokens > 90", n)
	}
}

func TestExtractivePreviousSummaryMerged(t *testing.T) {
	e := extractive(t)
	first, err := e.Summarize(context.Background(), core.SummarizeRequest{Text: sampleConversation, TargetTokens: 400, Kind: core.SummaryCompaction})
	if err != nil {
		t.Fatal(err)
	}
	next := "user: Now add metrics for the importer at /metrics.\nassistant: Added a Prometheus counter import_messages_total in store/metrics.go. Tests pass.\n"
	out, err := e.Summarize(context.Background(), core.SummarizeRequest{Text: next, PreviousSummary: first, TargetTokens: 500, Kind: core.SummaryCompaction})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	for _, want := range []string{"migrate the session store", "Never delete the old files", "import_messages_total", "add metrics"} {
		if !strings.Contains(out, want) {
			t.Errorf("merged summary lacks %q", want)
		}
	}
	// old items keep their section
	gi, ci := strings.Index(out, "## Goal"), strings.Index(out, "## Constraints")
	if k := strings.Index(out, "migrate the session store"); k < gi || k > ci {
		t.Errorf("previous goal moved out of ## Goal")
	}
	if strings.Count(out, "## Goal") != 1 {
		t.Errorf("headings duplicated")
	}
}

func TestExtractiveTooSmall(t *testing.T) {
	e := extractive(t)
	for _, txt := range []string{"", "a"} {
		_, err := e.Summarize(context.Background(), core.SummarizeRequest{Text: txt, TargetTokens: 10})
		if !errors.Is(err, core.ErrSummarizerFailed) {
			t.Errorf("%q: err = %v, want ErrSummarizerFailed", txt, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Summarize(ctx, core.SummarizeRequest{Text: sampleConversation}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

// randomTexts builds random conversation-like texts: words, identifiers,
// code, CJK, long lines, odd punctuation.
func randomTexts(r *rand.Rand, n int) []string {
	pieces := []string{"user:", "assistant:", "toolResult (bash):", "the", "error", "decided", "fixed", "next", "must",
		"/usr/local/bin/go", "3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b", "deadbeef12", "https://x.io/a?b=c", "snake_case_id",
		"camelCaseId", "127.0.0.1:8080", "会话存储迁移", "。", "é", "{", "}", ";", ".", "?", "!", "\n", "\n", "\t", "  ",
		"func main() {", "return nil", strings.Repeat("x", 50), "🙂", "Done.", "Blocked:", "## Goal", "- (none)", "Identifiers: a, b"}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		words := 1 + r.Intn(1500)
		for j := 0; j < words; j++ {
			b.WriteString(pieces[r.Intn(len(pieces))])
			if r.Intn(3) > 0 {
				b.WriteByte(' ')
			}
		}
		out[i] = b.String()
	}
	return out
}

// propertyIterations is the number of random cases; raise it with
// SUMMARIZE_PROPERTY_N for a longer run.
func propertyIterations() int {
	if n, err := strconv.Atoi(os.Getenv("SUMMARIZE_PROPERTY_N")); err == nil && n > 0 {
		return n
	}
	return 12
}

// checkProperties asserts the extractive contract on one request.
func checkProperties(t *testing.T, tc core.TokenCounter, e *Extractive, req core.SummarizeRequest) {
	t.Helper()
	in := tc.CountText(req.Text) + tc.CountText(req.PreviousSummary)
	out, err := e.Summarize(context.Background(), req)
	if in <= 1 {
		if !errors.Is(err, core.ErrSummarizerFailed) {
			t.Fatalf("input of %d tokens: err = %v", in, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("input %d tokens, target %d: %v", in, req.TargetTokens, err)
	}
	n := tc.CountText(out)
	if n >= in {
		t.Fatalf("output %d tokens not shorter than input %d", n, in)
	}
	if req.TargetTokens > 0 && n > req.TargetTokens {
		t.Fatalf("output %d tokens > target %d", n, req.TargetTokens)
	}
	if strings.TrimSpace(out) == "" {
		t.Fatalf("empty output")
	}
	again, _ := e.Summarize(context.Background(), req)
	if again != out {
		t.Fatalf("not deterministic")
	}
}

func TestExtractivePropertiesRandom(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	for _, name := range []string{core.EncodingO200k, core.CounterChars4} {
		tc, err := core.NewCounter(name)
		if err != nil {
			t.Fatal(err)
		}
		e := NewExtractive(tc)
		n := propertyIterations()
		if name == core.CounterChars4 {
			n *= 4 // cheap to count
		}
		texts := randomTexts(r, n)
		for i, txt := range texts {
			req := core.SummarizeRequest{
				Text:         txt,
				TargetTokens: []int{0, 1, 2, 5, 20, 100, 500, 5000}[r.Intn(8)],
				Aggressive:   r.Intn(3) == 0,
				Kind:         []string{core.SummaryLeaf, core.SummaryCondensed, core.SummaryCompaction}[r.Intn(3)],
			}
			if r.Intn(3) == 0 {
				req.PreviousSummary = texts[(i+1)%len(texts)][:r.Intn(len(texts[(i+1)%len(texts)])+1)]
				for len(req.PreviousSummary) > 0 && !isRuneStartByte(req.PreviousSummary[len(req.PreviousSummary)-1]) {
					req.PreviousSummary = req.PreviousSummary[:len(req.PreviousSummary)-1]
				}
			}
			if r.Intn(4) == 0 {
				req.Focus = "error store"
			}
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) { checkProperties(t, tc, e, req) })
		}
	}
}

func TestExtractivePropertiesPiMono(t *testing.T) {
	texts := piMonoTexts(t)
	tc := counter(t)
	e := NewExtractive(tc)
	r := rand.New(rand.NewSource(7))
	ids, kept := 0, 0
	for i := 0; i < propertyIterations()*2/3; i++ {
		txt := texts[i%len(texts)]
		size := 2000 + r.Intn(24000)
		start := r.Intn(len(txt) - size)
		for !isRuneStartByte(txt[start]) {
			start++
		}
		end := start + size
		for end < len(txt) && !isRuneStartByte(txt[end]) {
			end++
		}
		req := core.SummarizeRequest{Text: txt[start:end], TargetTokens: 200 + r.Intn(3000), Kind: []string{core.SummaryLeaf, core.SummaryCompaction}[i%2]}
		checkProperties(t, tc, e, req)
		out, _ := e.Summarize(context.Background(), req)
		for _, id := range ident.Values(req.Text) {
			ids++
			if strings.Contains(out, id) {
				kept++
			}
		}
	}
	t.Logf("identifier retention on pi-mono chunks: %d/%d (%.0f%%)", kept, ids, 100*float64(kept)/float64(ids))
}

func TestSummarizeCountedMatchesSummarize(t *testing.T) {
	tc := counter(t)
	e := NewExtractive(tc)
	req := core.SummarizeRequest{Text: withNoise(sampleConversation), TargetTokens: 150, Kind: core.SummaryCompaction}
	a, err := e.Summarize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.SummarizeCounted(context.Background(), req, tc.CountText(req.Text))
	if err != nil || a != b {
		t.Fatalf("counted differs: %v\n%s\n----\n%s", err, a, b)
	}
	// a caller-supplied count bounds the output too
	c, err := e.SummarizeCounted(context.Background(), req, 40)
	if err != nil || tc.CountText(c) >= 40 {
		t.Fatalf("count 40: %d tokens, %v", tc.CountText(c), err)
	}
}

// chatSample is a hand-made chat: greetings, thanks and small talk around
// a few facts (a name, a place, a date, a number, a preference).
const chatSample = `user: Hey Mel! Good to see you! How have you been?
assistant: Hey! I'm good, thanks so much for asking! Wow, it's been a while!
user: Yeah, so great to hear from you! Totally!
assistant: Haha, yes, so nice to chat again!
user: On 7 May 2023 I went to the LGBTQ support group in Boston with Jordan.
assistant: Awesome! That's so cool, I'm really happy for you!
user: Thanks! It was really great, you know.
assistant: My favourite painting is the lake sunrise I finished in 2022.
user: Wow, that's amazing! So cool!
assistant: Thanks a lot! Glad you think so!
user: Okay, talk to you soon! Bye!
assistant: Bye! Take care!
`

func TestExtractiveChatKeepsFactsOverSmallTalk(t *testing.T) {
	tc := counter(t)
	e := NewExtractive(tc)
	out, err := e.Summarize(context.Background(), core.SummarizeRequest{Text: chatSample, TargetTokens: 60, Kind: core.SummaryLeaf})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	for _, want := range []string{"LGBTQ support group in Boston", "lake sunrise"} {
		if !strings.Contains(out, want) {
			t.Errorf("fact %q lost:\n%s", want, out)
		}
	}
	for _, chatter := range []string{"Hey Mel", "Take care", "so nice to chat", "talk to you soon"} {
		if strings.Contains(out, chatter) {
			t.Errorf("small talk %q kept:\n%s", chatter, out)
		}
	}
	if !strings.HasPrefix(out, "Facts: ") {
		t.Errorf("a chat is not summarized as one list of facts:\n%s", out)
	}
	if i, j := strings.Index(out, "Boston"), strings.Index(out, "lake sunrise"); i > j {
		t.Errorf("facts out of chronological order:\n%s", out)
	}
	if n := tc.CountText(out); n > 60 {
		t.Errorf("%d tokens > 60", n)
	}
}

func TestExtractiveCarriesDateStamps(t *testing.T) {
	text := "[7 May 2023] user: Hi! How are you?\n[7 May 2023] user: I went to the LGBTQ support group with Jordan yesterday.\n" +
		"[7 May 2023] assistant: Nice, thanks for sharing!\n[25 May 2023] assistant: I ran a charity race for mental health in Portland last Saturday.\n" +
		"[25 May 2023] user: Great, good for you!\n"
	out, err := extractive(t).Summarize(context.Background(), core.SummarizeRequest{Text: text, TargetTokens: 50, Kind: core.SummaryLeaf})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	for _, want := range []string{"(7 May 2023) I went to the LGBTQ support group", "(25 May 2023) I ran a charity race"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// a condensed summary of it keeps the stamps
	again, err := extractive(t).Summarize(context.Background(), core.SummarizeRequest{Text: out + "\n\n" + out, TargetTokens: 40, Kind: core.SummaryCondensed})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(again, "(7 May 2023) ") && !strings.Contains(again, "(25 May 2023) ") {
		t.Errorf("condensed summary lost the date stamps:\n%s", again)
	}
}

func TestExtractiveCondensedKeepsRareFactOfLaterChild(t *testing.T) {
	generic := func(topic string) string {
		return fmt.Sprintf("Facts: We talked about %s and how important it is. · %s really matters to us and we talked about it a lot. · "+
			"It is important to keep talking about %s with each other. · We both agree %s is important and we will keep talking.", topic, topic, topic, topic)
	}
	children := []string{
		generic("family"),
		generic("family support"),
		"Facts: We talked about family again and how important it is. · Melanie adopted a greyhound named Oscar from the Springfield shelter on 14 June 2023.",
	}
	tc := counter(t)
	out, err := NewExtractive(tc).Summarize(context.Background(), core.SummarizeRequest{Text: strings.Join(children, "\n\n"), TargetTokens: 45, Kind: core.SummaryCondensed})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
	if !strings.Contains(out, "greyhound named Oscar") {
		t.Errorf("the third child's specific fact was lost:\n%s", out)
	}
	if strings.Count(out, "talked about family") > 1 {
		t.Errorf("near-identical items kept twice:\n%s", out)
	}
	if n := tc.CountText(out); n > 45 {
		t.Errorf("%d tokens > 45", n)
	}
}
