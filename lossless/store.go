package lossless

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/lossless-engine/contextengine/core"
)

// FormatVersion is the store format this build writes. A store with a
// higher version is refused (core.ErrFormatTooNew); a lower one is migrated
// on open.
const FormatVersion = 2

// DefaultMaxMessageBytes is the default of Config.MaxMessageBytes.
const DefaultMaxMessageBytes = 32 << 20

// Key prefixes (see doc.go for the layout).
const (
	pMeta    = 0x00 // 0x00 "format" -> metaRecord JSON
	pConv    = 'C'  // C conv(8) -> convRecord JSON
	pName    = 'N'  // N agent 0x00 kind:name -> conv(8)
	pMsg     = 'M'  // M conv(8) seq(8) -> message record
	pHash    = 'H'  // H conv(8) hash(16) -> seq(8)
	pItem    = 'I'  // I conv(8) pos(8) -> item record
	pLarge   = 'L'  // L conv(8) seq(8) -> large-content description (text)
	pSummary = 'S'  // S conv(8) id -> summary record
	pCheck   = 'F'  // F agent 0x00 path -> import checkpoint JSON
)

// posStep is the gap between consecutive appended positions: positions are
// sparse so that a range can be replaced by one summary at its first
// position without renumbering anything.
const posStep = 1 << 16

type convID [8]byte

func (c convID) String() string { return fmt.Sprintf("%x", c[:]) }

var metaKey = []byte{pMeta, 'f', 'o', 'r', 'm', 'a', 't'}

type metaRecord struct {
	Format int    `json:"format"`
	Engine string `json:"engine"`
	// Tokenizer is the counter the stored token counts were made with.
	Tokenizer string `json:"tokenizer"`
}

// convRecord is a conversation's record: C conv -> JSON.
type convRecord struct {
	Agent string `json:"agent"`
	// Key is the sessionKey the conversation is keyed by ("" when keyed by
	// its first session id).
	Key        string   `json:"key,omitempty"`
	SessionIDs []string `json:"sessionIds"`
	Created    int64    `json:"created"`
	Updated    int64    `json:"updated"`
	// NextSeq is the sequence number of the next message, NextPos the
	// position of the next appended item.
	NextSeq   uint64 `json:"nextSeq"`
	NextPos   uint64 `json:"nextPos"`
	Messages  int64  `json:"messages"`
	Bytes     int64  `json:"bytes"`
	Summaries int64  `json:"summaries"`
	// Tokens is the total token count of the stored messages.
	Tokens int64 `json:"tokens"`
	// Retiring is set, before anything is deleted, on a conversation a
	// retention pass is deleting: a pass interrupted midway (Close, a
	// crash) leaves it partly deleted, which reads then report as such
	// (ErrRetiring) rather than as corruption, and the next pass finishes.
	Retiring bool `json:"retiring,omitempty"`
}

func convKey(c convID) []byte { return append([]byte{pConv}, c[:]...) }

func nameKey(agent, name string) []byte {
	k := make([]byte, 0, 2+len(agent)+len(name))
	k = append(k, pName)
	k = append(k, agent...)
	k = append(k, 0)
	return append(k, name...)
}

func seqKey(prefix byte, c convID, seq uint64) []byte {
	k := make([]byte, 17)
	k[0] = prefix
	copy(k[1:9], c[:])
	binary.BigEndian.PutUint64(k[9:], seq)
	return k
}

func msgKey(c convID, seq uint64) []byte   { return seqKey(pMsg, c, seq) }
func itemKey(c convID, pos uint64) []byte  { return seqKey(pItem, c, pos) }
func largeKey(c convID, seq uint64) []byte { return seqKey(pLarge, c, seq) }

func hashKey(c convID, h msgHash) []byte {
	k := make([]byte, 25)
	k[0] = pHash
	copy(k[1:9], c[:])
	copy(k[9:], h[:])
	return k
}

func summaryKey(c convID, id string) []byte {
	return append(append([]byte{pSummary}, c[:]...), id...)
}

func checkKey(agent, path string) []byte {
	k := append([]byte{pCheck}, agent...)
	k = append(k, 0)
	return append(k, path...)
}

func convPrefix(prefix byte, c convID) []byte { return append([]byte{prefix}, c[:]...) }

// newConvID derives a conversation id from its agent and first name.
func newConvID(agent, name string) convID {
	h := sha256.Sum256([]byte(agent + "\x00" + name))
	var c convID
	copy(c[:], h[:8])
	return c
}

