package core

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

var (
	cacheMu sync.Mutex
	cache   = map[string]*Transcript{}
)

// readCached reads a transcript once per test binary (the real ones are
// megabytes; several tests only read them). Callers must not modify it.
func readCached(path string) (*Transcript, error) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if tr, ok := cache[path]; ok {
		return tr, nil
	}
	tr, err := ReadTranscript(path)
	if err == nil {
		cache[path] = tr
	}
	return tr, err
}

func parseString(t *testing.T, s string) *Transcript {
	t.Helper()
	tr, err := ParseTranscript(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTranscriptEntriesByteForByte(t *testing.T) {
	paths := append([]string{fixture("entries.jsonl"), fixture("session.jsonl")}, testutil.PiMono(t)...)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := readCached(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Malformed) != 0 {
				t.Fatalf("malformed: %v", tr.Malformed)
			}
			ls := lines(t, path)
			if tr.Header == nil || !bytes.Equal(tr.Header.Raw, ls[0]) {
				t.Fatal("header bytes differ")
			}
			if len(tr.Entries) != len(ls)-1 {
				t.Fatalf("%d entries for %d lines", len(tr.Entries), len(ls))
			}
			data, _ := os.ReadFile(path)
			for i, e := range tr.Entries {
				if !bytes.Equal(e.Raw, ls[i+1]) {
					t.Fatalf("entry %d bytes differ", i)
				}
				if !bytes.Equal(data[e.Offset:e.Offset+int64(len(e.Raw))], e.Raw) || e.Index != i+1 || e.Line != i+2 {
					t.Fatalf("entry %d position wrong: offset %d index %d line %d", i, e.Offset, e.Index, e.Line)
				}
				// (The real transcripts' messages are checked by
				// TestMessageRoundTripRealTranscripts.)
				if e.Type == EntryMessage && len(tr.Entries) < 100 {
					raw, _ := member(t, e.Raw, "message")
					if !bytes.Equal(e.Message.Raw(), raw) {
						t.Fatalf("entry %d message bytes differ", i)
					}
				}
			}
			if tr.Size != int64(len(data)) {
				t.Fatalf("size %d, file %d", tr.Size, len(data))
			}
		})
	}
}

