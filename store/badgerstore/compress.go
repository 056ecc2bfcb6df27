package badgerstore

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Message bodies are stored zstd-compressed (fastest level, one frame per
// message, checksummed) when they are at least compressMin bytes long and
// compression saves at least an eighth; shorter bodies are stored as they
// are. The settings are those package lossless used before it stored
// through this package (format 2): a record must come out byte for byte
// the same.
const compressMin = 256

// maxDecodedRaw bounds what one compressed record may decode to, so that a
// corrupt record cannot exhaust memory; a longer body is stored
// uncompressed.
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
