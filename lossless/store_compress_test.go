package lossless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
)

// TestCompressedStoreRoundTrip: through the engine, messages above and
// below the compression threshold come back byte for byte after a reopen,
// and the store holds the long ones compressed.
func TestCompressedStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() *Engine {
		cfg := config.Default()
		cfg.StoreDir = dir
		e, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	var want [][]byte
	var msgs []core.Message
	for i := 0; i < 40; i++ {
		body := fmt.Sprintf(`{"role":"user","content":%q,"timestamp":%d,"x":{"k":[1,2,3]}}`,
			string(bytes.Repeat([]byte(fmt.Sprintf("line %d of a long paste; ", i)), i*3)), 1700000000000+i)
		m, err := core.ParseMessage([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
		want = append(want, []byte(body))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open()
	defer e.Close()
	var got []core.Message
	if err := e.Messages(ctx, "", "s", func(_ uint64, m core.Message) error {
		got = append(got, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d messages back, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].Raw(), want[i]) {
			t.Fatalf("message %d differs after reopen:\n got %s\nwant %s", i, got[i].Raw(), want[i])
		}
	}
	compressed := 0
	// The store holds what its MessageEncoder makes (PutMessage stores it
	// byte for byte): count the records it makes compressed (record byte
	// 2, badgerstore's).
	enc, ok := e.st.(store.MessageEncoder)
	if !ok {
		t.Fatalf("store %T has no MessageEncoder", e.st)
	}
	conv, err := e.Conversation(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	err = e.st.View(ctx, func(r store.Reader) error {
		for m, err := range r.Messages(conv.id, 0, true) {
			if err != nil {
				return err
			}
			if enc.EncodeMessage(m)[0] == 2 {
				compressed++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if compressed < 30 {
		t.Fatalf("%d of 40 message records compressed, want the long ones (>= 30)", compressed)
	}
}

// TestHeaderReadsSkipTheBody: readers of a message's metadata (MessageMeta,
// used per item by compaction) decode only its header: with the compressed
// body of a stored record corrupted, MessageMeta still answers while
// Message reports the corrupt record.
func TestHeaderReadsSkipTheBody(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	body := `{"role":"user","content":"` + string(bytes.Repeat([]byte("a compressible line of text; "), 40)) + `","timestamp":1700000000000}`
	m, err := core.ParseMessage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: m}); err != nil {
		t.Fatal(err)
	}
	conv, err := e.Conversation(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	var orig store.Message
	err = e.st.View(ctx, func(r store.Reader) error {
		var err error
		orig, err = r.Message(conv.id, 1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if enc, ok := e.st.(store.MessageEncoder); !ok || enc.EncodeMessage(orig)[0] != 2 {
		t.Fatal("the message is not stored compressed")
	}
	if err := corruptMessageBody(ctx, e, conv.id, 1); err != nil {
		t.Fatal(err)
	}
	meta, err := conv.MessageMeta(ctx, 1)
	if err != nil || meta.Role != "user" || meta.Timestamp != 1700000000000 || meta.Tokens <= 0 {
		t.Fatalf("MessageMeta with a corrupt body: %+v, %v (want the header)", meta, err)
	}
	if _, err := conv.Message(ctx, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Message with a corrupt body: err %v, want ErrCorrupt", err)
	}
	// Put the record back for the store invariants checked at cleanup.
	if err := e.st.Update(ctx, func(tx store.Tx) error { return tx.PutMessage(conv.id, orig) }); err != nil {
		t.Fatal(err)
	}
}

// TestFormat1StoreOpens: a store of format 1 (every body uncompressed,
// record byte 1) opens as format 2 with nothing rewritten, returns every
// message byte for byte, and takes new messages (compressed) beside the
// old ones.
func TestFormat1StoreOpens(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cfg := testConfig(dir)
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	mk := func(i int) core.Message {
		body := fmt.Sprintf(`{"role":"user","content":%q,"timestamp":%d}`, string(bytes.Repeat([]byte("old and long text; "), 30+i)), 1700000000000+i)
		m, err := core.ParseMessage([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, []byte(body))
		return m
	}
	var msgs []core.Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, mk(i))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	// Rewrite the store as format 1: uncompressed records, format 1.
	// The store's MessageEncoder encodes a message without a body as a
	// format-1 record (record byte 1, badgerstore's) with an empty body:
	// with the raw bytes appended, it is the format-1 record of the
	// message.
	enc, ok := e.st.(store.MessageEncoder)
	if !ok {
		t.Fatalf("store %T has no MessageEncoder", e.st)
	}
	conv, err := e.Conversation(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	err = e.st.Update(ctx, func(tx store.Tx) error {
		var old []store.Message
		for m, err := range tx.Messages(conv.id, 0, true) {
			if err != nil {
				return err
			}
			head := m
			head.Raw = nil
			m.Encoded = append(enc.EncodeMessage(head), m.Raw...)
			if m.Encoded[0] != 1 {
				return fmt.Errorf("format-1 record byte %d", m.Encoded[0])
			}
			old = append(old, m)
		}
		for _, m := range old {
			if err := tx.PutMessage(conv.id, m); err != nil {
				return err
			}
		}
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		m.Format = 1
		return tx.PutMeta(m)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(ctx, cfg)
	if err != nil {
		t.Fatalf("format-1 store: %v", err)
	}
	defer e.Close()
	var m metaRecord
	if err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		m, err = r.Meta()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if m.Format != FormatVersion {
		t.Fatalf("format %d after open, want %d", m.Format, FormatVersion)
	}
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: mk(10)}); err != nil {
		t.Fatal(err)
	}
	got := storedMessages(t, e, "", "s")
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d differs", i)
		}
	}
	if err := checkInvariants(e); err != nil {
		t.Fatal(err)
	}
}