func TestTranscriptEntryTypes(t *testing.T) {
	tr, err := ReadTranscript(fixture("entries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if h := tr.Header; h.Version != 4 || h.ID != "sess-entries" || h.Cwd != "/work/demo" || h.ParentSession != "sess-0" {
		t.Fatalf("header %+v", h)
	}
	types := map[string]Entry{}
	for _, e := range tr.Entries {
		types[e.Type] = e
	}
	for _, typ := range []string{EntryMessage, EntryCompaction, EntryBranchSummary, EntryReset, EntryModelChange,
		EntryThinkingLevelChange, EntryCustom, EntryCustomMessage, EntryLabel, EntrySessionInfo} {
		if _, ok := types[typ]; !ok {
			t.Errorf("no %s entry", typ)
		}
	}
	c := types[EntryCompaction]
	if c.Summary != "Summary of first/one." || c.FirstKeptEntryID != "a9" || c.TokensBefore != 5000 ||
		c.TokensAfter == nil || *c.TokensAfter != 800 || string(c.Details) != `{"readFiles":["a.go"]}` {
		t.Fatalf("compaction %+v", c)
	}
	if r := types[EntryReset]; r.Reason != "user /new" || r.FirstKeptEntryID != "b3" {
		t.Fatalf("reset %+v", r)
	}
	if b := types[EntryBranchSummary]; b.FromID != "c9" || b.Summary == "" {
		t.Fatalf("branch_summary %+v", b)
	}
	if m, ok := types[EntryBranchSummary].ModelMessage(); !ok || m.Role() != RoleBranchSummary || m.FromID() != "c9" {
		t.Fatal("branch summary as model message")
	}
	// The window starts at the last reset: the kept branch summary, then b5.
	w := tr.Window()
	if w.Compaction == nil || w.Compaction.ID != "b4" {
		t.Fatalf("window compaction %+v", w.Compaction)
	}
	var ids []string
	for _, e := range w.Entries {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "b3,b5" {
		t.Fatalf("window entries %v", ids)
	}
	ms := w.Messages()
	if len(ms) != 2 || ms[0].Role() != RoleBranchSummary || ms[1].Text() != "third" {
		t.Fatalf("window messages %d", len(ms))
	}
	// Without the reset, the compaction's firstKeptEntryId applies.
	tr.Entries = tr.Entries[:11] // up to b2
	w = tr.Window()
	ids = nil
	for _, e := range w.Entries {
		ids = append(ids, e.ID)
	}
	if w.Compaction.ID != "b1" || strings.Join(ids, ",") != "a9,b2" {
		t.Fatalf("compaction window %v", ids)
	}
	ms = w.Messages()
	if len(ms) != 3 || ms[0].Role() != RoleCompactionSummary || ms[0].Summary() != "Summary of first/one." ||
		ms[0].TokensBefore() != 5000 || ms[1].Text() != "second" || ms[2].Text() != "two" {
		t.Fatalf("compaction window messages %d", len(ms))
	}
}

func TestWindowFirstKeptEntryIndex(t *testing.T) {
	path := testutil.SharedFile(t, "data/pi-mono/before-compaction.jsonl")
	tr, err := readCached(path)
	if err != nil {
		t.Fatal(err)
	}
	var comps []Entry
	for _, e := range tr.Entries {
		if e.Type == EntryCompaction {
			comps = append(comps, e)
		}
	}
	if len(comps) != 2 || comps[0].FirstKeptEntryIndex == nil || comps[1].FirstKeptEntryIndex == nil {
		t.Fatalf("expected two compactions with firstKeptEntryIndex, got %d", len(comps))
	}
	check := func(tr *Transcript, c Entry) {
		t.Helper()
		w := tr.Window()
		if w.Compaction == nil || w.Compaction.Index != c.Index {
			t.Fatalf("window compaction at %v, want index %d", w.Compaction, c.Index)
		}
		if w.Entries[0].Index != *c.FirstKeptEntryIndex {
			t.Fatalf("window starts at index %d, want %d", w.Entries[0].Index, *c.FirstKeptEntryIndex)
		}
		want := 0
		for _, e := range tr.Entries {
			if e.Index >= *c.FirstKeptEntryIndex && e.Type != EntryCompaction {
				want++
			}
		}
		if len(w.Entries) != want {
			t.Fatalf("window has %d entries, want %d", len(w.Entries), want)
		}
		ms := w.Messages()
		if ms[0].Role() != RoleCompactionSummary || ms[0].Summary() != c.Summary || ms[0].TokensBefore() != c.TokensBefore {
			t.Fatal("window does not start with the compaction summary")
		}
		if ms[1].Role() != RoleUser {
			t.Fatalf("first kept message is %s", ms[1].Role())
		}
	}
	check(tr, comps[1])
	// Cut the file just before the second compaction: the first one rules.
	data, _ := os.ReadFile(path)
	early, err := ParseTranscript(bytes.NewReader(data[:comps[1].Offset]))
	if err != nil {
		t.Fatal(err)
	}
	check(early, comps[0])
}

func TestTranscriptMalformedLines(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","version":4,"id":"s","timestamp":"t"}`,
		`{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"ok"}}`,
		`not json at all`,
		`[1,2,3]`,
		`{"id":"no-type"}`,
		`{"type":"message","id":"x"}`,
		"{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"\xff\xfe\"}}",
		`{"type":"message","id":"2","parentId":"1","message":{"role":"assistant","content":[]}}`,
		``,
		`{"type":"message","id":"3","parentId":"2","message":{"role":"user","content":"end"}}`,
	}, "\n") + "\n"
	tr := parseString(t, in)
	if len(tr.Entries) != 3 || tr.Entries[2].ID != "3" {
		t.Fatalf("%d entries", len(tr.Entries))
	}
	if tr.Entries[2].Line != 10 || tr.Entries[2].Index != 8 {
		t.Fatalf("line %d index %d", tr.Entries[2].Line, tr.Entries[2].Index)
	}
	wantLines := []int{3, 4, 5, 6, 7}
	if len(tr.Malformed) != len(wantLines) {
		t.Fatalf("malformed %v", tr.Malformed)
	}
	for i, le := range tr.Malformed {
		if le.Line != wantLines[i] {
			t.Errorf("malformed #%d at line %d, want %d", i, le.Line, wantLines[i])
		}
		if !errors.Is(&le, ErrMalformedLine) || !strings.Contains(le.Error(), "line ") {
			t.Errorf("bad LineError %v", le.Error())
		}
		if !strings.HasPrefix(in[le.Offset:], []string{"not json", "[1,2", `{"id":"no`, `{"type":"message","id":"x"`, `{"type":"message","message`}[i]) {
			t.Errorf("offset %d wrong", le.Offset)
		}
	}
	if !strings.Contains(tr.Malformed[4].Error(), "UTF-8") {
		t.Errorf("invalid UTF-8 not named: %v", tr.Malformed[4].Error())
	}
}

