package compaction_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/compaction"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
)

func TestIdentifiers(t *testing.T) {
	text := "see https://example.com/a/b?x=1, order 0b7e4f3c-5d2a-4e8f-9c1b-2a3d4e5f6a7b at 10.0.3.7:8080 " +
		"and db.internal:5432; commit a1b2c3d; edit /srv/app/main.go, ./cmd/run.sh, pkg/util.go and go.mod. " +
		"Not ids: and/or, 1/2, 2024, deadbeef (no digit), parseJSON, the end."
	got := map[string]ident.Kind{}
	for _, id := range compaction.Identifiers(text) {
		got[id.Value] = id.Kind
	}
	want := map[string]ident.Kind{
		"https://example.com/a/b?x=1":          ident.URL,
		"0b7e4f3c-5d2a-4e8f-9c1b-2a3d4e5f6a7b": ident.UUID,
		"10.0.3.7:8080":                        ident.Host,
		"db.internal:5432":                     ident.Host,
		"a1b2c3d":                              ident.Hash,
		"/srv/app/main.go":                     ident.Path,
		"./cmd/run.sh":                         ident.Path,
		"pkg/util.go":                          ident.Path,
		"go.mod":                               ident.Path,
	}
	for v, k := range want {
		if got[v] != k {
			t.Errorf("%q: kind %q, want %q", v, got[v], k)
		}
	}
	// Code names are ident.Name: the summary's identifier list leaves them out.
	for _, v := range []string{"and/or", "1/2", "2024", "deadbeef", "parseJSON"} {
		if _, ok := got[v]; ok {
			t.Errorf("%q taken for an identifier", v)
		}
	}
	r := compaction.MeasureRetention(compaction.Identifiers(text), "kept https://example.com/a/b?x=1 and /srv/app/main.go")
	// uuid, url and 4 paths count; hosts and hashes do not.
	if r.Total != 6 || r.Kept != 2 {
		t.Errorf("retention %+v", r)
	}
}

func TestCollectFileOps(t *testing.T) {
	msgs := []core.Message{
		core.AssistantToolCall("1", "read", map[string]string{"path": "a.go"}, 1),
		core.AssistantToolCall("2", "read", map[string]string{"path": "b.go"}, 1),
		core.AssistantToolCall("3", "edit", map[string]string{"path": "b.go"}, 1),
		core.AssistantToolCall("4", "write", map[string]string{"file_path": "c.go"}, 1),
		core.AssistantToolCall("5", "bash", map[string]string{"command": "cat d.go"}, 1),
	}
	ops := compaction.CollectFileOps(msgs, compaction.FileOps{Read: []string{"z.go"}})
	if strings.Join(ops.Read, ",") != "a.go,z.go" || strings.Join(ops.Modified, ",") != "b.go,c.go" {
		t.Errorf("ops %+v", ops)
	}
}

func TestParseSummaryRoundTrip(t *testing.T) {
	s, free, ok := compaction.ParseSummary("# Checkpoint\nintro\n## Goal\nship it\n## Completed Work (WP1-WP3)\n- a\n" +
		"## Key Decisions Made:\n- b\n<read-files>\nx.go\n</read-files>\n<modified-files>\ny.go\n</modified-files>")
	if !ok || len(free) != 2 {
		t.Fatalf("ok %v free %q", ok, free)
	}
	if s.Sections[compaction.SecGoal][0] != "ship it" || s.Sections[compaction.SecDone][0] != "- a" ||
		s.Sections[compaction.SecDecisions][0] != "- b" || s.Files.Read[0] != "x.go" || s.Files.Modified[0] != "y.go" {
		t.Errorf("parsed %+v", s)
	}
	again, _, _ := compaction.ParseSummary(s.Render())
	if again.Render() != s.Render() {
		t.Errorf("render/parse is not stable:\n%s\n----\n%s", s.Render(), again.Render())
	}
}

func FuzzIdentifiers(f *testing.F) {
	for _, s := range []string{"", "https://x.io/a", "0b7e4f3c-5d2a-4e8f-9c1b-2a3d4e5f6a7b", "/a/b.go ./c", "1.2.3.4:80",
		"a1b2c3d4", "héllo/wörld.go", "\xff/x.go"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		seen := map[string]bool{}
		for _, id := range compaction.Identifiers(text) {
			if id.Value == "" || !strings.Contains(text, id.Value) {
				t.Fatalf("identifier %q not in the text", id.Value)
			}
			if seen[id.Value] {
				t.Fatalf("duplicate %q", id.Value)
			}
			seen[id.Value] = true
		}
	})
}

func FuzzParseSummary(f *testing.F) {
	for _, s := range []string{"", "## Goal\nx", "<read-files>\na\n", "### Done\n- a\n## Next Steps\n1. b", "# \n##\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, _, _ := compaction.ParseSummary(text)
		out := s.Render()
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatal("render produced invalid UTF-8")
		}
		for _, h := range []string{"## Goal", "## Next Steps", "## Critical Context"} {
			if !strings.Contains(out, h) {
				t.Fatalf("render lacks %q", h)
			}
		}
	})
}

// FuzzCompact compacts arbitrary transcript bytes appended to a valid
// fixture: Compact must not panic, must never change the existing bytes,
// and must leave a file whose window re-reads.
func FuzzCompact(f *testing.F) {
	base, err := os.ReadFile(filepath.Join("..", "testdata", "compaction", "v4-session.jsonl"))
	if err != nil {
		f.Skip(err)
	}
	f.Add([]byte(""))
	f.Add([]byte(`{"type":"compaction","id":"x","parentId":"e0000018","summary":"## Goal\nold","firstKeptEntryId":"e0000010","tokensBefore":9}` + "\n"))
	f.Add([]byte(`{"type":"message","id":"q","parentId":"nope","message":{"role":"toolResult","toolCallId":"c","content":"x"}}` + "\n"))
	f.Add([]byte("{not json\n"))
	f.Add([]byte(`{"type":"reset","id":"r","parentId":"e0000018","reason":"x"}` + "\n"))
	f.Fuzz(func(t *testing.T, tail []byte) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		data := append(append([]byte(nil), base...), tail...)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := testOptions(&fakeSummarizer{})
		res, err := compaction.Compact(context.Background(), path, core.CompactParams{Force: true}, opts)
		now, rerr := os.ReadFile(path)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if !bytes.HasPrefix(now, data) {
			t.Fatal("compaction changed existing bytes")
		}
		if err != nil || !res.Compacted {
			if len(now) != len(data) {
				t.Fatal("a failed or skipped compaction wrote the file")
			}
			return
		}
		tr, err := core.ReadTranscript(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.Window(); got.Compaction == nil || got.Compaction.Summary != res.Result.Summary {
			t.Fatal("re-read window does not start with the new summary")
		}
	})
}
