package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/lossless-engine/contextengine/store"
)

// Checkpoint is an imported file's progress (the store keeps it by agent
// and path; badgerstore as F agent 0x00 path -> JSON).
type Checkpoint = store.FileCheckpoint

// CheckpointValid reports whether the file still holds, byte for byte, the
// part imported before (same first line, same last entry, and the same
// bytes throughout: an edit in the middle, even of the same length, is a
// change), so that only the rest must be read. prefix is left holding the
// hash of [0, cp.Offset) (reset when the checkpoint is not valid).
func CheckpointValid(f *os.File, st os.FileInfo, cp Checkpoint, prefix hash.Hash) bool {
	if st.Size() < cp.Offset || cp.Offset <= 0 || cp.Reconcile != 0 {
		return false
	}
	if HashFirstLine(f) != cp.HeadHash {
		return false
	}
	if h, err := HashRange(f, cp.TailStart, cp.Offset); err != nil || h != cp.TailHash {
		return false
	}
	if _, err := io.Copy(prefix, io.NewSectionReader(f, 0, cp.Offset)); err != nil {
		prefix.Reset()
		return false
	}
	if cp.PrefixHash != "" && hex.EncodeToString(prefix.Sum(nil)) != cp.PrefixHash {
		prefix.Reset()
		return false
	}
	return true
}

// HashFirstLine returns the hex SHA-256 of f's first line (at most its
// first 64 KiB): a checkpoint's HeadHash.
func HashFirstLine(f *os.File) string {
	buf := make([]byte, 64<<10)
	n, _ := f.ReadAt(buf, 0)
	buf = buf[:n]
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i]
	}
	s := sha256.Sum256(buf)
	return hex.EncodeToString(s[:])
}

// HashRange returns the hex SHA-256 of f's bytes [from, to): a
// checkpoint's TailHash.
func HashRange(f *os.File, from, to int64) (string, error) {
	h := sha256.New()
	if to > from {
		if _, err := io.Copy(h, io.NewSectionReader(f, from, to-from)); err != nil {
			return "", fmt.Errorf("lossless: import: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FileTag returns the tag of a session's entry maps in the store
// (store.FileTag): the first 8 bytes of SHA-256("file\x00" + sessionID).
func FileTag(sessionID string) [8]byte {
	s := sha256.Sum256([]byte("file\x00" + sessionID))
	var t [8]byte
	copy(t[:], s[:8])
	return t
}
