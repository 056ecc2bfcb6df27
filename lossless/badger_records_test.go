package lossless

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/lossless-engine/contextengine/dag"
)

// The engine's former record encoders (issue #16: store/badgerstore's
// records.go and compress.go encode records now), kept for the tests that
// still write or read raw records.

const recordVersion = 1

// recordZstd marks a message record whose raw bytes are zstd-compressed
// (in place of recordVersion in its first byte; store format 2).
const recordZstd = 2

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

// Message bodies are stored zstd-compressed (fastest level, one frame per
// message) when they are at least compressMin bytes long and compression
// saves at least an eighth: JSON chat and tool output shrink about 2-3×,
// which keeps the store within 1.5× of the raw JSON even with the recall
// index beside it. Shorter bodies are stored as they are (compression costs
// more than it saves there).
const compressMin = 256

// maxDecodedRaw bounds what one compressed record may decode to, so that a
// corrupt record cannot exhaust memory; a longer body (possible only with
// MaxMessageBytes raised above it) is stored uncompressed.
const maxDecodedRaw = 256 << 20

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

// zstdCodec returns the process's shared encoder and decoder, made on first
// use (EncodeAll and DecodeAll are safe for concurrent use).
func zstdCodec() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		n := min(runtime.GOMAXPROCS(0), 8)
		zstdEnc, zstdErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(n), zstd.WithWindowSize(1<<20), zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(true))
		if zstdErr != nil {
			return
		}
		zstdDec, zstdErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(n),
			zstd.WithDecoderMaxMemory(maxDecodedRaw), zstd.WithDecoderLowmem(true))
	})
	return zstdEnc, zstdDec, zstdErr
}

// compressRaw appends raw, compressed, to dst; on an encoder failure it
// returns dst with raw appended uncompressed plus a byte, which the caller's
// size check rejects.
func compressRaw(dst, raw []byte) []byte {
	enc, _, err := zstdCodec()
	if err != nil {
		return append(append(dst, raw...), 0)
	}
	return enc.EncodeAll(raw, dst)
}

// decompressRaw decodes a compressed message body (checksum verified).
func decompressRaw(z []byte) ([]byte, error) {
	_, dec, err := zstdCodec()
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	raw, err := dec.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return raw, nil
}
