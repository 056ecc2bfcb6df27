package lossless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
)

// TestMessageRecordCompression: long compressible bodies are stored
// compressed (record byte 2, smaller), short or incompressible ones as they
// are (record byte 1), and every one decodes to its exact bytes; a
// format-1 record still decodes; a corrupt compressed body is an error.
func TestMessageRecordCompression(t *testing.T) {
	long := []byte(`{"role":"toolResult","toolCallId":"c1","content":[{"type":"text","text":"` +
		string(bytes.Repeat([]byte("func main() { fmt.Println(\"hello\") }\\n"), 40)) + `"}],"timestamp":1700000000000}`)
	short := []byte(`{"role":"user","content":"hi","timestamp":1}`)
	noise := make([]byte, 2048) // incompressible: bytes of a hash chain
	h := hashRaw([]byte("seed"))
	for i := 0; i < len(noise); i += 16 {
		h = hashRaw(h[:])
		copy(noise[i:], h[:])
	}
	for _, c := range []struct {
		name string
		raw  []byte
		kind byte
	}{{"long", long, recordZstd}, {"short", short, recordVersion}, {"noise", noise, recordVersion}} {
		rec := msgRecord{Flags: flagLarge, Tokens: 77, Timestamp: 1700000000000, Role: "toolResult", Hash: hashRaw(c.raw), Raw: c.raw}
		enc := encodeMsg(rec)
		if enc[0] != c.kind {
			t.Errorf("%s: record byte %d, want %d", c.name, enc[0], c.kind)
		}
		if c.kind == recordZstd && len(enc) >= len(c.raw)/2 {
			t.Errorf("%s: %d-byte body stored in %d bytes", c.name, len(c.raw), len(enc))
		}
		got, err := decodeMsg(enc, false)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(got.Raw, c.raw) || got.Tokens != 77 || got.Role != "toolResult" || got.Hash != rec.Hash || got.Flags != flagLarge {
			t.Fatalf("%s: decoded record differs", c.name)
		}
	}
	// A format-1 record (body uncompressed whatever its size) decodes.
	v1 := encodeMsg(msgRecord{Role: "user"})
	v1 = append(v1, long...)
	if got, err := decodeMsg(v1, true); err != nil || !bytes.Equal(got.Raw, long) {
		t.Fatalf("format-1 record: %v", err)
	}
	// A corrupt compressed body is reported, never returned.
	enc := encodeMsg(msgRecord{Role: "user", Raw: long})
	enc[len(enc)-3] ^= 0xff
	if _, err := decodeMsg(enc, false); !errors.Is(err, errBadRecord) {
		t.Fatalf("corrupt compressed body: err %v, want errBadRecord", err)
	}
}

// TestCompressedStoreRoundTrip: through the engine, messages above and
// below the compression threshold come back byte for byte after a reopen,
// and the store holds the long ones compressed.
func TestCompressedStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() *Engine {
		cfg := DefaultConfig()
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
	err := badgerDB(e).View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pMsg}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := it.Item().Value(func(v []byte) error {
				if v[0] == recordZstd {
					compressed++
				}
				return nil
			}); err != nil {
				return err
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
	var orig []byte
	err = badgerDB(e).Update(func(txn *badger.Txn) error {
		v, err := getValue(txn, msgKey(conv.id, 1))
		if err != nil {
			return err
		}
		if v[0] != recordZstd {
			return fmt.Errorf("record byte %d, want a compressed record", v[0])
		}
		orig = bytes.Clone(v)
		v = bytes.Clone(v)
		v[len(v)-4] ^= 0xff // inside the zstd frame
		return txn.Set(msgKey(conv.id, 1), v)
	})
	if err != nil {
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
	if err := badgerDB(e).Update(func(txn *badger.Txn) error { return txn.Set(msgKey(conv.id, 1), orig) }); err != nil {
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
	err = badgerDB(e).Update(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pMsg}})
		defer it.Close()
		type kv struct{ k, v []byte }
		var old []kv
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			r, err := decodeMsg(v, true)
			if err != nil {
				return err
			}
			raw := r.Raw
			r.Raw = nil
			old = append(old, kv{it.Item().KeyCopy(nil), append(encodeMsg(r), raw...)})
		}
		for _, x := range old {
			if x.v[0] != recordVersion {
				return fmt.Errorf("format-1 record byte %d", x.v[0])
			}
			if err := txn.Set(x.k, x.v); err != nil {
				return err
			}
		}
		var m metaRecord
		if err := getJSON(txn, metaKey, &m); err != nil {
			return err
		}
		m.Format = 1
		return setJSON(txn, metaKey, m)
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
	if err := badgerDB(e).View(func(txn *badger.Txn) error { return getJSON(txn, metaKey, &m) }); err != nil {
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
