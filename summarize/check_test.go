package summarize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// manyPaths is a tool output listing n file paths, and a summary naming
// the first k of them.
func manyPaths(n, k int) (src, sum string) {
	var b, s strings.Builder
	b.WriteString("user: list the handlers and fix the failing one\ntoolResult (bash): ")
	s.WriteString("Goal: fix the failing handler. Done: listed the handlers; the failing one is in the first files. Files: ")
	for i := range n {
		fmt.Fprintf(&b, "/srv/app/handlers/h%03d.go ", i)
		if i < k {
			fmt.Fprintf(&s, "h%03d.go ", i)
		}
	}
	b.WriteString("\nassistant: the failing handler is among these; I will read them one by one and fix the nil check that breaks it.\n")
	b.WriteString(strings.Repeat("assistant: read another handler, nothing wrong with it, moving on to the next one in the list.\n", 40))
	return b.String(), s.String()
}

// TestCheckSummary: the check refuses what is no summary of its sources
// (empty, reasoning only, a canned reply, one not shorter than the
// sources, one that lost their identifiers) and takes a good summary, a
// short one of short sources, and one that keeps a fair share of many
// identifiers.
func TestCheckSummary(t *testing.T) {
	tc := counter(t)
	many, manyKept := manyPaths(120, identifierCap)
	_, manyShort := manyPaths(120, identifierCap-1)
	marked := "user: the build id is MARK-03-9d72, deploy it to staging and tell me when it is live.\n" +
		"assistant: deploying MARK-03-9d72 to staging now; the pipeline takes about ten minutes, I will report back.\n" +
		"assistant: MARK-03-9d72 is live on staging, smoke tests green, nothing else changed.\n"
	short := "user: what time is the standup tomorrow?\nassistant: at ten, as every day.\n"
	cases := []struct {
		name    string
		req     core.SummarizeRequest
		summary string
		want    string // a part of the refusal; "" when taken
	}{
		{"good summary", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200}, goodSummary, ""},
		{"good summary with reasoning", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200}, "<think>let me see</think>" + goodSummary, ""},
		{"canned reply", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200},
			"Noted. That should not change the schedule much.", "too short to summarize"},
		{"longer canned reply", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200},
			"I'm sorry, but I can't help with summarizing this conversation, as it may contain private information about your systems and your team.",
			"a reply to the conversation"},
		{"acknowledgement", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200},
			"Sure! Let me know if there is anything else you want me to do with the session store or the import, happy to help.",
			"a reply to the conversation"},
		{"empty", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200}, "  \n", "empty"},
		{"reasoning only", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200}, "<think>I will summarize</think>", "empty"},
		{"longer than its sources", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200},
			sampleConversation + "\n" + goodSummary, "not shorter than"},
		{"missing identifiers", core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200},
			"Goal: move the session store to a new database without losing the old files. The importer was written and its tests pass. " +
				"Running it on staging failed for lack of a grant; next, ask ops for it and write down how to roll back.",
			"keeps 0 of the transcript's"},
		{"marker lost", core.SummarizeRequest{Text: marked, TargetTokens: 100},
			"The user asked to deploy a build to staging; it was deployed, smoke tests are green and it is live now.", "MARK-03-9d72"},
		{"marker kept", core.SummarizeRequest{Text: marked, TargetTokens: 100},
			"The user asked to deploy build MARK-03-9d72 to staging; it was deployed, smoke tests are green and it is live now.", ""},
		{"many identifiers, a fair share kept", core.SummarizeRequest{Text: many, TargetTokens: 2400}, manyKept, ""},
		{"many identifiers, too few kept", core.SummarizeRequest{Text: many, TargetTokens: 2400}, manyShort,
			fmt.Sprintf("keeps %d of the transcript's 120 identifiers, at least %d needed", identifierCap-1, identifierCap)},
		{"a small target asks for fewer", core.SummarizeRequest{Text: many, TargetTokens: 4 * tokensPerIdentifier}, "Goal: fix the failing handler among the handlers listed; " +
			"h000.go h001.go h002.go h003.go were read, nothing wrong in them yet, the rest of the list comes next.", ""},
		{"short sources, short summary", core.SummarizeRequest{Text: short, TargetTokens: 50}, "Standup: ten tomorrow.", ""},
		{"identifiers of the previous summary count", core.SummarizeRequest{Text: short, TargetTokens: 50,
			PreviousSummary: "Deploy of MARK-03-9d72 to staging is live."}, "Standup is at ten tomorrow; the deploy is live.", "MARK-03-9d72"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckSummary(tc, c.req, c.summary)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrSummaryRefused) {
				t.Fatalf("err = %v, want a refusal saying %q", err, c.want)
			}
			if !strings.Contains(re.Reason, c.want) {
				t.Fatalf("reason %q, want it to say %q", re.Reason, c.want)
			}
		})
	}
}

