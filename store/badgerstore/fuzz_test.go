package badgerstore

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// fuzzKey is the key the fuzzed records are decoded under.
var fuzzKey = itemKey(gConv, 7)

// FuzzDecode feeds arbitrary bytes to every record decoder, in a store
// created before format 3 (records without a checksum accepted) and in one
// created at format 3: none panics, each either decodes or fails with
// store.ErrCorrupt, and a message, item or summary that decodes encodes to
// a record that decodes to the same value.
func FuzzDecode(f *testing.F) {
	for _, g := range append(append([]goldenKV{}, golden2...), golden3...) {
		v, _ := hex.DecodeString(g.value)
		f.Add(v)
	}
	f.Add([]byte{})
	f.Add([]byte{recordVersion, 0, 1})
	f.Add([]byte{recordChecked, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m store.Message
		if err := decodeMsg(b, &m); err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("message: %v", err)
			}
		} else {
			var again store.Message
			if err := decodeMsg(encodeMsg(&m), &again); err != nil || !reflect.DeepEqual(again, m) {
				t.Fatalf("message %+v re-encoded decodes to %+v, %v", m, again, err)
			}
		}
		var h store.Message
		if _, err := decodeMsgHead(b, &h); err != nil && !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("message header: %v", err)
		}
		corruptOnly := func(what string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("%s: %v", what, err)
			}
		}
		for _, legacy := range []bool{true, false} {
			if it, err := decodeItem(fuzzKey, 7, b, legacy); err != nil {
				corruptOnly("item", err)
			} else if again, err := decodeItem(fuzzKey, 7, encodeItem(fuzzKey, &it.Item, it.Flags), false); err != nil || again != it {
				t.Fatalf("item %+v re-encoded decodes to %+v, %v", it, again, err)
			}
			if s, err := decodeSummary(fuzzKey, b, legacy); err != nil {
				corruptOnly("summary", err)
			} else {
				enc, err := encodeSummary(fuzzKey, &s)
				if err != nil {
					t.Fatal(err)
				}
				if again, err := decodeSummary(fuzzKey, enc, false); err != nil || !reflect.DeepEqual(again, s) {
					t.Fatalf("summary %+v re-encoded decodes to %+v, %v", s, again, err)
				}
			}
			var tr store.Turn
			corruptOnly("json", decodeJSON(fuzzKey, b, legacy, &tr))
			_, err := decodeFixed(fuzzKey, b, 8, legacy)
			corruptOnly("fixed", err)
			_, err = decodeHostEntry(fuzzKey, b, legacy)
			corruptOnly("host entry", err)
			_, err = textBody(fuzzKey, b, legacy)
			corruptOnly("text", err)
		}
	})
}

// FuzzCheckedFlip encodes a record of every checked family and changes one
// byte of it (at any offset, by any nonzero mask): in a store created at
// format 3 every such record fails to decode with store.ErrCorrupt, and so
// does the unchanged record read under another key. It never decodes to
// an altered value.
func FuzzCheckedFlip(f *testing.F) {
	f.Add("sum_abc", "what happened: getAvailableModels", uint64(65536), uint(3), byte(0x20))
	f.Add("", "", uint64(0), uint(0), byte(0x02))
	f.Add("x", "y", uint64(1<<60), uint(200), byte(0xff))
	f.Fuzz(func(t *testing.T, id, text string, n uint64, off uint, mask byte) {
		if mask == 0 {
			return
		}
		if id == "" {
			id = "s"
		}
		key := summaryKey(gConv, id)
		other := summaryKey(gConv2, id)
		it := dag.Item{Pos: n, Ref: dag.SummaryRef(id), Tokens: int(n % (1 << 40)), Depth: 2, Timestamp: int64(n), Role: text}
		sum, err := encodeSummary(key, &dag.Summary{ID: id, Text: text, Tokens: int(n % 1000)})
		if err != nil {
			t.Fatal(err)
		}
		js, err := encodeJSON(key, "turn", store.Turn{LogicalTurnID: text, Seqs: []uint64{n}})
		if err != nil {
			t.Fatal(err)
		}
		decoders := []struct {
			name string
			rec  []byte
			dec  func(key, v []byte) error
		}{
			{"item", encodeItem(key, &it, 1), func(k, v []byte) error { _, err := decodeItem(k, n, v, false); return err }},
			{"summary", sum, func(k, v []byte) error { _, err := decodeSummary(k, v, false); return err }},
			{"json", js, func(k, v []byte) error { var tr store.Turn; return decodeJSON(k, v, false, &tr) }},
			{"u64", fixedValue(key, u64Bytes(n)), func(k, v []byte) error { _, err := decodeFixed(k, v, 8, false); return err }},
			{"host entry", encodeHostEntry(key, &store.HostEntry{Seq: n, EntryID: text}), func(k, v []byte) error {
				_, err := decodeHostEntry(k, v, false)
				return err
			}},
			{"text", checked(key, []byte(text)), func(k, v []byte) error { _, err := textBody(k, v, false); return err }},
		}
		for _, d := range decoders {
			if err := d.dec(key, d.rec); err != nil {
				t.Fatalf("%s: intact record: %v", d.name, err)
			}
			if err := d.dec(other, d.rec); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("%s: read under another key: err %v, want ErrCorrupt", d.name, err)
			}
			bad := append([]byte(nil), d.rec...)
			bad[int(off%uint(len(bad)))] ^= mask
			if err := d.dec(key, bad); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("%s: byte %d ^ %#x: err %v, want ErrCorrupt", d.name, off%uint(len(bad)), mask, err)
			}
		}
	})
}