// badgerLogger routes Badger's log to slog: warnings and errors only,
// except the block-cache statistics Badger prints as warnings every minute
// while a large store is read: the small cache is this engine's choice
// (Config.Badger), so they go to debug.
type badgerLogger struct{}

func (badgerLogger) Errorf(f string, a ...any) {
	slog.Error("lossless: badger: " + fmt.Sprintf(f, a...))
}
func (badgerLogger) Warningf(f string, a ...any) {
	msg := fmt.Sprintf(f, a...)
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "Block cache might be too small") || strings.HasPrefix(msg, "Cache life expectancy") {
		level = slog.LevelDebug
	}
	slog.Log(context.Background(), level, "lossless: badger: "+msg)
}
func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}

func badgerOptions(cfg Config) badger.Options {
	b := cfg.Badger
	opt := badger.DefaultOptions(cfg.StoreDir).
		WithLogger(badgerLogger{}).
		WithSyncWrites(cfg.SyncWrites).
		WithMemTableSize(b.MemTableSize).
		WithNumMemtables(b.NumMemtables).
		WithValueLogFileSize(b.ValueLogFileSize).
		WithBlockCacheSize(b.BlockCacheSize).
		WithIndexCacheSize(b.IndexCacheSize).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithNumCompactors(2).
		WithCompression(options.ZSTD).
		WithZSTDCompressionLevel(1).
		WithValueThreshold(1 << 10).
		WithDetectConflicts(false).
		// Every SST block read from disk is checked against its checksum,
		// so a corrupt block is an error, never a silently short read.
		WithChecksumVerificationMode(options.OnBlockRead).
		WithReadOnly(cfg.ReadOnly)
	// Every table of every level is BaseTableSize (2 MiB), not twice the
	// size of the level above's: a compaction runs up to 8 + 5 table
	// builders at once, each allocating twice its table's size on the Go
	// heap, so with growing table sizes a bulk load's heap grew with the
	// store (8 MiB tables at the bottom of a 1M-message store). Smaller
	// bottom tables only mean more files.
	opt.TableSizeMultiplier = 1
	return opt
}

func openBadger(cfg Config) (*badger.DB, error) {
	db, err := badger.Open(badgerOptions(cfg))
	if err != nil && !cfg.ReadOnly && strings.Contains(err.Error(), "Create a new file") {
		// A process killed as Badger created a memtable file leaves it
		// empty, and the first open fails on it (and truncates it); the
		// second succeeds (Badger issue #2207).
		db, err = badger.Open(badgerOptions(cfg))
	}
	if err != nil {
		return nil, fmt.Errorf("lossless: open store %s: %w", cfg.StoreDir, err)
	}
	return db, nil
}

// checkFormat writes the format record of a new store, refuses a newer
// format or another engine's store, and migrates an older format.
func (e *Engine) checkFormat() error {
	if e.cfg.ReadOnly {
		return e.db.View(func(txn *badger.Txn) error {
			var m metaRecord
			if err := getJSON(txn, metaKey, &m); err != nil {
				return fmt.Errorf("lossless: store %s: read format: %w", e.cfg.StoreDir, err)
			}
			if m.Engine != EngineID {
				return fmt.Errorf("lossless: store %s was written by engine %q, not %q", e.cfg.StoreDir, m.Engine, EngineID)
			}
			if m.Format > FormatVersion {
				return fmt.Errorf("lossless: store %s has format %d, this build reads up to %d: %w",
					e.cfg.StoreDir, m.Format, FormatVersion, core.ErrFormatTooNew)
			}
			return nil
		})
	}
	return e.db.Update(func(txn *badger.Txn) error {
		it, err := txn.Get(metaKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return setJSON(txn, metaKey, metaRecord{Format: FormatVersion, Engine: EngineID, Tokenizer: e.cfg.Tokenizer})
		}
		if err != nil {
			return fmt.Errorf("lossless: read format: %w", err)
		}
		var m metaRecord
		if err := it.Value(func(v []byte) error { return json.Unmarshal(v, &m) }); err != nil {
			return fmt.Errorf("lossless: read format: %w", err)
		}
		if m.Engine != EngineID {
			return fmt.Errorf("lossless: store %s was written by engine %q, not %q", e.cfg.StoreDir, m.Engine, EngineID)
		}
		if m.Format > FormatVersion {
			return fmt.Errorf("lossless: store %s has format %d, this build reads up to %d: %w",
				e.cfg.StoreDir, m.Format, FormatVersion, core.ErrFormatTooNew)
		}
		if m.Format < FormatVersion {
			// Format 0 (never released) had no tokenizer field. Format 1
			// stored every message body uncompressed (record byte 1); format
			// 2 may compress it (record byte 2) and reads format-1 records
			// as they are, so nothing is rewritten.
			m.Format = FormatVersion
			if m.Tokenizer == "" {
				m.Tokenizer = e.cfg.Tokenizer
			}
			return setJSON(txn, metaKey, m)
		}
		if m.Tokenizer != "" && m.Tokenizer != e.cfg.Tokenizer {
			slog.Warn("lossless: store token counts were made with another tokenizer",
				"store", m.Tokenizer, "config", e.cfg.Tokenizer)
		}
		return nil
	})
}