// TestTranscriptHeaderNameAltered: a session header whose id (or
// parentSession) decoding would change (an unpaired surrogate escape) is a
// malformed line naming the key, not a header with the id "s\uFFFD x"
// (issue #37); a surrogate pair is a valid id, kept as sent.
func TestTranscriptHeaderNameAltered(t *testing.T) {
	for _, line := range []string{
		`{"type":"session","version":4,"id":"s\ud800x","timestamp":"t"}`,
		`{"type":"session","version":4,"id":"s","parentSession":"\udc00","timestamp":"t"}`,
	} {
		tr := parseString(t, line+"\n"+`{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"ok"}}`+"\n")
		if tr.Header != nil {
			t.Fatalf("%s: read as a header with id %q", line, tr.Header.ID)
		}
		if len(tr.Malformed) != 1 || tr.Malformed[0].Line != 1 || !strings.Contains(tr.Malformed[0].Error(), "not valid UTF-8") {
			t.Fatalf("%s: malformed %v", line, tr.Malformed)
		}
		if len(tr.Entries) != 1 {
			t.Fatalf("%s: %d entries", line, len(tr.Entries))
		}
	}
	tr := parseString(t, `{"type":"session","version":4,"id":"s\ud83d\ude42","timestamp":"t"}`+"\n")
	if tr.Header == nil || tr.Header.ID != "s\U0001F642" || len(tr.Malformed) != 0 {
		t.Fatalf("a surrogate pair: %+v %v", tr.Header, tr.Malformed)
	}
}

