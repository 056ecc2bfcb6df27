package badgerstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/lossless-engine/contextengine/store"
)

// TestMessageRecordCompression: a long compressible body is stored
// compressed (record byte 2) in under half its size, a short or
// incompressible one as it is (record byte 1); every record decodes to the
// message; a format-1 record of a long body decodes; a corrupt compressed
// body is ErrCorrupt. (Moved from package lossless, whose encoder this was
// before the store interface: issue #16.)
func TestMessageRecordCompression(t *testing.T) {
	hash := func(b []byte) store.Hash {
		s := sha256.Sum256(b)
		var h store.Hash
		copy(h[:], s[:16])
		return h
	}
	long := []byte(`{"role":"toolResult","toolCallId":"c1","content":[{"type":"text","text":"` +
		string(bytes.Repeat([]byte("func main() { fmt.Println(\"hello\") }\\n"), 40)) + `"}],"timestamp":1700000000000}`)
	short := []byte(`{"role":"user","content":"hi","timestamp":1}`)
	noise := make([]byte, 2048) // incompressible: bytes of a hash chain
	h := hash([]byte("seed"))
	for i := 0; i < len(noise); i += 16 {
		h = hash(h[:])
		copy(noise[i:], h[:])
	}
	for _, c := range []struct {
		name string
		raw  []byte
		kind byte
	}{{"long", long, recordZstd}, {"short", short, recordVersion}, {"noise", noise, recordVersion}} {
		rec := store.Message{Flags: store.FlagLarge, Tokens: 77, Timestamp: 1700000000000, Role: "toolResult", Hash: hash(c.raw), Raw: c.raw}
		enc := encodeMsg(&rec)
		if enc[0] != c.kind {
			t.Errorf("%s: record byte %d, want %d", c.name, enc[0], c.kind)
		}
		if c.kind == recordZstd && len(enc) >= len(c.raw)/2 {
			t.Errorf("%s: %d-byte body stored in %d bytes", c.name, len(c.raw), len(enc))
		}
		var got store.Message
		if err := decodeMsg(enc, &got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(got.Raw, c.raw) || got.Tokens != 77 || got.Role != "toolResult" || got.Hash != rec.Hash || got.Flags != store.FlagLarge {
			t.Fatalf("%s: decoded record differs", c.name)
		}
	}
	// A format-1 record (body uncompressed whatever its size) decodes.
	v1 := encodeMsg(&store.Message{Role: "user"})
	v1 = append(v1, long...)
	var got store.Message
	if err := decodeMsg(v1, &got); err != nil || !bytes.Equal(got.Raw, long) {
		t.Fatalf("format-1 record: %v", err)
	}
	// A corrupt compressed body is reported, never returned.
	enc := encodeMsg(&store.Message{Role: "user", Raw: long})
	enc[len(enc)-3] ^= 0xff
	if err := decodeMsg(enc, &got); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("corrupt compressed body: err %v, want ErrCorrupt", err)
	}
}
