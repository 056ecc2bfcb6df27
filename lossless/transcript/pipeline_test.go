package transcript

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

// readAllLines runs the pipeline's line reader and parser over data and
// reports what it saw, in core.ParseTranscript's terms.
func readAllLines(data []byte) (*core.Transcript, error) {
	lr := &lineReader{r: bufio.NewReaderSize(bytes.NewReader(data), 16)}
	t := &core.Transcript{}
	for {
		b := &lineBatch{}
		ok, err := lr.next(&b.buf, &b.lines)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		ln := b.lines[0]
		ent, hdr, err := core.ParseEntryLine(b.buf[ln.from:ln.to], false)
		switch {
		case err != nil:
			t.Malformed = append(t.Malformed, core.LineError{Line: ln.line, Offset: ln.offset, Err: err})
		case hdr != nil:
			if t.Header == nil && ln.index == 0 {
				t.Header = hdr
			}
		default:
			ent.Line, ent.Index, ent.Offset = ln.line, ln.index, ln.offset
			t.Entries = append(t.Entries, ent)
		}
	}
	t.Size = lr.offset
	return t, nil
}

// sameAsReader checks that the pipeline's reader and parser see data
// exactly as core.ParseTranscript does.
func sameAsReader(t *testing.T, data []byte) {
	t.Helper()
	want, err := core.ParseTranscript(bytes.NewReader(data))
	if err != nil {
		t.Skip(err)
	}
	got, err := readAllLines(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Size != want.Size {
		t.Fatalf("size %d, want %d", got.Size, want.Size)
	}
	if !reflect.DeepEqual(got.Header, want.Header) {
		t.Fatalf("header %+v, want %+v", got.Header, want.Header)
	}
	if len(got.Malformed) != len(want.Malformed) {
		t.Fatalf("malformed %v, want %v", got.Malformed, want.Malformed)
	}
	for i := range got.Malformed {
		g, w := got.Malformed[i], want.Malformed[i]
		if g.Line != w.Line || g.Offset != w.Offset || g.Err.Error() != w.Err.Error() {
			t.Fatalf("malformed %d: %v, want %v", i, g.Error(), w.Error())
		}
	}
	if len(got.Entries) != len(want.Entries) {
		t.Fatalf("%d entries, want %d", len(got.Entries), len(want.Entries))
	}
	for i := range got.Entries {
		g, w := got.Entries[i], want.Entries[i]
		if !bytes.Equal(g.Message.Raw(), w.Message.Raw()) {
			t.Fatalf("entry %d: message %q, want %q", i, g.Message.Raw(), w.Message.Raw())
		}
		if g.Type == core.EntryCompaction && !bytes.Equal(g.Raw, w.Raw) {
			t.Fatalf("entry %d: raw %q, want %q", i, g.Raw, w.Raw)
		}
		g.Message, w.Message, g.Raw, w.Raw = core.Message{}, core.Message{}, nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("entry %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestImportLinesMatchReader(t *testing.T) {
	lines, torn := testutil.PipelineTranscript()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	t.Run("fixture", func(t *testing.T) { sameAsReader(t, buf.Bytes()) })
	t.Run("torn", func(t *testing.T) { sameAsReader(t, append(buf.Bytes(), torn...)) })
	t.Run("complete-last-line", func(t *testing.T) { sameAsReader(t, bytes.TrimRight(buf.Bytes(), "\n")) })
	for _, path := range testutil.PiMono(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(path), func(t *testing.T) { sameAsReader(t, data) })
	}
}

// FuzzImportLines checks the pipeline's line reader and entry parser
// against core.ParseTranscript on arbitrary input.
func FuzzImportLines(f *testing.F) {
	lines, torn := testutil.PipelineTranscript()
	for _, l := range lines {
		f.Add(append(append([]byte(nil), l...), '\n'))
	}
	f.Add(torn)
	f.Add([]byte("\n\r\n  \n{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"x\"},\"message\":{\"bad\":1}}\n"))
	f.Add([]byte(`{"type":"message","Message":{"role":"user","content":"a"},"message":null}`))
	f.Add([]byte(`{"type":"compaction","summary":5}` + "\n" + `{"TYPE":"session","id":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) { sameAsReader(t, data) })
}
