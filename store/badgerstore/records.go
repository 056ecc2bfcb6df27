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

// encodeItem encodes the item record under key (dag.Item without Pos,
// plus flags), checked: recordChecked, flags, ref kind, the ref (uvarint
// seq, or uvarint-prefixed summary id), uvarint tokens, varint depth,
// varint timestamp, uvarint-prefixed role, the checksum. Before format 3
// the first byte was recordVersion and there was no checksum.
func encodeItem(key []byte, it *dag.Item, flags byte) []byte {
	b := newChecked(32 + len(it.Role) + len(it.Ref.ID))
	return seal(key, appendItemBody(b, it, flags))
}

// appendItemBody appends an item record's fields after its first byte.
func appendItemBody(b []byte, it *dag.Item, flags byte) []byte {
	b = append(b, flags, byte(it.Ref.Kind))
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

// decodeItem decodes the item record v stored under key at pos: a
// checked record, or (when legacy) one written before format 3.
func decodeItem(key []byte, pos uint64, v []byte, legacy bool) (store.Item, error) {
	body, err := recordBody(key, v, legacy, len(v) > 0 && v[0] == recordVersion)
	if err != nil {
		return store.Item{}, err
	}
	if len(body) < 2 {
		return store.Item{}, corruptAt(key, "header")
	}
	var it store.Item
	it.Pos = pos
	it.Flags = body[0]
	it.Ref.Kind = dag.RefKind(body[1])
	d := decoder{b: body[2:]}
	switch it.Ref.Kind {
	case dag.RefSummary:
		it.Ref.ID = d.str()
	case dag.RefMessage:
		it.Ref.Seq = d.uvarint()
	default:
		return store.Item{}, corruptAt(key, "ref kind %d", body[1])
	}
	tok := d.uvarint()
	it.Depth = int(d.varint())
	it.Timestamp = d.varint()
	it.Role = d.role()
	if d.err != nil || len(d.b) != 0 || tok > 1<<40 {
		return store.Item{}, corruptAt(key, "fields do not decode")
	}
	it.Tokens = int(tok)
	return it, nil
}

// recordBody returns the body of record v under key whose first byte is a
// version byte: after it when old (a record written before format 3, read
// unchecked when legacy allows it), else the body of the checked record.
func recordBody(key, v []byte, legacy, old bool) ([]byte, error) {
	if old {
		if !legacy {
			return nil, errUnchecked(key)
		}
		return v[1:], nil
	}
	return unseal(key, v)
}

// errUnchecked is the error of a record without a checksum in a store
// created at format 3 or later, where every record has one: a damaged
// first byte.
func errUnchecked(key []byte) error {
	return corruptAt(key, "no checksum, in a store whose every record has one")
}

// encodeSummary encodes the summary record under key, checked:
// recordChecked, dag.Summary's JSON, the checksum (before format 3:
// recordVersion and the JSON).
func encodeSummary(key []byte, s *dag.Summary) ([]byte, error) {
	j, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: encode summary %q: %w", s.ID, err)
	}
	return checked(key, j), nil
}

// decodeSummary decodes the summary record v stored under key (legacy: a
// record written before format 3 is accepted unchecked).
func decodeSummary(key, v []byte, legacy bool) (dag.Summary, error) {
	var s dag.Summary
	body, err := recordBody(key, v, legacy, len(v) > 0 && v[0] == recordVersion)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return dag.Summary{}, corruptAt(key, "%v", err)
	}
	if s.ID == "" {
		return dag.Summary{}, corruptAt(key, "summary without id")
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

// encodeJSON encodes a JSON record (conversation, checkpoints, turns,
// subagents) under key, checked: recordChecked, the encoding/json of v,
// the checksum (before format 3: the JSON alone).
func encodeJSON(key []byte, what string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: encode %s: %w", what, err)
	}
	return checked(key, b), nil
}

// decodeJSON decodes the JSON record b stored under key into v; a record
// written before format 3 (JSON, starting with '{') is accepted unchecked
// when legacy.
func decodeJSON(key, b []byte, legacy bool, v any) error {
	body, err := jsonBody(key, b, legacy)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return corruptAt(key, "%v", err)
	}
	return nil
}

func jsonBody(key, b []byte, legacy bool) ([]byte, error) {
	if len(b) > 0 && b[0] == '{' {
		if !legacy {
			return nil, errUnchecked(key)
		}
		return b, nil
	}
	return unseal(key, b)
}

// encodeMeta encodes the format record: encoding/json, never checked (any
// build must read it to refuse a format it does not know).
func encodeMeta(m store.Meta) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: encode format record: %w", err)
	}
	return b, nil
}

func decodeMeta(b []byte, m *store.Meta) error {
	if err := json.Unmarshal(b, m); err != nil {
		return corruptAt(metaKey, "%v", err)
	}
	return nil
}

// fixedValue encodes a record of a fixed-size body (an integer, an id)
// under key, checked (before format 3: the body alone).
func fixedValue(key, body []byte) []byte { return checked(key, body) }

// decodeFixed returns the n-byte body of record v under key: v itself
// when it is n bytes (written before format 3; accepted when legacy), or
// the body of a checked record.
func decodeFixed(key, v []byte, n int, legacy bool) ([]byte, error) {
	if len(v) == n && !legacy {
		return nil, errUnchecked(key)
	}
	return fixedBody(key, v, n)
}

// textBody returns the body of a text record under key (a large reference,
// a subagent link's session key): a checked record, or (when legacy) a
// record written before format 3, the text itself, which never starts
// with recordChecked.
func textBody(key, v []byte, legacy bool) ([]byte, error) {
	if !isChecked(v) {
		if !legacy {
			return nil, errUnchecked(key)
		}
		return v, nil
	}
	return unseal(key, v)
}
