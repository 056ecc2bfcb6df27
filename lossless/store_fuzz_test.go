package lossless

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
)

// FuzzDecodeMsg: a stored message record never panics the decoder, and a
// record that decodes re-encodes to the same bytes.
func FuzzDecodeMsg(f *testing.F) {
	f.Add(encodeMsg(msgRecord{Flags: flagLarge, Tokens: 42, Timestamp: -5, Role: "user", Raw: []byte(`{"role":"user"}`)}))
	f.Add(encodeMsg(msgRecord{}))
	f.Add(encodeMsg(msgRecord{Role: "toolResult", Raw: bytes.Repeat([]byte(`{"role":"toolResult","content":"abc"}`), 20)})) // compressed
	f.Add([]byte{2, 0, 0, 0, 0})
	f.Add([]byte{1})
	f.Add([]byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeMsg(b, true)
		if err != nil {
			return
		}
		if again := encodeMsg(r); !bytes.Equal(again, b) && len(again) <= len(b) {
			// Varints may have non-minimal encodings in fuzz input; a
			// canonical re-encoding must decode to the same record.
			r2, err := decodeMsg(again, true)
			if err != nil || r2.Tokens != r.Tokens || r2.Role != r.Role || !bytes.Equal(r2.Raw, r.Raw) || r2.Hash != r.Hash {
				t.Fatalf("re-encoding changed the record: %+v vs %+v (%v)", r, r2, err)
			}
		}
	})
}

// FuzzDecodeItem: item records never panic the decoder and round-trip.
func FuzzDecodeItem(f *testing.F) {
	f.Add(encodeItem(dag.Item{Ref: dag.MessageRef(7), Tokens: 9, Depth: -1, Timestamp: 1, Role: "user"}, flagHeartbeat))
	f.Add(encodeItem(dag.Item{Ref: dag.SummaryRef("sum_1"), Tokens: 100, Depth: 3, Timestamp: 1 << 40}, 0))
	f.Add([]byte{1, 0, 2, 0xff})
	f.Add([]byte{1, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		it, flags, err := decodeItem(5, b)
		if err != nil {
			return
		}
		it2, flags2, err := decodeItem(5, encodeItem(it, flags))
		if err != nil || it2 != it || flags2 != flags {
			t.Fatalf("round trip: %+v/%d -> %+v/%d (%v)", it, flags, it2, flags2, err)
		}
	})
}

// FuzzDecodeSummary: summary records never panic the decoder and
// round-trip.
func FuzzDecodeSummary(f *testing.F) {
	b, _ := encodeSummary(dag.Summary{ID: "s", Kind: dag.KindLeaf, Sources: []dag.Ref{dag.MessageRef(1)}, Text: "t"})
	f.Add(b)
	f.Add([]byte{1, '{', '}'})
	f.Add([]byte{1, 'n', 'u', 'l', 'l'})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSummary(b)
		if err != nil {
			return
		}
		enc, err := encodeSummary(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := decodeSummary(enc)
		if err != nil || s2.ID != s.ID || s2.Text != s.Text || len(s2.Sources) != len(s.Sources) {
			t.Fatalf("round trip: %+v -> %+v (%v)", s, s2, err)
		}
	})
}

// FuzzImport: any file content imports without panic or error (malformed
// lines are reported, not fatal), twice without duplicates, and the store
// keeps its invariants.
func FuzzImport(f *testing.F) {
	f.Add([]byte(`{"type":"session","id":"x","timestamp":"2026-01-01T00:00:00Z"}
{"type":"message","id":"a","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"compaction","id":"c","summary":"sum","firstKeptEntryId":"a","tokensBefore":5}
{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"text","text":"yo"}]}}
`))
	f.Add([]byte("{\"type\":\"message\",\"message\":{\"role\":\"user\"}}\n{broken\n\xff\n"))
	f.Add([]byte(`{"type":"compaction","summary":"s","firstKeptEntryIndex":-3}` + "\n"))
	e := openTest(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r1, err := e.Import(ctx, "fuzz", path)
		if err != nil {
			t.Fatalf("import: %v", err)
		}
		r2, err := e.Import(ctx, "fuzz", path)
		if err != nil || r2.Imported != 0 {
			t.Fatalf("re-import: %+v %v (first %+v)", r2, err, r1)
		}
	})
}
