package main

import (
	wal "encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
)

// Badger's log entry layout (third_party/badger: value.go, structs.go,
// memtable.go's iterate), read here to tell what a read-only open of a
// store the last process did not close could not read of its memtable
// logs.
const (
	memLogHeaderSize = 20     // vlogHeaderSize: the key id and base IV
	memLogBitTxn     = 1 << 6 // an entry of a transaction
	memLogBitFinTxn  = 1 << 7 // the end of a transaction
	memLogMaxKey     = 1 << 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// memLogEntry decodes the log entry at b[off:]: its length, its meta
// byte, its key and value; ok false when no whole entry with a matching
// checksum starts there.
func memLogEntry(b []byte, off int) (n int, meta byte, key, val []byte, ok bool) {
	if off+2 > len(b) {
		return 0, 0, nil, nil, false
	}
	p := off + 2
	var lens [3]uint64
	for i := range lens {
		v, k := wal.Uvarint(b[p:])
		if k <= 0 {
			return 0, 0, nil, nil, false
		}
		lens[i], p = v, p+k
	}
	klen, vlen := lens[0], lens[1]
	if klen > memLogMaxKey || vlen > uint64(len(b)) || p+int(klen)+int(vlen)+4 > len(b) {
		return 0, 0, nil, nil, false
	}
	end := p + int(klen) + int(vlen)
	if crc32.Checksum(b[off:end], castagnoli) != wal.BigEndian.Uint32(b[end:]) {
		return 0, 0, nil, nil, false
	}
	return end + 4 - off, b[off], b[p : p+int(klen)], b[p+int(klen) : end], true
}

// memLogRead walks a memtable log as Badger's open does: whole
// transactions, up to the first entry that does not read. It returns the
// offset its read ends at (what an open keeps), and after it the count
// of bytes that are not zero and of whole entries found by looking on
// byte by byte (0 and 0: the rest is the zeroed room after the last
// write).
func memLogRead(b []byte) (end, nonZero, entriesAfter int) {
	end = memLogHeaderSize
	off, inTxn := end, false
	for {
		n, meta, key, _, ok := memLogEntry(b, off)
		if !ok || len(key) == 0 {
			break
		}
		switch {
		case meta&memLogBitTxn != 0:
			inTxn = true
		case meta&memLogBitFinTxn != 0:
			inTxn = false
			end = off + n
		case inTxn:
			return readRest(b, end)
		default:
			end = off + n
		}
		off += n
	}
	return readRest(b, end)
}

// readRest is memLogRead's count of what follows end in b.
func readRest(b []byte, end int) (int, int, int) {
	nonZero, entriesAfter := 0, 0
	for _, c := range b[end:] {
		if c != 0 {
			nonZero++
		}
	}
	if nonZero > 0 {
		for p := end; p < len(b); p++ {
			if n, meta, key, _, ok := memLogEntry(b, p); ok && len(key) > 0 {
				// A write whose end is found: an entry of no
				// transaction, or a transaction's end.
				if meta&memLogBitTxn == 0 {
					entriesAfter++
				}
				p += n - 1
			}
		}
	}
	return end, nonZero, entriesAfter
}

// memLogFinding is what doctor found in one memtable log the read could
// not read.
type memLogFinding struct {
	File string `json:"file"`
	// End is where the read of its whole transactions ends.
	End int `json:"end"`
	// NonZero is the count of bytes after End that are not zero;
	// EntriesAfter the finished writes among them (entries whose checksum
	// matches: of no transaction, or a transaction's end).
	NonZero      int `json:"nonZero"`
	EntriesAfter int `json:"entriesAfter"`
}

// scanMemLogs reads the memtable logs (*.mem) of the Badger store at dir
// and returns those with bytes after the end of what an open reads.
func scanMemLogs(dir string) ([]memLogFinding, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.mem"))
	if err != nil {
		return nil, fmt.Errorf("memtable logs of %s: %w", dir, err)
	}
	sort.Strings(names)
	var out []memLogFinding
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return out, fmt.Errorf("memtable log %s cannot be read: %w", name, err)
		}
		if len(b) < memLogHeaderSize {
			continue
		}
		end, nz, after := memLogRead(b)
		if nz > 0 {
			out = append(out, memLogFinding{File: filepath.Base(name), End: end, NonZero: nz, EntriesAfter: after})
		}
	}
	return out, nil
}

// checkMemLogs reports the memtable logs of the Badger store at dir that
// hold more than an open reads (issue 37: a store left unclosed, by a
// SIGKILL or a SIGPIPE, is read with its logs, and what cannot be read of
// them is said): whole entries after the end of the read are a damaged
// log, a problem (what was written after the damage is not shown, and an
// open for writing would cut the log there for good); bytes that do not
// read as an entry are a write the process did not finish, a warning.
func checkMemLogs(rep *doctorReport, dir string, problem, warn func(string, ...any)) {
	found, err := scanMemLogs(dir)
	rep.Store.MemLogs = found
	if err != nil {
		problem("store %s: %v: what the last process wrote before it stopped may be in it; doctor could not check it", rep.Store.Dir, err)
	}
	for _, f := range found {
		if f.EntriesAfter > 0 {
			problem("store %s: memtable log %s is damaged: its read stops at byte %d, and %d finished writes (%d bytes that are not zero) follow: the writes after the damage are not read, so the conversations, messages and summaries shown are older or fewer than were written (left by a process that stopped without closing the store). Do not open the store for writing (import, serve, OpenClaw): that cuts the log at the damage for good. Copy the directory aside (cp -a) first",
				rep.Store.Dir, f.File, f.End, f.EntriesAfter, f.NonZero)
			continue
		}
		warn("store %s: memtable log %s: %d bytes after its last whole transaction (byte %d) do not read as an entry: a write the process did not finish when it stopped (never acknowledged), or a damaged last entry; they are not read",
			rep.Store.Dir, f.File, f.NonZero, f.End)
	}
}

// unclosedNote says, for the error of an open of the Badger store at dir,
// that the last process stopped without closing it and left memtable
// logs: what it wrote that was not yet in a table was in them, and the
// open did not find it there ("" when no log is left).
func unclosedNote(dir string, lock storeLock) string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	if len(names) == 0 || lock.PID == 0 {
		return ""
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	sort.Strings(names)
	return fmt.Sprintf(" (the last process, pid %d, stopped without closing the store and left its memtable logs %v: whatever it wrote that was not yet in a table was in those logs, and the open did not find it there: logs zeroed or damaged from their start lose those writes; do not open the store for writing, which would make them look empty for good: copy the directory aside first)",
		lock.PID, names)
}
