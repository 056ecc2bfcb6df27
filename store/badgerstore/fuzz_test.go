package badgerstore

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/lossless-engine/contextengine/store"
)

// FuzzDecode feeds arbitrary bytes to every record decoder: none panics,
// each either decodes or fails with store.ErrCorrupt, and a message or item
// that decodes encodes to a record that decodes to the same value.
func FuzzDecode(f *testing.F) {
	for _, g := range golden {
		v, _ := hex.DecodeString(g.value)
		f.Add(v)
	}
	f.Add([]byte{})
	f.Add([]byte{recordVersion, 0, 1})
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
		if it, err := decodeItem(1, b); err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("item: %v", err)
			}
		} else if again, err := decodeItem(1, encodeItem(&it.Item, it.Flags)); err != nil || again != it {
			t.Fatalf("item %+v re-encoded decodes to %+v, %v", it, again, err)
		}
		if _, err := decodeSummary(b); err != nil && !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("summary: %v", err)
		}
	})
}
