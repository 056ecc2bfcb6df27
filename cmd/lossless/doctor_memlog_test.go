package main

import (
	wal "encoding/binary"
	"hash/crc32"
	"testing"
)

// memLogAppend appends one Badger log entry (header, key, value, CRC-32C)
// to b.
func memLogAppend(b []byte, meta byte, key, val string) []byte {
	start := len(b)
	b = append(b, meta, 0)
	b = wal.AppendUvarint(b, uint64(len(key)))
	b = wal.AppendUvarint(b, uint64(len(val)))
	b = wal.AppendUvarint(b, 0)
	b = append(b, key...)
	b = append(b, val...)
	return wal.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// TestMemLogRead: the walk of a memtable log ends after its last whole
// transaction; what follows is counted (bytes not zero, whole entries).
func TestMemLogRead(t *testing.T) {
	log := func(room int) []byte {
		b := make([]byte, memLogHeaderSize)
		b = memLogAppend(b, 0, "k1", "v1")
		b = memLogAppend(b, memLogBitTxn, "k2", "v2")
		b = memLogAppend(b, memLogBitTxn, "k3", "v3")
		b = memLogAppend(b, memLogBitFinTxn, "!badger!txn", "7")
		b = memLogAppend(b, 0, "k4", "v4")
		return append(b, make([]byte, room)...)
	}
	whole := log(0)
	n := len(whole)
	if end, nz, after := memLogRead(log(4096)); end != n || nz != 0 || after != 0 {
		t.Fatalf("a whole log: end %d (want %d), %d bytes not zero, %d entries after", end, n, nz, after)
	}
	// A transaction without its end: the read ends before it; it is no
	// finished write (the process stopped while writing it).
	cut := memLogAppend(log(0), memLogBitTxn, "k5", "v5")
	cut = append(cut, make([]byte, 100)...)
	if end, nz, after := memLogRead(cut); end != n || nz == 0 || after != 0 {
		t.Fatalf("a cut transaction: end %d (want %d), %d bytes not zero, %d writes after (want 0)", end, n, nz, after)
	}
	// The first entry damaged: nothing reads, the three finished writes
	// after it (a transaction, an entry) are found.
	bad := log(100)
	bad[memLogHeaderSize+5] ^= 0x10
	if end, nz, after := memLogRead(bad); end != memLogHeaderSize || nz == 0 || after != 2 {
		t.Fatalf("a damaged first entry: end %d, %d bytes not zero, %d writes after (want 2)", end, nz, after)
	}
}

// FuzzMemLogRead: any bytes are walked without a panic, the end within
// the file.
func FuzzMemLogRead(f *testing.F) {
	b := make([]byte, memLogHeaderSize)
	b = memLogAppend(b, 0, "key", "value")
	f.Add(b)
	f.Add(memLogAppend(b, memLogBitTxn, "k", "v"))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < memLogHeaderSize {
			return
		}
		end, nz, after := memLogRead(b)
		if end < memLogHeaderSize || end > len(b) || nz < 0 || nz > len(b)-end || after < 0 {
			t.Fatalf("end %d of %d bytes, %d not zero, %d after", end, len(b), nz, after)
		}
	})
}