func setJSON(txn *badger.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("lossless: encode: %w", err)
	}
	if err := txn.Set(key, b); err != nil {
		return fmt.Errorf("lossless: write: %w", err)
	}
	return nil
}

func getJSON(txn *badger.Txn, key []byte, v any) error {
	it, err := txn.Get(key)
	if err != nil {
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("lossless: %w", core.ErrNotFound)
		}
		return fmt.Errorf("lossless: read: %w", err)
	}
	return it.Value(func(b []byte) error {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("lossless: decode record %q: %w", key[:1], err)
		}
		return nil
	})
}

// convState is the in-memory state of one conversation: its lock (held by
// every write to it) and its record. It lives in a cache bounded in bytes
// and may be evicted when idle (asmcache.go): lock it only through
// lockLive, lockConv or lockWindow.
type convState struct {
	mu  sync.Mutex
	id  convID
	rec convRecord
	// loaded is true once rec was read from the store.
	loaded bool
	// dead is set when the state was evicted (with mu and asmMu held): a
	// goroutine that locked it looks the conversation up again.
	dead bool

	// asmMu guards the parsed messages and rendered summaries of the last
	// assembled context, reused by the next Assemble (most of a context is
	// the same from one turn to the next).
	asmMu   sync.Mutex
	asmMsgs map[uint64]core.Message
	asmSums map[string]core.Message

	// lastBudget is the largest token budget of the assembles of the
	// conversation's latest turn: the host's own figure (net of its
	// reserve, system prompt and prompt), which the compaction decision
	// after a committed turn measures against. OpenClaw assembles again
	// before each model call of a tool loop with budgets net of the turn's
	// pending messages; those messages are then committed, so the first
	// (largest) budget is the one to measure them against. budgetOpen is
	// true while the turn runs (set by assemble, cleared by the commit).
	lastBudget atomic.Int64
	budgetOpen atomic.Bool

	// The cache's bookkeeping, guarded by Engine.convMu (asmcache.go):
	// the state's element in the LRU list, its estimated cost in bytes and
	// the parts of it from the window and the record, the resolution keys
	// cached to it, and its display name (sessionName).
	el       *list.Element
	cost     int64
	winBytes int64
	recBytes int64
	keys     []string
	name     string
}

// lockConv locks conversation c and loads its record. The caller unlocks
// s.mu.
func (e *Engine) lockConv(ctx context.Context, c convID) (*convState, error) {
	s := e.lockLive(c)
	if !s.loaded {
		err := e.db.View(func(txn *badger.Txn) error { return getJSON(txn, convKey(c), &s.rec) })
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.loaded = true
		e.noteRecord(s)
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("lossless: %w", err)
	}
	if s.rec.Retiring {
		s.mu.Unlock()
		return nil, retiringErr(c, "")
	}
	return s, nil
}

// countCache caches token counts by content hash (bounded: cleared when
// full, which is cheap and keeps memory flat).
type countCache struct {
	mu  sync.Mutex
	max int
	m   map[msgHash]int
}

func newCountCache(max int) *countCache { return &countCache{max: max, m: make(map[msgHash]int)} }

func (c *countCache) get(h msgHash) (int, bool) {
	c.mu.Lock()
	n, ok := c.m[h]
	c.mu.Unlock()
	return n, ok
}

func (c *countCache) put(h msgHash, n int) {
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[h] = n
	c.mu.Unlock()
}

// noteBudget records an assemble's budget: the first of a turn replaces
// the last turn's, later ones raise it.
func (s *convState) noteBudget(budget int) {
	b := int64(budget)
	if s.budgetOpen.CompareAndSwap(false, true) {
		s.lastBudget.Store(b)
		return
	}
	for {
		old := s.lastBudget.Load()
		if b <= old || s.lastBudget.CompareAndSwap(old, b) {
			return
		}
	}
}
