package lossless

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// msgHash is a message's stable key within its conversation: the first 16
// bytes of SHA-256 over its compacted JSON. The same message delivered again
// (replay, restart, transcript re-read, afterTurn's whole-session view) has
// the same bytes, hence the same key, and is stored once.
type msgHash = store.Hash

func hashRaw(raw []byte) msgHash {
	var buf bytes.Buffer
	src := raw
	if json.Compact(&buf, raw) == nil {
		src = buf.Bytes()
	}
	s := sha256.Sum256(src)
	var h msgHash
	copy(h[:], s[:16])
	return h
}

// Record flags.
const (
	flagHeartbeat = store.FlagHeartbeat // the message was delivered with isHeartbeat
	flagLarge     = store.FlagLarge     // represented in the context by a reference (see pLarge)
	flagHidden    = store.FlagHidden    // never shown: thinking-only/empty assistant turn, excludeFromContext
	// flagSuperseded (items only): the transcript no longer holds the
	// message (the old version of an edit, a deleted entry: reconcile.go);
	// left out of the context until a later read finds it again.
	flagSuperseded = store.FlagSuperseded
)

const recordVersion = 1

// recordZstd marks a message record whose raw bytes are zstd-compressed
// (in place of recordVersion in its first byte; store format 2).
const recordZstd = 2

// errBadRecord is wrapped by every decoder of stored records.
var errBadRecord = fmt.Errorf("lossless: corrupt record: %w", ErrCorrupt)

// msgRecord is a stored message: M conv seq -> encodeMsg.
type msgRecord = store.Message

// encodeMsg encodes a message record; raw bytes of compressMin bytes or
// more (up to maxDecodedRaw, what the decoder accepts) are stored
// zstd-compressed when that saves at least an eighth.
func encodeMsg(r msgRecord) []byte {
	b := make([]byte, 0, 40+len(r.Role)+len(r.Raw))
	b = append(b, recordVersion, r.Flags)
	b = binary.AppendUvarint(b, uint64(r.Tokens))
	b = binary.AppendVarint(b, r.Timestamp)
	b = binary.AppendUvarint(b, uint64(len(r.Role)))
	b = append(b, r.Role...)
	b = append(b, r.Hash[:]...)
	if len(r.Raw) >= compressMin && len(r.Raw) <= maxDecodedRaw {
		hdr := len(b)
		if z := compressRaw(b, r.Raw); len(z)-hdr <= len(r.Raw)-len(r.Raw)/8 {
			z[0] = recordZstd
			return z
		}
	}
	return append(b, r.Raw...)
}

// decodeMsg decodes a message record. Raw aliases b unless copyRaw is set
// or the record is compressed (Raw is then a new slice).
func decodeMsg(b []byte, copyRaw bool) (msgRecord, error) {
	r, body, err := decodeMsgHead(b)
	if err != nil {
		return r, err
	}
	switch {
	case b[0] == recordZstd:
		raw, err := decompressRaw(body)
		if err != nil {
			return msgRecord{}, fmt.Errorf("%w: message body: %w", errBadRecord, err)
		}
		r.Raw = raw
	case copyRaw:
		r.Raw = bytes.Clone(body)
	default:
		r.Raw = body
	}
	return r, nil
}

// decodeMsgHeader decodes a message record without its body (Raw is nil):
// for readers of its flags, tokens, timestamp, role or key, which need not
// decompress it.
func decodeMsgHeader(b []byte) (msgRecord, error) {
	r, _, err := decodeMsgHead(b)
	return r, err
}

func decodeMsgHead(b []byte) (msgRecord, []byte, error) {
	var r msgRecord
	if len(b) < 2 || (b[0] != recordVersion && b[0] != recordZstd) {
		return r, nil, fmt.Errorf("%w: message header", errBadRecord)
	}
	r.Flags = b[1]
	d := decoder{b: b[2:]}
	r.Tokens = int(d.uvarint())
	r.Timestamp = d.varint()
	r.Role = d.str()
	h := d.bytes(16)
	if d.err != nil || r.Tokens < 0 {
		return msgRecord{}, nil, fmt.Errorf("%w: message", errBadRecord)
	}
	copy(r.Hash[:], h)
	return r, d.b, nil
}

