package badgerstore

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Checked records (store format 3). Every record but the format record and
// the messages is written as
//
//	recordChecked, body, CRC-32C(key, recordChecked, body) (4 bytes, big-endian)
//
// where body is the record's format-2 encoding without its own version
// byte (items and summaries) or as it was (the others). The checksum
// covers the key, so a value read under another key fails too. Messages
// keep their encodings (a compressed body has zstd's frame checksum; a
// value in the value log Badger's entry checksum, verified on every read
// with Options.VerifyValueChecksum; a value in a table the block checksum).
//
// A record written before format 3 has no checksum and is read as it is:
// the family's format-2 encoding is told apart from a checked record by
// its length (the 8-byte integers and ids: a checked one is 13 bytes) or
// by its first byte (JSON starts with '{', an item or summary with 1, a
// host entry with the high byte of a sequence number, 0; a checked record
// with 3). Such a record is accepted unchecked (a store is not rewritten
// on open: see doc.go).

// recordChecked is the first byte of a checked record.
const recordChecked = 3

// crcLen is the length of a checked record's checksum.
const crcLen = 4

// checkedOverhead is what a checked record adds to its body.
const checkedOverhead = 1 + crcLen

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordCRC is the checksum of a checked record under key whose bytes
// before the checksum are head.
func recordCRC(key, head []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, head)
}

// newChecked returns a checked record's buffer holding its first byte,
// with room for a body of n bytes and the checksum.
func newChecked(n int) []byte {
	b := make([]byte, 1, checkedOverhead+n)
	b[0] = recordChecked
	return b
}

// seal appends the checksum to b (newChecked's buffer with the body
// appended) for key.
func seal(key, b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, recordCRC(key, b))
}

// checked returns a new checked record of body under key.
func checked(key, body []byte) []byte {
	return seal(key, append(newChecked(len(body)), body...))
}

// isChecked reports whether v is a checked record (by its first byte: the
// caller has ruled out its family's format-2 encoding).
func isChecked(v []byte) bool { return len(v) > 0 && v[0] == recordChecked }

// unseal verifies checked record v under key and returns its body
// (aliasing v). A wrong checksum or a record too short for one is
// store.ErrCorrupt naming the record.
func unseal(key, v []byte) ([]byte, error) {
	if len(v) < checkedOverhead || v[0] != recordChecked {
		return nil, corruptAt(key, "%d-byte value is not a checked record", len(v))
	}
	n := len(v) - crcLen
	want := binary.BigEndian.Uint32(v[n:])
	if got := recordCRC(key, v[:n]); got != want {
		return nil, corruptAt(key, "checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	return v[1:n], nil
}

// fixedBody returns the body of a record whose format-2 encoding is n
// bytes (an integer or an id): v itself when it is n bytes long (written
// before format 3), else the body of the checked record v, which must be n
// bytes.
func fixedBody(key, v []byte, n int) ([]byte, error) {
	if len(v) == n {
		return v, nil
	}
	if len(v) != n+checkedOverhead {
		return nil, corruptAt(key, "%d-byte value", len(v))
	}
	return unseal(key, v)
}

// corruptAt is store.ErrCorrupt for the record under key, named.
func corruptAt(key []byte, format string, a ...any) error {
	return fmt.Errorf("%w: %s: "+format, append([]any{errBadRecord, RecordName(key)}, a...)...)
}

// RecordName names the record stored under key, for errors and reports:
// its family, and the conversation, subagent or agent it belongs to with
// the rest of its key, e.g. `summary "sum_ab12" of conversation
// 0102030405060708`. A key of no known family is named by its bytes.
func RecordName(key []byte) string {
	if len(key) == 0 {
		return "record with an empty key"
	}
	rest := key[1:]
	id := func() (string, []byte, bool) {
		if len(rest) < 8 {
			return "", nil, false
		}
		return hex.EncodeToString(rest[:8]), rest[8:], true
	}
	num := func(b []byte) string {
		if len(b) != 8 {
			return fmt.Sprintf("key %x", b)
		}
		return strconv.FormatUint(binary.BigEndian.Uint64(b), 10)
	}
	agent := func() (string, string) {
		a, r, _ := strings.Cut(string(rest), "\x00")
		return a, r
	}
	switch key[0] {
	case pMeta:
		return "format record"
	case pName:
		a, r := agent()
		return fmt.Sprintf("name %q of agent %q", r, a)
	case pCheck:
		a, r := agent()
		return fmt.Sprintf("checkpoint %q of agent %q", r, a)
	case pSubAlias:
		a, r := agent()
		return fmt.Sprintf("subagent alias %q of agent %q", r, a)
	}
	c, tail, ok := id()
	if !ok {
		return fmt.Sprintf("record under key %x", key)
	}
	switch key[0] {
	case pConv:
		return "conversation record " + c
	case pMsg:
		return fmt.Sprintf("message %s of conversation %s", num(tail), c)
	case pHash:
		return fmt.Sprintf("message key index %x of conversation %s", tail, c)
	case pItem:
		return fmt.Sprintf("item %s of conversation %s", num(tail), c)
	case pLarge:
		return fmt.Sprintf("large reference %s of conversation %s", num(tail), c)
	case pSummary:
		return fmt.Sprintf("summary %q of conversation %s", tail, c)
	case pOrder:
		return fmt.Sprintf("order record %s of conversation %s", num(tail), c)
	case pTurn:
		return fmt.Sprintf("turn %q of conversation %s", tail, c)
	case pEntry:
		if len(tail) < 9 {
			return fmt.Sprintf("entry map record %x of conversation %s", tail, c)
		}
		tag, kind, r := tail[:8], tail[8], tail[9:]
		switch kind {
		case entryIDKind:
			return fmt.Sprintf("entry id %q of file %x of conversation %s", r, tag, c)
		case reconcileKind:
			return fmt.Sprintf("reconcile record of file %x of conversation %s", tag, c)
		case hostKind:
			return fmt.Sprintf("host entry %s of conversation %s", num(r), c)
		}
		return fmt.Sprintf("entry map %c entry %s of file %x of conversation %s", kind, num(r), tag, c)
	case pSub:
		return "subagent record " + c
	case pForkItem:
		return fmt.Sprintf("fork item %s of subagent %s", num(tail), c)
	case pSubLink:
		return fmt.Sprintf("subagent link %x of conversation %s", tail, c)
	}
	return fmt.Sprintf("record under key %x", key)
}
