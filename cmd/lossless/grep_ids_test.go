package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestGrepIDsOpen: grep's message hits (text and --json) carry the
// message's id and, once summarised, the leaf covering it; describe and
// expand given either show the hit message — for a summarised message and
// for one in the fresh tail.
func TestGrepIDsOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	const sid = "sess-ids"
	msgs := writeSession(t, file, sid, 20)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0)
	runCLI(t, "", nil, "compact", "--store", store, "--session", sid, "--budget", "400", "--force").want(t, 0)

	hit := func(query string) grepHit {
		t.Helper()
		r := runCLI(t, "", nil, "grep", "--store", store, "--json", "--kind", "message", "--regex", query)
		r.want(t, 0)
		var hs []grepHit
		if err := json.Unmarshal([]byte(r.stdout), &hs); err != nil {
			t.Fatalf("grep --json: %v\n%s", err, r.stdout)
		}
		if len(hs) != 1 {
			t.Fatalf("grep %q: %d hits, want 1: %s", query, len(hs), r.stdout)
		}
		h := hs[0]
		if want := fmt.Sprintf("%s:%d", h.Conversation, h.Seq); h.ID != want {
			t.Fatalf("grep %q: id %q, want %q", query, h.ID, want)
		}
		return h
	}
	// lines returns expand's stdout, one message a line.
	lines := func(args ...string) [][]byte {
		t.Helper()
		r := runCLI(t, "", nil, append([]string{"expand", "--store", store}, args...)...)
		r.want(t, 0)
		return bytes.Split(bytes.TrimSuffix([]byte(r.stdout), []byte("\n")), []byte("\n"))
	}
	holds := func(ls [][]byte, want []byte) bool {
		for _, l := range ls {
			if bytes.Equal(l, want) {
				return true
			}
		}
		return false
	}

	// Turn 2's question: summarised.
	old := hit("question 2 <about>")
	if old.Seq != 5 || old.CoveredBy == "" {
		t.Fatalf("turn 2's question: %+v", old)
	}
	runCLI(t, "", nil, "grep", "--store", store, "--kind", "message", "--regex", "question 2 <about>").
		want(t, 0, fmt.Sprintf("message %s (user, in %s)", old.ID, old.CoveredBy))
	runCLI(t, "", nil, "describe", "--store", store, old.ID).
		want(t, 0, "message   "+old.ID+" (user,", "session   "+sid, "position  in summary "+old.CoveredBy, "question 2 <about>")
	var d struct {
		SessionID string `json:"sessionId"`
		Message   struct {
			ID        string `json:"id"`
			CoveredBy string `json:"coveredBy"`
			Text      string `json:"text"`
		} `json:"message"`
	}
	r := runCLI(t, "", nil, "describe", "--store", store, "--json", old.ID)
	r.want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Message.ID != old.ID || d.Message.CoveredBy != old.CoveredBy || d.SessionID != sid {
		t.Fatalf("describe --json %s: %+v %v", old.ID, d, err)
	}
	if ls := lines(old.ID); !holds(ls, msgs[4]) || !holds(ls, msgs[3]) || !holds(ls, msgs[5]) {
		t.Fatalf("expand %s lacks message 5 or its neighbours:\n%s", old.ID, bytes.Join(ls, []byte("\n")))
	}
	if ls := lines(old.ID, "--max-tokens", "1"); len(ls) != 1 || !bytes.Equal(ls[0], msgs[4]) {
		t.Fatalf("expand %s --max-tokens 1:\n%s", old.ID, bytes.Join(ls, []byte("\n")))
	}
	if ls := lines(old.CoveredBy); !holds(ls, msgs[4]) {
		t.Fatalf("expand %s (the leaf) lacks message 5", old.CoveredBy)
	}
	runCLI(t, "", nil, "describe", "--store", store, old.CoveredBy).want(t, 0, "summary   "+old.CoveredBy)

	// The last answer: in the fresh tail, no leaf.
	last := hit("answer 19:")
	if last.Seq != 40 || last.CoveredBy != "" {
		t.Fatalf("the last answer: %+v", last)
	}
	runCLI(t, "", nil, "grep", "--store", store, "--kind", "message", "--regex", "answer 19:").want(t, 0, fmt.Sprintf("message %s (assistant)", last.ID))
	runCLI(t, "", nil, "describe", "--store", store, last.ID).want(t, 0, "position  in the active context", "answer 19: file19.go")
	if ls := lines(last.ID); !bytes.Equal(ls[len(ls)-1], msgs[39]) {
		t.Fatalf("expand %s does not end with message 40:\n%s", last.ID, bytes.Join(ls, []byte("\n")))
	}

	// Ids that name nothing.
	conv := strings.Split(last.ID, ":")[0]
	runCLI(t, "", nil, "describe", "--store", store, conv+":41").want(t, 1, "not found")
	runCLI(t, "", nil, "expand", "--store", store, "0000000000000000:1").want(t, 1, "not found")
	runCLI(t, "", nil, "describe", "--store", store, "--session", "nope", last.ID).want(t, 1, "unknown session")
}