func TestTranscriptEdgeFiles(t *testing.T) {
	if tr := parseString(t, ""); tr.Header != nil || len(tr.Entries) != 0 || tr.Size != 0 {
		t.Fatal("empty file")
	}
	if tr := parseString(t, "\n\n  \n"); len(tr.Entries) != 0 || len(tr.Malformed) != 0 {
		t.Fatal("blank lines")
	}
	// Header-less (old) file: entries without ids form a linear branch.
	old := `{"type":"message","timestamp":"a","message":{"role":"user","content":"one"}}` + "\n" +
		`{"type":"message","timestamp":"b","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}` + "\n"
	tr := parseString(t, old)
	if tr.Header != nil || len(tr.Entries) != 2 || tr.Entries[0].Index != 0 || tr.Entries[0].Key() != "#0" {
		t.Fatalf("header-less: %+v", tr.Header)
	}
	if len(tr.ActiveBranch()) != 2 || len(tr.Window().Messages()) != 2 {
		t.Fatal("header-less branch/window")
	}
	// A partial last line is left unread; a complete one without newline is read.
	partial := old + `{"type":"message","timestamp":"c","mess`
	tr = parseString(t, partial)
	if len(tr.Entries) != 2 || tr.Size != int64(len(old)) || len(tr.Malformed) != 0 {
		t.Fatalf("partial: %d entries, size %d", len(tr.Entries), tr.Size)
	}
	complete := old + `{"type":"label","id":"z"}`
	tr = parseString(t, complete)
	if len(tr.Entries) != 3 || tr.Size != int64(len(complete)) {
		t.Fatalf("complete unterminated: %d entries size %d", len(tr.Entries), tr.Size)
	}
	// CRLF line endings.
	tr = parseString(t, strings.ReplaceAll(old, "\n", "\r\n"))
	if len(tr.Entries) != 2 || bytes.HasSuffix(tr.Entries[0].Raw, []byte("\r")) {
		t.Fatal("CRLF")
	}
	if _, err := ReadTranscript(filepath.Join(t.TempDir(), "none.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestTranscriptReaderIncremental(t *testing.T) {
	data, err := os.ReadFile(fixture("entries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.IndexByte(data[200:], '\n') + 201
	r1 := NewTranscriptReader(bytes.NewReader(data[:cut]), 0, 0, 0)
	var first []Entry
	for {
		e, err := r1.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, e)
	}
	r2 := NewTranscriptReader(bytes.NewReader(data[r1.Offset():]), r1.Offset(), r1.Lines(), r1.Index())
	all, _ := ParseTranscript(bytes.NewReader(data))
	i := len(first)
	for {
		e, err := r2.Next()
		if err == io.EOF {
			break
		}
		want := all.Entries[i]
		if e.ID != want.ID || e.Offset != want.Offset || e.Line != want.Line || e.Index != want.Index {
			t.Fatalf("entry %d: got %s@%d, want %s@%d", i, e.ID, e.Offset, want.ID, want.Offset)
		}
		i++
	}
	if i != len(all.Entries) {
		t.Fatalf("read %d of %d", i, len(all.Entries))
	}
}

func TestActiveBranch(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","version":4,"id":"s","timestamp":"t"}`,
		`{"type":"message","id":"r","parentId":null,"message":{"role":"user","content":"root"}}`,
		`{"type":"message","id":"a","parentId":"r","message":{"role":"assistant","content":[{"type":"text","text":"A"}]}}`,
		`{"type":"message","id":"a2","parentId":"a","message":{"role":"user","content":"abandoned"}}`,
		`{"type":"message","id":"b","parentId":"r","message":{"role":"assistant","content":[{"type":"text","text":"B"}]}}`,
		`{"type":"branch_summary","id":"bs","parentId":"b","fromId":"a2","summary":"tried A"}`,
		`{"type":"message","id":"b2","parentId":"bs","message":{"role":"user","content":"go on"}}`,
	}, "\n") + "\n"
	tr := parseString(t, in)
	var ids []string
	for _, e := range tr.ActiveBranch() {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "r,b,bs,b2" {
		t.Fatalf("branch %v", ids)
	}
	ms := tr.Window().Messages()
	if len(ms) != 4 || ms[2].Role() != RoleBranchSummary || ms[2].Summary() != "tried A" {
		t.Fatalf("window %d", len(ms))
	}
	// A cycle does not loop forever.
	cyc := parseString(t, `{"type":"message","id":"x","parentId":"y","message":{"role":"user","content":"1"}}`+"\n"+
		`{"type":"message","id":"y","parentId":"x","message":{"role":"user","content":"2"}}`+"\n")
	if n := len(cyc.ActiveBranch()); n != 2 {
		t.Fatalf("cycle branch %d", n)
	}
}

func TestAppendAndWriteTranscript(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	hdr := Header{Type: EntrySession, Version: CurrentTranscriptVersion, ID: "s", Timestamp: NowTimestamp()}
	if err := WriteTranscriptFile(p, hdr); err != nil {
		t.Fatal(err)
	}
	if err := WriteTranscriptFile(p, hdr); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("overwrite allowed: %v", err)
	}
	m := MustParseMessage(`{"role":"user","content":"a <b> & c","timestamp":1}`)
	line := map[string]any{"type": EntryMessage, "id": NewEntryID(), "parentId": nil, "message": m}
	if err := AppendTranscript(p, line); err != nil {
		t.Fatal(err)
	}
	// A torn last line gets a newline before the next append.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"type":"mess`)
	f.Close()
	if err := AppendTranscript(p, []byte(`{"type":"label","id":"l1"}`)); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadTranscript(p)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.ID != "s" || len(tr.Entries) != 2 || len(tr.Malformed) != 1 || tr.Malformed[0].Line != 3 {
		t.Fatalf("entries %d malformed %v", len(tr.Entries), tr.Malformed)
	}
	if !bytes.Equal(tr.Entries[0].Message.Raw(), m.Raw()) {
		t.Fatalf("message bytes changed: %s", tr.Entries[0].Message.Raw())
	}
	if len(NewEntryID()) != 8 {
		t.Fatal("entry id length")
	}
}

// An old file without entry ids can name its first kept entry by Key()
// ("#<index>"); Window finds it.
func TestWindowFirstKeptEntryKeyWithoutIDs(t *testing.T) {
	src := `{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z"}
{"type":"message","message":{"role":"user","content":"one","timestamp":1}}
{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"two"}],"timestamp":2}}
{"type":"message","message":{"role":"user","content":"three","timestamp":3}}
{"type":"compaction","summary":"S","firstKeptEntryId":"#3","tokensBefore":10}
{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"four"}],"timestamp":4}}
`
	tr, err := ParseTranscript(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	w := tr.Window()
	var got []string
	for _, m := range w.Messages() {
		got = append(got, m.Text())
	}
	if want := []string{"S", "three", "four"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("window = %q, want %q", got, want)
	}
}
