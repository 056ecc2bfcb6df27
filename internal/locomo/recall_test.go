package locomo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// TestRecallLoCoMo measures recall@k on the LoCoMo dev file through the
// engine's recall (the ranking assemble's recall uses) and gates the
// variant real messages look like: each turn ingested without the
// "Speaker: " prefix. The ranking's knobs were tuned on this file, so the
// gate is set on the held-out conversation (conv-41, SetHeldOut) as well
// as on all three, from the figures measured on 2026-12-07 at 24489d2
// (docs/BENCHMARKS.md has the current ones, docs/TUNING.md the history):
//
//	without the prefix, held out: @5 64.9, @10 74.6, @25 79.5 (193 questions)
//	without the prefix, all:      @5 66.6, @10 76.0, @25 83.6 (495 questions)
//
// Each threshold is 2 to 3 points below its figure (minHeldOut,
// minAllNoSpeaker): room for near ties in the ranking to fall the other
// way, none for a change of the ranking that costs the held-out
// conversation a few questions' evidence (one question of 193 moves the
// held-out figure by up to 0.5 point). The issue's target (@5/10/25 ≥
// 62 / 72 / 84, #13) is met at @25 only in-sample: the held-out @25 is
// 79.5. The speaker-prefixed variant is reported, not gated.
func TestRecallLoCoMo(t *testing.T) {
	p := testutil.SharedFile(t, "data/locomo/locomo-dev3.json")
	ns, err := RunRecall(context.Background(), RecallConfig{Path: p, Dir: t.TempDir(), NoSpeaker: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without the speaker prefix: recall@k %v; sets %v; p50 %.2fms p99 %.2fms index %.0f docs/s",
		ns.RecallAt, ns.Sets, ns.QueryP50Ms, ns.QueryP99Ms, ns.IndexDocsPerSec)
	if ns.Questions != 495 || ns.Turns != 1451 || !ns.NoSpeaker {
		t.Errorf("questions %d turns %d no-speaker %v, want 495, 1451, true", ns.Questions, ns.Turns, ns.NoSpeaker)
	}
	held, tune := ns.Sets[SetHeldOut], ns.Sets[SetTuneOn]
	if held.Questions != 193 || !slices.Equal(held.Samples, []string{HeldOutSample}) ||
		tune.Questions != 302 || !slices.Equal(tune.Samples, TuneOnSamples()) {
		t.Fatalf("split: held out %+v, tune-on %+v; want conv-41's 193 questions and conv-26's and conv-30's 302", held, tune)
	}
	minHeldOut := map[string]float64{"5": 62, "10": 72, "25": 77}
	minAllNoSpeaker := map[string]float64{"5": 64, "10": 74, "25": 81}
	for k, min := range minHeldOut {
		if held.RecallAt[k] < min {
			t.Errorf("held out (%s), without the speaker prefix: recall@%s = %.1f, want ≥ %.0f", HeldOutSample, k, held.RecallAt[k], min)
		}
	}
	for k, min := range minAllNoSpeaker {
		if ns.RecallAt[k] < min {
			t.Errorf("all conversations, without the speaker prefix: recall@%s = %.1f, want ≥ %.0f", k, ns.RecallAt[k], min)
		}
	}
	// The sets' questions are the whole file's: their recall@k, weighted by
	// questions, is the whole file's (to rounding).
	for k, all := range ns.RecallAt {
		w := (held.RecallAt[k]*float64(held.Questions) + tune.RecallAt[k]*float64(tune.Questions)) / float64(ns.Questions)
		if math.Abs(w-all) > 0.1 {
			t.Errorf("recall@%s: the sets give %.2f together, the whole file %.1f", k, w, all)
		}
	}
	// The LoCoMo paper leaves category 5 out of its usual evaluation; report
	// it both ways, and check the per-category maps are consistent.
	n := 0
	for c, q := range ns.PerCategoryQuestions {
		n += q
		if _, ok := ns.PerCategory[c]; !ok {
			t.Errorf("category %s without recall", c)
		}
	}
	if n != ns.Questions {
		t.Errorf("per-category questions sum to %d, not %d", n, ns.Questions)
	}
	// The same with the speaker's name on each turn (the harness's
	// default; it helps a question naming a speaker): reported only.
	rep, err := RunRecall(context.Background(), RecallConfig{Path: p, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with the speaker prefix: recall@k %v; sets %v", rep.RecallAt, rep.Sets)
	if rep.Questions != ns.Questions || len(rep.RecallAt) != len(DefaultKs) || rep.NoSpeaker || len(rep.Sets) != 2 {
		t.Errorf("speaker run: %d questions, recall@k %v, sets %v", rep.Questions, rep.RecallAt, rep.Sets)
	}
}

// TestRecallSynthetic runs the whole suite on a generated fixture (no
// shared data needed): each question's evidence is one planted turn.
func TestRecallSynthetic(t *testing.T) {
	convs, err := Parse(bytes.NewReader(synth.LoCoMo(7, synth.LoCoMoOptions{Conversations: 3, Sessions: 5, Turns: 16})))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunRecall(context.Background(), RecallConfig{Data: convs, Dir: t.TempDir(), Ks: []int{1, 5, 10}})
	if err != nil {
		t.Fatal(err)
	}
	// The engine's recall and the index's Recall rank the same turns.
	ixRep, err := RunRecall(context.Background(), RecallConfig{Data: convs, Dir: t.TempDir(), Ks: []int{1, 5, 10}, IndexOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Path != "*locomo.EngineRetriever" || ixRep.Path != "*locomo.IndexRetriever" {
		t.Fatalf("paths %s %s", rep.Path, ixRep.Path)
	}
	for k, v := range rep.RecallAt {
		if ixRep.RecallAt[k] != v {
			t.Errorf("recall@%s: engine %.1f, index %.1f", k, v, ixRep.RecallAt[k])
		}
	}
	if rep.Questions == 0 || rep.RecallAt["10"] < 90 || rep.RecallAt["1"] > rep.RecallAt["5"] || rep.RecallAt["5"] > rep.RecallAt["10"] {
		t.Fatalf("synthetic recall: %+v", rep)
	}
	// The JSON keys the benchmark command writes under "recall".
	b, _ := json.Marshal(rep)
	for _, k := range []string{`"recall_at"`, `"per_category"`, `"questions"`, `"query_p50_ms"`, `"query_p99_ms"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
}

// fakeRetriever answers from a fixed function, to check the arithmetic.
type fakeRetriever struct {
	turns  map[string][]string // agent → dia ids ingested, in order
	texts  map[string]string   // "agent/dia id" → text ingested
	answer func(agent, prompt string, turns []string) []string
	ready  bool
}

func (f *fakeRetriever) IngestSession(_ context.Context, agent, _ string, turns []TurnDoc) error {
	if f.texts == nil {
		f.texts = map[string]string{}
	}
	for _, t := range turns {
		f.turns[agent] = append(f.turns[agent], t.DiaID)
		f.texts[agent+"/"+t.DiaID] = t.Text
	}
	return nil
}
func (f *fakeRetriever) Ready(context.Context) error { f.ready = true; return nil }
func (f *fakeRetriever) Recall(_ context.Context, agent, prompt string, _ int) ([]string, error) {
	if !f.ready {
		return nil, errors.New("not ready")
	}
	return f.answer(agent, prompt, f.turns[agent]), nil // may exceed k: RunRecall cuts
}
func (f *fakeRetriever) Close() error { return nil }

func TestRunRecallArithmetic(t *testing.T) {
	convs := []Conversation{{
		SampleID: "c", SpeakerA: "A", SpeakerB: "B",
		Sessions: []Session{{Num: 1, Turns: []Turn{{Speaker: "A", DiaID: "D1:1", Text: "x"}, {Speaker: "B", DiaID: "D1:2", Text: "y"}, {Speaker: "A", DiaID: "D1:3", Text: "z"}}}},
		QA: []QA{
			{Question: "q1", Evidence: []string{"D1:1"}, Category: 1},
			{Question: "q2", Evidence: []string{"D1:2", "D1:3"}, Category: 2},
			{Question: "q3", Evidence: nil, Category: 5}, // no evidence: not asked
		},
	}}
	// Ranks D1:2, D1:2 (duplicate, ignored), D1:1, D1:3.
	fake := &fakeRetriever{turns: map[string][]string{}, answer: func(_, _ string, _ []string) []string {
		return []string{"D1:2", "D1:2", "D1:1", "D1:3"}
	}}
	rep, err := RunRecall(context.Background(), RecallConfig{Data: convs, Ks: []int{1, 2, 3}, NewRetriever: func(string) (Retriever, error) { return fake, nil }})
	if err != nil {
		t.Fatal(err)
	}
	// q1: @1 0, @2 1, @3 1. q2: @1 .5, @2 .5, @3 1.
	want := map[string]float64{"1": 25, "2": 75, "3": 100}
	for k, v := range want {
		if rep.RecallAt[k] != v {
			t.Errorf("recall@%s = %v, want %v", k, rep.RecallAt[k], v)
		}
	}
	if rep.Questions != 2 || rep.PerCategory["1"]["2"] != 100 || rep.PerCategory["2"]["2"] != 50 || fake.turns["c"][2] != "D1:3" {
		t.Errorf("report %+v", rep)
	}
	if _, err := RunRecall(context.Background(), RecallConfig{Data: convs, Ks: []int{0}}); err == nil {
		t.Error("k=0 accepted")
	}
}

// TestRecallNoSpeaker: with NoSpeaker the retriever is fed each turn's own
// text (and caption), without the "Speaker: " prefix it gets by default.
func TestRecallNoSpeaker(t *testing.T) {
	convs, err := Parse(bytes.NewReader(synth.LoCoMo(3, synth.LoCoMoOptions{Conversations: 2, Sessions: 3, Turns: 6})))
	if err != nil {
		t.Fatal(err)
	}
	// A caption, to check it is kept without the prefix.
	convs[0].Sessions[0].Turns[1].BlipCaption = "a photo of a red kayak"
	for _, noSpeaker := range []bool{false, true} {
		fake := &fakeRetriever{turns: map[string][]string{}, answer: func(_, _ string, turns []string) []string { return turns }}
		rep, err := RunRecall(context.Background(), RecallConfig{Data: convs, Ks: []int{5}, NoSpeaker: noSpeaker,
			NewRetriever: func(string) (Retriever, error) { return fake, nil }})
		if err != nil {
			t.Fatal(err)
		}
		if rep.NoSpeaker != noSpeaker {
			t.Errorf("report NoSpeaker %v, want %v", rep.NoSpeaker, noSpeaker)
		}
		n := 0
		for ci := range convs {
			c := &convs[ci]
			for _, s := range c.Sessions {
				for _, turn := range s.Turns {
					n++
					got := fake.texts[agentOf(c, ci)+"/"+turn.DiaID]
					want := turn.Text
					if turn.BlipCaption != "" {
						want += " [shared an image: " + turn.BlipCaption + "]"
					}
					if !noSpeaker {
						want = turn.Speaker + ": " + want
					} else if strings.HasPrefix(got, turn.Speaker+":") {
						t.Errorf("no-speaker run fed %q with the speaker's prefix", got)
					}
					if got != want {
						t.Errorf("noSpeaker %v: %s fed %q, want %q", noSpeaker, turn.DiaID, got, want)
					}
				}
			}
		}
		if n == 0 || len(fake.texts) != n {
			t.Fatalf("fed %d texts for %d turns", len(fake.texts), n)
		}
	}
}

func TestRecallAtK(t *testing.T) {
	cases := []struct {
		ranked, ev []string
		k          int
		want       float64
	}{
		{[]string{"a", "b", "c"}, []string{"c"}, 2, 0},
		{[]string{"a", "b", "c"}, []string{"c"}, 3, 1},
		{[]string{"a", "b"}, []string{"b", "z"}, 10, 0.5},
		{nil, []string{"a"}, 5, 0},
		{[]string{"a"}, nil, 5, 0},
	}
	for _, c := range cases {
		if got := RecallAtK(c.ranked, c.ev, c.k); got != c.want {
			t.Errorf("RecallAtK(%v,%v,%d) = %v, want %v", c.ranked, c.ev, c.k, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	convs, err := Parse(bytes.NewReader(synth.LoCoMo(3, synth.LoCoMoOptions{Conversations: 2, Sessions: 12, Turns: 5})))
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 2 || len(convs[0].Sessions) != 12 || convs[0].Turns() != 60 || convs[0].SpeakerA == "" {
		t.Fatalf("parsed %+v", convs[0])
	}
	for i, s := range convs[0].Sessions {
		if s.Num != i+1 || s.Time.IsZero() || len(s.Turns) != 5 {
			t.Fatalf("session %d: %+v", i, s)
		}
		if i > 0 && !s.Time.After(convs[0].Sessions[i-1].Time) {
			t.Fatalf("sessions not in date order at %d", i)
		}
	}
	// Real file, when present: the quirks of the data.
	dir, ok := testutil.SharedDir()
	if !ok {
		return
	}
	real, err := Load(dir + "/data/locomo/locomo-dev3.json")
	if err != nil {
		t.Skip(err)
	}
	turns, qs := 0, 0
	for _, c := range real {
		turns += c.Turns()
		qs += len(c.QA)
		for _, s := range c.Sessions {
			if s.Time.IsZero() {
				t.Errorf("%s session %d: date %q did not parse", c.SampleID, s.Num, s.DateTime)
			}
		}
	}
	if turns != 1451 || qs != 497 {
		t.Errorf("turns %d questions %d", turns, qs)
	}
}

func TestNormalizeEvidence(t *testing.T) {
	got := NormalizeEvidence([]string{"D8:6; D9:17", " D1:2 ", "D1:2", "D10:3:", ""})
	want := []string{"D8:6", "D9:17", "D1:2", "D10:3"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestParseDate(t *testing.T) {
	if got := ParseDate("1:56 pm on 8 May, 2023"); !got.Equal(time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)) {
		t.Fatalf("got %v", got)
	}
	if !ParseDate("yesterday").IsZero() {
		t.Fatal("garbage parsed")
	}
}

func TestTurnText(t *testing.T) {
	s := TurnText(Turn{Speaker: "Ann", Text: "look!", BlipCaption: "a photo of a cat"})
	if !strings.HasPrefix(s, "Ann: look!") || !strings.Contains(s, "a photo of a cat") {
		t.Fatal(s)
	}
	if b := TurnBody(Turn{Speaker: "Ann", Text: "look!", BlipCaption: "a photo of a cat"}); b != "look! [shared an image: a photo of a cat]" {
		t.Fatal(b)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(synth.LoCoMo(1, synth.LoCoMoOptions{Conversations: 1, Sessions: 2, Turns: 3}))
	f.Add([]byte(`[{"sample_id":"x","conversation":{"session_1":[{"speaker":"a","dia_id":"D1:1","text":"t"}],"session_1_date_time":"1:00 pm on 1 May, 2023"},"qa":[{"question":"q","evidence":["D1:1; D1:2"],"category":1}]}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"not":"a list"}`))
	f.Add([]byte(`[{"conversation":{"session_x":1,"session_2":"bad"}}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		convs, err := Parse(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return
		}
		for _, c := range convs {
			for i := 1; i < len(c.Sessions); i++ {
				if c.Sessions[i].Num < c.Sessions[i-1].Num {
					t.Fatal("sessions out of order")
				}
			}
			for _, q := range c.QA {
				for _, e := range q.Evidence {
					if e == "" || strings.ContainsAny(e, "; ,") {
						t.Fatalf("bad evidence id %q", e)
					}
				}
			}
		}
	})
}

func ExampleRunRecall() {
	// A generated fixture in LoCoMo's format; the benchmark reads the real
	// file with RecallConfig.Path instead.
	convs, err := Parse(bytes.NewReader(synth.LoCoMo(1, synth.LoCoMoOptions{})))
	if err != nil {
		panic(err)
	}
	rep, err := RunRecall(context.Background(), RecallConfig{Data: convs, Ks: []int{10}})
	if err != nil {
		panic(err)
	}
	fmt.Println("questions:", rep.Questions)
	fmt.Println("recall@10 >= 90%:", rep.RecallAt["10"] >= 90)
	// Output:
	// questions: 15
	// recall@10 >= 90%: true
}
