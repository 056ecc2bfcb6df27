package badgerstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// The record encodings of package lossless (store_records.go), byte for
// byte.

// recordVersion is the first byte of message (uncompressed body), item and
// summary records.
const recordVersion = 1

// recordZstd marks a message record whose body is zstd-compressed (in
// place of recordVersion in its first byte; lossless store format 2).
const recordZstd = 2

// errBadRecord is wrapped by every decoder of stored records.
var errBadRecord = fmt.Errorf("badgerstore: %w", store.ErrCorrupt)

func corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadRecord}, a...)...)
}

// encodeMsg encodes a message record: version, flags, uvarint tokens,
// varint timestamp, uvarint-prefixed role, the 16-byte key, then the body;
// a body of compressMin bytes or more (up to maxDecodedRaw) is stored
// zstd-compressed when that saves at least an eighth.
func encodeMsg(m *store.Message) []byte {
	b := make([]byte, 0, 40+len(m.Role)+len(m.Raw))
	b = append(b, recordVersion, m.Flags)
	b = binary.AppendUvarint(b, uint64(m.Tokens))
	b = binary.AppendVarint(b, m.Timestamp)
	b = binary.AppendUvarint(b, uint64(len(m.Role)))
	b = append(b, m.Role...)
	b = append(b, m.Hash[:]...)
	if len(m.Raw) >= compressMin && len(m.Raw) <= maxDecodedRaw {
		hdr := len(b)
		if z := compressRaw(b, m.Raw); len(z)-hdr <= len(m.Raw)-len(m.Raw)/8 {
			z[0] = recordZstd
			return z
		}
	}
	return append(b, m.Raw...)
}

// decodeMsgHead decodes a message record's header into m and returns its
// body as stored (aliasing b; compressed when b[0] is recordZstd).
func decodeMsgHead(b []byte, m *store.Message) ([]byte, error) {
	if len(b) < 2 || (b[0] != recordVersion && b[0] != recordZstd) {
		return nil, corrupt("message %d: header", m.Seq)
	}
	m.Flags = b[1]
	d := decoder{b: b[2:]}
	m.Tokens = int(d.uvarint())
	m.Timestamp = d.varint()
	m.Role = d.role()
	h := d.bytes(16)
	if d.err != nil || m.Tokens < 0 {
		return nil, corrupt("message %d", m.Seq)
	}
	copy(m.Hash[:], h)
	return d.b, nil
}

// decodeMsg decodes a whole message record into m; m.Raw is the caller's
// (a copy of the body, or its decompression).
func decodeMsg(b []byte, m *store.Message) error {
	body, err := decodeMsgHead(b, m)
	if err != nil {
		return err
	}
	if b[0] == recordZstd {
		raw, err := decompressRaw(body)
		if err != nil {
			return corrupt("message %d: body: %v", m.Seq, err)
		}
		if raw == nil {
			raw = []byte{} // nil means a header read
		}
		m.Raw = raw
		return nil
	}
	m.Raw = make([]byte, len(body))
	copy(m.Raw, body)
	return nil
}

// encodeItem encodes an item record (dag.Item without Pos, plus flags):
// version, flags, ref kind, the ref (uvarint seq, or uvarint-prefixed
// summary id), uvarint tokens, varint depth, varint timestamp,
// uvarint-prefixed role.
func encodeItem(it *dag.Item, flags byte) []byte {
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

// checkItem refuses an item its record cannot hold.
func checkItem(it *dag.Item) error {
	switch {
	case it.Ref.Kind != dag.RefMessage && it.Ref.Kind != dag.RefSummary:
		return fmt.Errorf("badgerstore: item at %d: ref kind %d", it.Pos, it.Ref.Kind)
	case it.Tokens < 0 || it.Tokens > 1<<40:
		return fmt.Errorf("badgerstore: item at %d: token count %d", it.Pos, it.Tokens)
	}
	return nil
}

func decodeItem(pos uint64, b []byte) (store.Item, error) {
	if len(b) < 3 || b[0] != recordVersion {
		return store.Item{}, corrupt("item %d: header", pos)
	}
	var it store.Item
	it.Pos = pos
	it.Flags = b[1]
	it.Ref.Kind = dag.RefKind(b[2])
	d := decoder{b: b[3:]}
	switch it.Ref.Kind {
	case dag.RefSummary:
		it.Ref.ID = d.str()
	case dag.RefMessage:
		it.Ref.Seq = d.uvarint()
	default:
		return store.Item{}, corrupt("item %d: ref kind %d", pos, b[2])
	}
	tok := d.uvarint()
	it.Depth = int(d.varint())
	it.Timestamp = d.varint()
	it.Role = d.role()
	if d.err != nil || len(d.b) != 0 || tok > 1<<40 {
		return store.Item{}, corrupt("item %d", pos)
	}
	it.Tokens = int(tok)
	return it, nil
}

// encodeSummary encodes a summary record: recordVersion, then the
// dag.Summary's JSON.
func encodeSummary(s *dag.Summary) ([]byte, error) {
	j, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: encode summary %q: %w", s.ID, err)
	}
	b := make([]byte, 1+len(j))
	b[0] = recordVersion
	copy(b[1:], j)
	return b, nil
}

func decodeSummary(b []byte) (dag.Summary, error) {
	var s dag.Summary
	if len(b) < 1 || b[0] != recordVersion {
		return s, corrupt("summary: header")
	}
	if err := json.Unmarshal(b[1:], &s); err != nil {
		return dag.Summary{}, corrupt("summary: %v", err)
	}
	if s.ID == "" {
		return dag.Summary{}, corrupt("summary without id")
	}
	return s, nil
}

// decoder reads the varints and strings of a record; the first error
// sticks.
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

// role is str for a role: the roles of package core are not allocated
// (assemble decodes an item per context position).
func (d *decoder) role() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errBadRecord
		return ""
	}
	b := d.bytes(int(n))
	return store.Role(b)
}

// encodeJSON encodes a JSON record (meta, conversation, checkpoints, turns,
// subagents) as package lossless does: encoding/json, nothing around it.
func encodeJSON(what string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: encode %s: %w", what, err)
	}
	return b, nil
}

func decodeJSON(what string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return corrupt("%s: %v", what, err)
	}
	return nil
}
