package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/third_party/badger"
	"github.com/lossless-engine/contextengine/third_party/badger/options"

	"github.com/lossless-engine/contextengine/store"
)

// Options configures Open. The sizes mirror lossless.BadgerConfig (bytes;
// a count for NumMemtables); zero takes the default.
type Options struct {
	// Dir is the store's directory (required). Badger's files are its
	// regular files; subdirectories (the engine's recall index) are not
	// the store's.
	Dir string
	// SyncWrites fsyncs every commit (survives power loss); without it a
	// process crash still loses no committed write.
	SyncWrites bool
	// ReadOnly opens the store for reading only: Badger maps nothing new
	// and changes nothing, so it opens even on a full disk; Update and
	// NewBatch fail with store.ErrReadOnly. A store Badger must recover
	// first (the last process died) is refused read-only.
	ReadOnly bool

	// MemTableSize: default 8 MiB. MaxTxnBytes is derived from it.
	MemTableSize int64
	// ValueLogFileSize: default 64 MiB.
	ValueLogFileSize int64
	// BlockCacheSize: default 8 MiB.
	BlockCacheSize int64
	// IndexCacheSize: default 4 MiB.
	IndexCacheSize int64
	// NumMemtables: default 2.
	NumMemtables int

	// FreeSpace, when set, replaces the lookup of the free bytes of the
	// filesystem holding Dir that the disk-space guard makes (space.go):
	// tests make a disk look full, or roomy, with it.
	FreeSpace func(dir string) (uint64, error)
	// CloseGrace is how long Close waits for Badger to finish closing once
	// a write met a full disk, before it returns ErrCloseUnfinished
	// (store.go): default 3s.
	CloseGrace time.Duration
}

// Defaults of Options (those of lossless/config.Default's Badger section:
// small, for an embedded library; about 14 MB of heap).
const (
	DefaultMemTableSize     = 8 << 20
	DefaultValueLogFileSize = 64 << 20
	DefaultBlockCacheSize   = 8 << 20
	DefaultIndexCacheSize   = 4 << 20
	DefaultNumMemtables     = 2
	// DefaultCloseGrace is Options.CloseGrace's default.
	DefaultCloseGrace = 3 * time.Second
)

// withDefaults returns a copy of o with every zero size set to its default.
func (o Options) withDefaults() Options {
	if o.MemTableSize <= 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.ValueLogFileSize <= 0 {
		o.ValueLogFileSize = DefaultValueLogFileSize
	}
	if o.BlockCacheSize <= 0 {
		o.BlockCacheSize = DefaultBlockCacheSize
	}
	if o.IndexCacheSize <= 0 {
		o.IndexCacheSize = DefaultIndexCacheSize
	}
	if o.NumMemtables <= 0 {
		o.NumMemtables = DefaultNumMemtables
	}
	if o.CloseGrace <= 0 {
		o.CloseGrace = DefaultCloseGrace
	}
	return o
}

func (o Options) validate() error {
	if o.Dir == "" {
		return errors.New("badgerstore: open: Options.Dir is empty")
	}
	return nil
}

// badgerLogger routes Badger's log to slog: warnings and errors only,
// except the block-cache statistics Badger prints as warnings every minute
// while a large store is read: the small cache is the engine's choice
// (Options), so they go to debug.
//
// An error that says the disk is full (Badger's flush or compaction that
// could not allocate its table, which Badger retries on its own) trips the
// store's space guard: writes are refused from then on (space.go), and
// Close waits only CloseGrace for a flush that cannot happen (then says
// the directory stays locked: ErrCloseUnfinished).
type badgerLogger struct{ space *spaceGuard }

func (l badgerLogger) Errorf(f string, a ...any) {
	msg := fmt.Sprintf(f, a...)
	if l.space != nil && noSpaceText(msg) {
		l.space.trip(msg)
	}
	slog.Error("badgerstore: badger: " + msg)
}
func (badgerLogger) Warningf(f string, a ...any) {
	msg := fmt.Sprintf(f, a...)
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "Block cache might be too small") || strings.HasPrefix(msg, "Cache life expectancy") {
		level = slog.LevelDebug
	}
	slog.Log(context.Background(), level, "badgerstore: badger: "+msg)
}
func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}

