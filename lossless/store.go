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
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
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

// convID identifies a conversation (store.ConvID).
type convID = store.ConvID

var metaKey = []byte{pMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// metaRecord is the store's format record.
type metaRecord = store.Meta

// convRecord is a conversation's record: C conv -> JSON.
type convRecord = store.Conversation

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

// checkFormat writes the format record of a new store, refuses a newer
// format or another engine's store, and migrates an older format.
func (e *Engine) checkFormat() error {
	ctx := context.Background()
	check := func(m metaRecord) error {
		if m.Engine != EngineID {
			return fmt.Errorf("lossless: store %s was written by engine %q, not %q", e.cfg.StoreDir, m.Engine, EngineID)
		}
		if m.Format > FormatVersion {
			return fmt.Errorf("lossless: store %s has format %d, this build reads up to %d: %w",
				e.cfg.StoreDir, m.Format, FormatVersion, core.ErrFormatTooNew)
		}
		return nil
	}
	if e.cfg.ReadOnly {
		return e.st.View(ctx, func(r store.Reader) error {
			m, err := r.Meta()
			if err != nil {
				return fmt.Errorf("lossless: store %s: read format: %w", e.cfg.StoreDir, err)
			}
			return check(m)
		})
	}
	return e.st.Update(ctx, func(tx store.Tx) error {
		m, err := tx.Meta()
		if errors.Is(err, store.ErrNotFound) {
			return tx.PutMeta(metaRecord{Format: FormatVersion, Engine: EngineID, Tokenizer: e.cfg.Tokenizer})
		}
		if err != nil {
			return fmt.Errorf("lossless: read format: %w", err)
		}
		if err := check(m); err != nil {
			return err
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
			return tx.PutMeta(m)
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

// getValue returns a copy of key's value; a missing key is "lossless: not
// found", wrapping core.ErrNotFound (for the files not yet converted to the
// store interface: issue #16).
func getValue(txn *badger.Txn, key []byte) ([]byte, error) {
	it, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("lossless: %w", core.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("lossless: read: %w", err)
	}
	v, err := it.ValueCopy(nil)
	if err != nil {
		return nil, fmt.Errorf("lossless: read: %w", err)
	}
	return v, nil
}

// storeUpdate is e.st.Update behind the engine's free-space guard, as update
// (space.go) is db.Update: a write on a full disk is an ErrDiskFull error.
func (e *Engine) storeUpdate(ctx context.Context, fn func(store.Tx) error) error {
	if err := e.checkSpace(); err != nil {
		return err
	}
	return e.st.Update(ctx, fn)
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
