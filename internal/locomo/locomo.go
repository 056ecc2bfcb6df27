// Package locomo loads the LoCoMo long-conversation benchmark and measures
// cross-session recall on it (recall@k of the evidence turns of each
// question), through the same retrieval path that assemble's recall uses.
//
// The data set (CC BY-NC 4.0) is never copied into the repository: tests
// reach it through internal/testutil.SharedFile, and the benchmark command
// takes its path.
package locomo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrFormat is returned (wrapped) for input that is not LoCoMo's format.
var ErrFormat = errors.New("locomo: bad format")

// Turn is one dialog turn.
type Turn struct {
	// Speaker is the speaker's name.
	Speaker string `json:"speaker"`
	// DiaID identifies the turn, e.g. "D3:7" (session 3, turn 7).
	DiaID string `json:"dia_id"`
	// Text is what was said.
	Text string `json:"text"`
	// BlipCaption describes a shared image, when there is one.
	BlipCaption string `json:"blip_caption,omitempty"`
}

// Session is one dated session of a conversation.
type Session struct {
	// Num is the session number (1-based, as in "session_3").
	Num int
	// DateTime is the date as written in the data ("1:56 pm on 8 May, 2023").
	DateTime string
	// Time is DateTime parsed (UTC); zero when it did not parse.
	Time time.Time
	// Turns are the session's turns in order.
	Turns []Turn
}

// QA is one question with the turns that answer it.
type QA struct {
	// Question is the question text.
	Question string
	// Answer is the reference answer (any JSON value; absent for
	// adversarial questions).
	Answer json.RawMessage
	// Evidence lists the dia ids of the turns that answer it, normalised
	// (entries like "D8:6; D9:17" split).
	Evidence []string
	// Category is 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
	// 5 adversarial (as numbered in the data).
	Category int
}

// Conversation is one LoCoMo sample: two speakers, dated sessions and
// questions.
type Conversation struct {
	// SampleID names the sample ("conv-26").
	SampleID string
	// SpeakerA and SpeakerB are the two speakers.
	SpeakerA, SpeakerB string
	// Sessions are in session-number order.
	Sessions []Session
	// QA are the questions.
	QA []QA
}

// Turns returns the number of turns of all sessions.
func (c *Conversation) Turns() int {
	n := 0
	for _, s := range c.Sessions {
		n += len(s.Turns)
	}
	return n
}

type rawConv struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []rawQA                    `json:"qa"`
}

type rawQA struct {
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer"`
	Evidence []string        `json:"evidence"`
	Category int             `json:"category"`
}

// Load reads a LoCoMo JSON file.
func Load(path string) ([]Conversation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("locomo: %w", err)
	}
	defer f.Close()
	return Parse(f)
}

// Parse decodes LoCoMo JSON (a list of samples).
func Parse(r io.Reader) ([]Conversation, error) {
	var raw []rawConv
	dec := json.NewDecoder(r)
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("locomo: %w: %w", ErrFormat, err)
	}
	out := make([]Conversation, 0, len(raw))
	for i, rc := range raw {
		c, err := convert(rc)
		if err != nil {
			return nil, fmt.Errorf("locomo: sample %d: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func convert(rc rawConv) (Conversation, error) {
	c := Conversation{SampleID: rc.SampleID}
	str := func(k string) string {
		var s string
		if v, ok := rc.Conversation[k]; ok {
			_ = json.Unmarshal(v, &s)
		}
		return s
	}
	c.SpeakerA, c.SpeakerB = str("speaker_a"), str("speaker_b")
	for k, v := range rc.Conversation {
		rest, ok := strings.CutPrefix(k, "session_")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n <= 0 {
			continue // session_N_date_time and others
		}
		var turns []Turn
		if err := json.Unmarshal(v, &turns); err != nil {
			return c, fmt.Errorf("%w: %s: %w", ErrFormat, k, err)
		}
		dt := str(k + "_date_time")
		c.Sessions = append(c.Sessions, Session{Num: n, DateTime: dt, Time: ParseDate(dt), Turns: turns})
	}
	sort.Slice(c.Sessions, func(i, j int) bool { return c.Sessions[i].Num < c.Sessions[j].Num })
	for _, q := range rc.QA {
		c.QA = append(c.QA, QA{
			Question: q.Question,
			Answer:   q.Answer,
			Evidence: NormalizeEvidence(q.Evidence),
			Category: q.Category,
		})
	}
	return c, nil
}

// NormalizeEvidence splits entries holding several ids ("D8:6; D9:17"),
// trims them and drops empties and duplicates.
func NormalizeEvidence(ev []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range ev {
		for _, p := range strings.FieldsFunc(e, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
			p = strings.TrimRight(strings.TrimSpace(p), ":")
			if p == "" || seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ParseDate parses LoCoMo's session dates ("1:56 pm on 8 May, 2023"); the
// zero time when it does not parse.
func ParseDate(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"3:04 pm on 2 January, 2006", "3:04 pm on 2 Jan, 2006", "3:04 PM on 2 January, 2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