// itemRecord is I conv pos -> encodeItem(dag.Item without Pos) plus flags.
func encodeItem(it dag.Item, flags byte) []byte {
	b := make([]byte, 0, 32+len(it.Role)+len(it.Ref.ID))
	b = append(b, recordVersion, flags, byte(it.Ref.Kind))
	switch it.Ref.Kind {
	case dag.RefSummary:
		b = binary.AppendUvarint(b, uint64(len(it.Ref.ID)))
		b = append(b, it.Ref.ID...)
	default:
		b = binary.AppendUvarint(b, it.Ref.Seq)
	}
	b = binary.AppendUvarint(b, uint64(it.Tokens))
	b = binary.AppendVarint(b, int64(it.Depth))
	b = binary.AppendVarint(b, it.Timestamp)
	b = binary.AppendUvarint(b, uint64(len(it.Role)))
	return append(b, it.Role...)
}

func decodeItem(pos uint64, b []byte) (dag.Item, byte, error) {
	if len(b) < 3 || b[0] != recordVersion {
		return dag.Item{}, 0, fmt.Errorf("%w: item header", errBadRecord)
	}
	it := dag.Item{Pos: pos}
	flags := b[1]
	it.Ref.Kind = dag.RefKind(b[2])
	d := decoder{b: b[3:]}
	switch it.Ref.Kind {
	case dag.RefSummary:
		it.Ref.ID = d.str()
	case dag.RefMessage:
		it.Ref.Seq = d.uvarint()
	default:
		return dag.Item{}, 0, fmt.Errorf("%w: item ref kind %d", errBadRecord, b[2])
	}
	tok := d.uvarint()
	it.Depth = int(d.varint())
	it.Timestamp = d.varint()
	it.Role = d.str()
	if d.err != nil || len(d.b) != 0 || tok > 1<<40 {
		return dag.Item{}, 0, fmt.Errorf("%w: item", errBadRecord)
	}
	it.Tokens = int(tok)
	return it, flags, nil
}

func encodeSummary(s dag.Summary) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("lossless: encode summary: %w", err)
	}
	return append([]byte{recordVersion}, b...), nil
}

func decodeSummary(b []byte) (dag.Summary, error) {
	var s dag.Summary
	if len(b) < 1 || b[0] != recordVersion {
		return s, fmt.Errorf("%w: summary header", errBadRecord)
	}
	if err := json.Unmarshal(b[1:], &s); err != nil {
		return dag.Summary{}, fmt.Errorf("%w: summary: %v", errBadRecord, err)
	}
	if s.ID == "" {
		return dag.Summary{}, fmt.Errorf("%w: summary without id", errBadRecord)
	}
	return s, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errBadRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errBadRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errBadRecord
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errBadRecord
		return ""
	}
	return string(d.bytes(int(n)))
}

// itemAt decodes the context item of an item key (a one-byte prefix, an
// 8-byte conversation or subagent id, then the 8-byte position) and its
// value: the item and its flags.
func itemAt(kv *badger.Item) (dag.Item, byte, error) {
	pos, _ := getU64(kv.Key()[9:])
	var item dag.Item
	var flags byte
	err := kv.Value(func(v []byte) error {
		var err error
		item, flags, err = decodeItem(pos, v)
		return err
	})
	return item, flags, err
}

// badgerItemsReverse scans the item records under prefix (a fork
// snapshot's) from seek down, as store.Reader's Items scans a
// conversation's in reverse; the loop breaking ends it. Transitional
// (#16): store.Reader scans a fork snapshot forward only (ForkItems), and
// the fork prefix of a subagent's assemble walks back from its newest item.
func badgerItemsReverse(txn *badger.Txn, prefix, seek []byte) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		for it.Seek(seek); it.Valid(); it.Next() {
			item, flags, err := itemAt(it.Item())
			if !yield(store.Item{Item: item, Flags: flags}, err) || err != nil {
				return
			}
		}
	}
}
