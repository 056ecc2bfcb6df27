package transcript

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// TestPipelineOrder: with several workers and one-line batches (parsed
// out of order), nextBatch hands every line back in file order, malformed
// lines marked with their line, and the last batch ends at the end of the
// last complete line (a torn last line is left).
func TestPipelineOrder(t *testing.T) {
	var buf bytes.Buffer
	const n = 200
	for i := 0; i < n; i++ {
		fmt.Fprintf(&buf, `{"type":"message","id":"m%d","message":{"role":"user","content":"message %d"}}`+"\n", i, i)
		if i%50 == 0 {
			buf.WriteString("\n{not json}\n")
		}
	}
	size := int64(buf.Len())
	buf.WriteString(`{"type":"message","message":{"role":"user","content":"torn`)
	o := Options{Workers: 4, BatchLines: 1, BatchBytes: 1, MaxMessageBytes: 1 << 20}
	p := startPipeline(context.Background(), bytes.NewReader(buf.Bytes()), 0, 0, 0, o)
	defer p.stop()
	next, malformed, line := 0, 0, 0
	for {
		b, err := p.nextBatch()
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.out {
			pl := &b.out[i]
			if b.lines[i].line <= line {
				t.Fatalf("line %d after line %d", b.lines[i].line, line)
			}
			line = b.lines[i].line
			switch pl.kind {
			case plMalformed:
				if pl.lerr.Line != line {
					t.Fatalf("malformed line reported as %d, is %d", pl.lerr.Line, line)
				}
				malformed++
			case plEntry:
				if want := fmt.Sprintf("message %d", next); !bytes.Contains(pl.ent.Message.Raw(), []byte(want)) {
					t.Fatalf("entry %d parsed as %s", next, pl.ent.Message.Raw())
				}
				next++
			}
		}
		if b.last {
			if b.endOffset != size {
				t.Fatalf("last batch ends at %d, want %d (the torn line left)", b.endOffset, size)
			}
			break
		}
		p.release(b)
	}
	if next != n || malformed != 4 {
		t.Fatalf("%d entries, %d malformed; want %d, 4", next, malformed, n)
	}
}