// badgerOptions returns Badger's options for o (defaults filled): those of
// package lossless (store.go), option for option.
func badgerOptions(o Options, g *spaceGuard) badger.Options {
	opt := badger.DefaultOptions(o.Dir).
		WithLogger(badgerLogger{space: g}).
		WithSyncWrites(o.SyncWrites).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(o.NumMemtables).
		WithValueLogFileSize(o.ValueLogFileSize).
		WithBlockCacheSize(o.BlockCacheSize).
		WithIndexCacheSize(o.IndexCacheSize).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithNumCompactors(2).
		// No block compression: a table builder then holds its table
		// once, not its blocks uncompressed and again compressed. With
		// ZSTD, compactions' builders (up to 8 + 5 per compaction, two
		// compactions) were the largest part of a bulk load's heap peak:
		// 260.6 MB at 200K messages against 170.9 MB without, for 2.4%
		// more disk (1.225x -> 1.254x the raw JSON), since message bodies
		// of 256 bytes or more are zstd-compressed in their records
		// already and larger values live in the value log, which Badger
		// never compresses. Tables written compressed by earlier versions
		// stay readable: the manifest records each table's compression.
		WithCompression(options.None).
		WithValueThreshold(valueThreshold).
		WithDetectConflicts(false).
		// Every SST block read from disk is checked against its checksum,
		// so a corrupt block is an error, never a silently short read.
		WithChecksumVerificationMode(options.OnBlockRead).
		// Every value read from the value log is checked against its
		// entry's checksum (CRC-32C): a large message stored uncompressed
		// has no checksum of its own.
		WithVerifyValueChecksum(true).
		WithReadOnly(o.ReadOnly)
	// Every table of every level is BaseTableSize (2 MiB), not twice the
	// size of the level above's: a compaction runs up to 8 + 5 table
	// builders at once, each allocating twice its table's size on the Go
	// heap, so with growing table sizes a bulk load's heap grew with the
	// store (8 MiB tables at the bottom of a 1M-message store). Smaller
	// bottom tables only mean more files.
	opt.TableSizeMultiplier = 1
	return opt
}

// openBadger opens the database of o (defaults filled).
func openBadger(o Options, g *spaceGuard) (*badger.DB, error) {
	if err := checkManifest(o.Dir, o.ReadOnly); err != nil {
		return nil, err
	}
	db, err := badger.Open(badgerOptions(o, g))
	if err != nil && !o.ReadOnly && strings.Contains(err.Error(), "Create a new file") {
		// A process killed as Badger created a memtable file leaves it
		// empty, and the first open fails on it (and truncates it); the
		// second succeeds (Badger issue #2207).
		db, err = badger.Open(badgerOptions(o, g))
	}
	if err != nil && errors.Is(err, badger.ErrEncryptionKeyMismatch) {
		// The store is not encrypted (badgerOptions sets no key): Badger
		// reports a KEYREGISTRY whose sanity text it cannot read so.
		return nil, fmt.Errorf("badgerstore: open %s: its KEYREGISTRY file is damaged (%w, but the store is not encrypted): %w (the file holds no key of an unencrypted store: moved away, Badger writes a new one at the next open for writing)",
			o.Dir, err, store.ErrCorrupt)
	}
	if err != nil && noSpace(err) {
		// Badger could not allocate its value log or memtable log.
		return nil, fmt.Errorf("badgerstore: open %s: %w: %v (free some space; everything stored stays readable)", o.Dir, store.ErrDiskFull, err)
	}
	if err != nil {
		return nil, fmt.Errorf("badgerstore: open %s: %w", o.Dir, err)
	}
	return db, nil
}

// checkManifest refuses a directory that holds Badger's data files (tables,
// value logs, memtable logs) but no MANIFEST, the file that lists its
// tables: Badger would open it as a new, empty database and delete the
// tables it does not list. Badger creates the MANIFEST before any data
// file, so a store whose first open was interrupted never looks like this:
// the MANIFEST was lost or moved, and the data is still there. Read-only,
// a directory without a MANIFEST nor data files holds no store: an error
// wrapping store.ErrNotFound says so (Badger's would be "no manifest
// found, required for read-only db").
func checkManifest(dir string, readOnly bool) error {
	if _, err := os.Stat(filepath.Join(dir, badger.ManifestFilename)); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // there is one (or Badger reports why it cannot read it)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !readOnly {
			return nil
		}
		return fmt.Errorf("badgerstore: open %s: %w", dir, err)
	}
	var data []string
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case ".sst", ".vlog", ".mem":
			data = append(data, e.Name())
		}
	}
	if len(data) == 0 {
		if readOnly {
			return fmt.Errorf("badgerstore: open %s read-only: no store here (no %s): %w", dir, badger.ManifestFilename, store.ErrNotFound)
		}
		return nil
	}
	if len(data) > 3 {
		data = append(data[:3], "…")
	}
	return fmt.Errorf("badgerstore: open %s: it holds Badger data files (%s) but no %s, which lists them: %w (refused: Badger would start an empty store and delete the tables; nothing was changed)",
		dir, strings.Join(data, ", "), badger.ManifestFilename, store.ErrCorrupt)
}