// TestSourceIdentifiers: markers, long numbers and package ident's
// identifiers other than code names are what a summary must keep.
func TestSourceIdentifiers(t *testing.T) {
	text := "Build MARK-03-9d72 and HOSTSUM-TURN-01 (see JIRA-1234) touched /srv/app/main.go, commit 9f8e7d6c, " +
		"request 18446744, id 3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b at https://wiki.example.com/x. Not: UTF-8, well-known, " +
		"end-to-end, 2024, getUserName, v2, step-by-step."
	got := map[string]ident.Kind{}
	for _, id := range SourceIdentifiers(text) {
		got[id.Value] = id.Kind
	}
	want := map[string]ident.Kind{"MARK-03-9d72": KindMarker, "HOSTSUM-TURN-01": KindMarker, "JIRA-1234": KindMarker,
		"/srv/app/main.go": ident.Path, "9f8e7d6c": ident.Hash, "18446744": KindNumber,
		"3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b": ident.UUID, "https://wiki.example.com/x": ident.URL}
	for v, k := range want {
		if got[v] != k {
			t.Errorf("%s: kind %q, want %q", v, got[v], k)
		}
	}
	for v := range got {
		if _, ok := want[v]; !ok {
			t.Errorf("%s taken for an identifier (%s)", v, got[v])
		}
	}
}

// TestCheckSummaryRealSummaries: good summaries of real transcripts pass
// the check — pi-mono's own compaction summaries (written by its model
// over the session before them, the second one updating the first) and
// the extractive summaries of the leaf chunks the engine would make —
// while a canned reply over the same transcript is refused.
func TestCheckSummaryRealSummaries(t *testing.T) {
	tc := counter(t)
	tr, err := core.ReadTranscript(testutil.PiMono(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	prev, seen := "", 0
	for _, e := range tr.Entries {
		if e.Type == core.EntryCompaction {
			req := core.SummarizeRequest{Text: b.String(), PreviousSummary: prev, TargetTokens: 2400, Kind: core.SummaryCompaction}
			if err := CheckSummary(tc, req, e.Summary); err != nil {
				t.Errorf("pi-mono's compaction summary at line %d refused: %v", e.Line, err)
			}
			if err := CheckSummary(tc, req, "Noted. That should not change the schedule much."); !errors.Is(err, ErrSummaryRefused) {
				t.Errorf("a canned reply over the transcript before line %d taken: %v", e.Line, err)
			}
			prev, seen = e.Summary, seen+1
			b.Reset()
			continue
		}
		if m, ok := e.ModelMessage(); ok {
			b.WriteString(renderMessage(m))
		}
	}
	if seen != 2 {
		t.Fatalf("%d compaction entries, want pi-mono's 2", seen)
	}
	// Leaf chunks of 20,000 tokens (the engine's default), their extractive summaries.
	ext := NewExtractive(tc)
	for fi, text := range piMonoTexts(t) {
		var chunk strings.Builder
		n, chunks := 0, 0
		for _, line := range strings.SplitAfter(text, "\n") {
			chunk.WriteString(line)
			if n += tc.CountText(line); n < 20000 {
				continue
			}
			req := core.SummarizeRequest{Text: chunk.String(), TargetTokens: 2400, Kind: core.SummaryLeaf}
			out, err := ext.Summarize(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckSummary(tc, req, out); err != nil {
				t.Errorf("file %d, chunk %d: the extractive summary refused: %v", fi, chunks, err)
			}
			chunk.Reset()
			n, chunks = 0, chunks+1
			if chunks == 6 {
				break
			}
		}
	}
}
