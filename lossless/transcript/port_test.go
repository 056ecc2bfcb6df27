package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// countPort is a Port for the pipeline alone: it prepares a message by
// recording its bytes and refuses messages holding "refuse". Its store
// methods are never reached by runPipeline.
type countPort struct{}

type countP struct{ raw string }

func (countPort) Store() store.Store { return nil }
func (countPort) CheckSpace() error  { return nil }
func (countPort) Resolve(context.Context, string, string, string, bool) (store.ConvID, error) {
	return store.ConvID{}, errors.New("not here")
}
func (countPort) LockConv(context.Context, store.ConvID) (uint64, func(), error) {
	return 0, nil, errors.New("not here")
}
func (countPort) Conversation(store.ConvID) dag.Store { return nil }
func (countPort) Validate(m core.Message) error {
	if bytes.Contains(m.Raw(), []byte("refuse")) {
		return errors.New("refused")
	}
	return nil
}
func (countPort) Prepare(_ context.Context, p *countP, m core.Message) { p.raw = string(m.Raw()) }
func (countPort) PrepareAll(ctx context.Context, msgs []core.Message) ([]countP, error) {
	return nil, errors.New("not here")
}
func (countPort) StoreMessages(context.Context, store.ConvID, []countP) (int, error) {
	return 0, errors.New("not here")
}
func (countPort) Seq(*countP) uint64            { return 0 }
func (countPort) Hash(*countP) store.Hash       { return store.Hash{} }
func (countPort) SummaryTokens(dag.Summary) int { return 0 }

var _ Port[countP] = countPort{}

// TestPipelineOrderAndValidate: with several workers and one-line batches
// (parsed out of order), the writer sees every line in file order, each
// message prepared by the port or, when the port's Validate refuses it,
// marked invalid with its line; progress reports rising offsets up to the
// end of the last complete line.
func TestPipelineOrderAndValidate(t *testing.T) {
	var buf bytes.Buffer
	const n = 200
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("message %d", i)
		if i%17 == 5 {
			text = fmt.Sprintf("refuse %d", i)
		}
		fmt.Fprintf(&buf, `{"type":"message","id":"m%d","message":{"role":"user","content":%q}}`+"\n", i, text)
		if i%50 == 0 {
			buf.WriteString("\n{not json}\n")
		}
	}
	size := int64(buf.Len())
	buf.WriteString(`{"type":"message","message":{"role":"user","content":"torn`)
	var offsets []int64
	ctx := WithProgress(context.Background(), func(off int64) { offsets = append(offsets, off) })
	o := Options{Workers: 4, BatchLines: 1, BatchBytes: 1, MaxMessageBytes: 1 << 20}
	next, malformed, refused := 0, 0, 0
	err := runPipeline(ctx, Port[countP](countPort{}), bytes.NewReader(buf.Bytes()), 0, 0, 0, o, func(b *lineBatch[countP]) error {
		for i := range b.out {
			pl := &b.out[i]
			switch {
			case pl.kind == plMalformed:
				malformed++
			case pl.invalid:
				refused++
				if want := fmt.Sprintf("m%d", next); pl.ent.ID != want {
					t.Fatalf("refused entry %s, want %s", pl.ent.ID, want)
				}
				next++
			case pl.valid:
				if want := fmt.Sprintf("message %d", next); !bytes.Contains([]byte(pl.p.raw), []byte(want)) {
					t.Fatalf("entry %d prepared as %s", next, pl.p.raw)
				}
				next++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != n || malformed != 4 || refused != 12 {
		t.Fatalf("%d entries, %d malformed, %d refused; want %d, 4, 12", next, malformed, refused, n)
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] < offsets[i-1] {
			t.Fatalf("progress went back: %v", offsets)
		}
	}
	if len(offsets) == 0 || offsets[len(offsets)-1] != size {
		t.Fatalf("last progress %v, want %d (the torn line left)", offsets[len(offsets)-1:], size)
	}
}
