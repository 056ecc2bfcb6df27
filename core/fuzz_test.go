package core

import (
	"bytes"
	"io"
	"os"
	"reflect"
	"testing"
)

func FuzzParseMessage(f *testing.F) {
	if data, err := os.ReadFile(fixture("messages.jsonl")); err == nil {
		for _, l := range bytes.Split(data, []byte("\n")) {
			f.Add(l)
		}
	}
	for _, s := range []string{``, `{}`, `{"role":"user"}`, `{"role":"user","content":"\ud800"}`, `{"role":1}`,
		`{"role":"assistant","content":[{"type":"toolCall","arguments":"notobj"}]}`, `{"role":"user","content":[1,"x",null]}`,
		"{\"role\":\"user\",\"content\":\"\xc3\x28\"}", `{"role":"user","timestamp":"2026-01-01T00:00:00Z"}`,
		`{"role":"user","role":"assistant"}`, ` {"role":"x"} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := ParseMessage(raw)
		if err != nil {
			if !m.IsZero() {
				t.Fatal("error with a non-zero message")
			}
			return
		}
		if !bytes.Equal(m.Raw(), raw) {
			t.Fatalf("Raw() = %q, want %q", m.Raw(), raw)
		}
		if m.Role() == "" {
			t.Fatal("parsed without a role")
		}
		// Accessors never panic.
		_ = m.Text()
		_ = m.SearchText(true)
		_ = m.ToolCalls()
		_ = m.HasVisibleContent()
		_ = CountMessage(Chars4{}, m)
		again, err := ParseMessage(m.Raw())
		if err != nil || again.Role() != m.Role() {
			t.Fatalf("reparse: %v", err)
		}
		if m2, err := m.WithField("zzFuzz", 1); err == nil {
			if v, ok := m2.Field("zzFuzz"); !ok || string(v) != "1" {
				t.Fatalf("WithField lost the field: %s", m2.Raw())
			}
		}
		if m3, err := m.WithoutField("content"); err == nil {
			if _, ok := m3.Field("content"); ok {
				t.Fatalf("WithoutField kept content: %s", m3.Raw())
			}
		}
	})
}

func FuzzTranscriptReader(f *testing.F) {
	for _, name := range []string{"entries.jsonl", "session.jsonl"} {
		if data, err := os.ReadFile(fixture(name)); err == nil {
			f.Add(data)
			f.Add(data[:len(data)/2])
		}
	}
	for _, s := range []string{"", "\n", "{}\n", "not json\n{\"type\":\"label\"}", "{\"type\":\"session\"}\n{\"type\":\"session\"}\n",
		"{\"type\":\"message\",\"message\":{\"role\":\"user\"}}\r\n\xff\n", "{\"type\":\"compaction\",\"firstKeptEntryIndex\":-5}\n",
		"{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"a\",\"message\":{\"role\":\"user\"}}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTranscript(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err) // a bytes.Reader never fails
		}
		if tr.Size > int64(len(data)) {
			t.Fatalf("size %d > %d", tr.Size, len(data))
		}
		for _, e := range tr.Entries {
			if e.Offset < 0 || e.Offset+int64(len(e.Raw)) > int64(len(data)) ||
				!bytes.Equal(data[e.Offset:e.Offset+int64(len(e.Raw))], e.Raw) {
				t.Fatalf("entry raw not at its offset %d", e.Offset)
			}
			if e.Type == "" {
				t.Fatal("entry without type")
			}
		}
		for _, le := range tr.Malformed {
			if le.Line <= 0 || le.Offset < 0 || le.Offset > int64(len(data)) {
				t.Fatalf("bad line error %+v", le)
			}
		}
		_ = tr.ActiveBranch()
		_ = tr.Window().Messages()
		// Streaming gives the same entries.
		r := NewTranscriptReader(bytes.NewReader(data), 0, 0, 0)
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != len(tr.Entries) {
			t.Fatalf("stream %d, parse %d", n, len(tr.Entries))
		}
	})
}

// FuzzParseEntryLine checks ParseEntryLine's one-pass decoding of the
// common case against the reference parser (parseLine): the same entry,
// header or error, field for field, for any line.
func FuzzParseEntryLine(f *testing.F) {
	for _, name := range []string{"entries.jsonl", "session.jsonl"} {
		if data, err := os.ReadFile(fixture(name)); err == nil {
			for _, l := range bytes.Split(data, []byte("\n")) {
				f.Add(l)
			}
		}
	}
	for _, s := range []string{`{"type":"message","message":{"role":"user","content":"x"},"message":{"bad":1}}`,
		`{"type":"message","Message":{"role":"user","content":"a"},"message":null}`, `{"type":"compaction","summary":5}`,
		`{"TYPE":"session","id":"x"}`, `{"type":"message","id":"a","parentId":"a","message":{"role":"user"}}`,
		`{"type":"compaction","summary":"s","firstKeptEntryIndex":3,"details":{"a":[1]}}`, "\xff", `[]`, `{"type":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(bytes.TrimSpace(line)) == 0 || bytes.ContainsAny(line, "\n") {
			return // the reader never passes these
		}
		line = bytes.TrimRight(line, "\r")
		got, gh, gerr := ParseEntryLine(line, true)
		want, wh, werr := parseLine(line)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("error %v, want %v", gerr, werr)
		}
		if !reflect.DeepEqual(gh, wh) {
			t.Fatalf("header %+v, want %+v", gh, wh)
		}
		if !bytes.Equal(got.Message.Raw(), want.Message.Raw()) || got.Message.Role() != want.Message.Role() {
			t.Fatalf("message %q, want %q", got.Message.Raw(), want.Message.Raw())
		}
		got.Message, want.Message = Message{}, Message{}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("entry %+v, want %+v", got, want)
		}
		// Without keepRaw only a compaction keeps its line.
		lean, _, _ := ParseEntryLine(line, false)
		if (lean.Raw != nil) != (gerr == nil && gh == nil && lean.Type == EntryCompaction) {
			t.Fatalf("keepRaw false: raw %q for a %q entry", lean.Raw, lean.Type)
		}
	})
}
