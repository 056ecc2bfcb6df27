package lossless

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// Subagents: PrepareSubagentSpawn, OnSubagentEnded, SweepSubagents.
//
// A preparation is a subagent record keyed by the child (its agent and
// session key) and, for a fork, a snapshot of the parent's active context
// taken at the spawn: the parent's context item records (references to the
// parent's messages and summaries: sequence numbers and summary ids, never
// the messages themselves), at the parent's positions:
//
//	'G' sub(8)               -> subagentRecord (JSON)
//	'g' agent 0x00 sessionId -> sub(8)          the child's session id, when given
//	'Y' sub(8) pos(8)        -> the parent's item record at pos, as it was
//	'K' parentConv(8) sub(8) -> child session key  link of an ended child
//
// where sub is the first 8 bytes of SHA-256 over agent 0x00 childSessionKey.
// The child's own messages are stored under the child's conversation by
// the ordinary write path. Assemble of a forked child returns its own
// context after the parent's snapshot (the snapshot fills what the child's
// own context leaves of the budget, newest first; nothing of the parent is
// read beyond that). Nothing of the parent is ever written.
//
// The snapshot is written before the record: a crash in between leaves
// snapshot keys without a record, invisible and removed by SweepSubagents.

// Key prefixes of subagent state.
const (
	pSub      = 'G'
	pSubAlias = 'g'
	pForkItem = 'Y'
	pSubLink  = 'K'
)

// Subagent states (SubagentInfo.State).
const (
	// SubagentPrepared: prepared, the child has not started; the TTL runs.
	SubagentPrepared = "prepared"
	// SubagentActive: the child started (assembled or stored a message).
	SubagentActive = "active"
	// SubagentEnded: the child completed or was released; its history is
	// linked to the parent.
	SubagentEnded = "ended"
)

type subID = store.SubID

func subIDOf(agent, childKey string) subID {
	h := sha256.Sum256([]byte(agent + "\x00" + childKey))
	var s subID
	copy(s[:], h[:8])
	return s
}

func subKey(s subID) []byte { return append([]byte{pSub}, s[:]...) }
func subAliasKey(agent, sessionID string) []byte {
	return append(append(append([]byte{pSubAlias}, agent...), 0), sessionID...)
}
func forkPrefixKey(s subID) []byte { return append([]byte{pForkItem}, s[:]...) }
func forkItemKey(s subID, pos uint64) []byte {
	k := make([]byte, 17)
	k[0] = pForkItem
	copy(k[1:9], s[:])
	putU64(k[9:], pos)
	return k
}
func subLinkKey(parent convID, s subID) []byte {
	return append(append([]byte{pSubLink}, parent[:]...), s[:]...)
}

// SubagentInfo is the stored record of a subagent preparation.
type SubagentInfo struct {
	Agent           string `json:"agent"`
	ChildSessionKey string `json:"childSessionKey"`
	ChildSessionID  string `json:"childSessionId,omitempty"`
	ParentAgent     string `json:"parentAgent"`
	ParentKey       string `json:"parentSessionKey,omitempty"`
	ParentSessionID string `json:"parentSessionId,omitempty"`
	// ParentConv is the parent's conversation id (hex; "" when the parent
	// was never stored).
	ParentConv string `json:"parentConversation,omitempty"`
	Mode       string `json:"contextMode"`
	State      string `json:"state"`
	// EndReason is the reason of OnSubagentEnded (completed, released).
	EndReason string `json:"endReason,omitempty"`
	Created   int64  `json:"created"`
	// ExpiresAt is when a preparation whose child never started is swept
	// (Unix ms; 0: never).
	ExpiresAt int64 `json:"expiresAt,omitempty"`
	EndedAt   int64 `json:"endedAt,omitempty"`
	// SnapshotItems and SnapshotTokens describe the fork snapshot.
	SnapshotItems  int `json:"snapshotItems"`
	SnapshotTokens int `json:"snapshotTokens"`
	// Token identifies one preparation: its rollback removes only it.
	Token string `json:"token"`
}

var (
	_ core.SubagentSpawner     = (*Engine)(nil)
	_ core.SubagentEndListener = (*Engine)(nil)
)

// subagents is the subagent state of one Engine (its subagents field; the
// zero value is ready).
type subagents struct {
	// mu serialises subagent record changes.
	mu sync.Mutex
	// swept sweeps expired preparations once since open (Open, or the
	// first subagent call or Assemble of a read-only engine).
	swept sync.Once
	// forks holds the fork caches: subID -> *forkMsgCache.
	forks sync.Map
}

func (e *Engine) subMu() *sync.Mutex { return &e.subagents.mu }

func (e *Engine) sweepOnce(ctx context.Context) {
	e.subagents.swept.Do(func() { _, _ = e.SweepSubagents(ctx) })
}

// PrepareSubagentSpawn sets up the state of a child run. contextMode
// "fork": the child's context starts from the parent's active context at
// this moment — a snapshot of references to the parent's messages and
// summaries, not copies — followed by the child's own messages, which are
// stored under the child's session; "isolated" (the default): the child
// starts empty. ttlMs > 0 bounds how long the preparation lives if the
// child never starts (first Assemble or stored message of the child): an
// expired preparation is removed by the next access or SweepSubagents.
// The returned Rollback removes everything this preparation created and is
// safe to call more than once. Preparing a child again replaces its
// previous preparation. Nothing of the parent is written.
func (e *Engine) PrepareSubagentSpawn(ctx context.Context, p core.SubagentSpawnParams) (*core.SubagentPreparation, error) {
	e.sweepOnce(ctx)
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if p.ChildSessionKey == "" {
		return nil, fmt.Errorf("lossless: prepare subagent: empty childSessionKey: %w", ErrBadParams)
	}
	mode := p.ContextMode
	switch mode {
	case "":
		mode = core.ContextModeIsolated
	case core.ContextModeIsolated, core.ContextModeFork:
	default:
		return nil, fmt.Errorf("lossless: prepare subagent: context mode %q (want isolated or fork): %w", mode, ErrBadParams)
	}
	if p.TTLMs < 0 {
		return nil, fmt.Errorf("lossless: prepare subagent: negative ttlMs %d: %w", p.TTLMs, ErrBadParams)
	}
	agent := e.agentFor("", p.ChildSessionKey)
	parentAgent := e.agentFor("", p.ParentSessionKey)
	sub := subIDOf(agent, p.ChildSessionKey)
	now := time.Now().UnixMilli()
	rec := SubagentInfo{Agent: agent, ChildSessionKey: p.ChildSessionKey, ChildSessionID: p.ChildSessionID,
		ParentAgent: parentAgent, ParentKey: p.ParentSessionKey, ParentSessionID: p.ParentSessionID,
		Mode: mode, State: SubagentPrepared, Created: now, Token: newToken()}
	if p.TTLMs > 0 {
		rec.ExpiresAt = now + p.TTLMs
	}
	var parent convID
	haveParent := false
	if p.ParentSessionID != "" || p.ParentSessionKey != "" {
		parent, err = e.lookup(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey)
		if errors.Is(err, core.ErrUnknownSession) && mode == core.ContextModeFork && p.ParentSessionFile != "" && !core.IsSessionRef(p.ParentSessionFile) && p.ParentSessionID != "" {
			// A parent the engine never saw: import its transcript first.
			if _, ierr := e.importFile(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey, p.ParentSessionFile); ierr != nil && !errors.Is(ierr, os.ErrNotExist) {
				return nil, ierr
			}
			parent, err = e.lookup(ctx, parentAgent, p.ParentSessionID, p.ParentSessionKey)
		}
		switch {
		case err == nil:
			haveParent = true
			rec.ParentConv = parent.String()
		case !errors.Is(err, core.ErrUnknownSession):
			return nil, err
		}
	}
	mu := e.subMu()
	mu.Lock()
	defer mu.Unlock()
	if err := e.removeSub(ctx, sub, ""); err != nil { // a previous preparation of this child
		return nil, err
	}
	if mode == core.ContextModeFork && haveParent {
		n, tokens, err := e.snapshotParent(ctx, parent, sub)
		if err != nil {
			_ = e.removeSub(context.WithoutCancel(ctx), sub, "")
			return nil, err
		}
		rec.SnapshotItems, rec.SnapshotTokens = n, tokens
	}
	err = e.update(func(txn *badger.Txn) error {
		if err := setJSON(txn, subKey(sub), rec); err != nil {
			return err
		}
		if p.ChildSessionID != "" {
			if err := txn.Set(subAliasKey(agent, p.ChildSessionID), sub[:]); err != nil {
				return fmt.Errorf("lossless: prepare subagent: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		_ = e.removeSub(context.WithoutCancel(ctx), sub, "")
		return nil, fmt.Errorf("lossless: prepare subagent: %w", err)
	}
	token := rec.Token
	return &core.SubagentPreparation{Rollback: func(ctx context.Context) error {
		done, err := e.enter()
		if err != nil {
			return err
		}
		defer done()
		mu := e.subMu()
		mu.Lock()
		defer mu.Unlock()
		return e.removeSub(ctx, sub, token)
	}}, nil
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// snapshotParent copies the parent's context item records (references) to
// the fork snapshot of sub, in transactions of at most snapshotTxnItems.
func (e *Engine) snapshotParent(ctx context.Context, parent convID, sub subID) (int, int, error) {
	const snapshotTxnItems = 2048
	type kv struct {
		pos uint64
		v   []byte
	}
	var all []kv
	tokens := 0
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: convPrefix(pItem, parent), PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if len(all)%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("lossless: prepare subagent: %w", err)
				}
			}
			k := it.Item().Key()
			pos, _ := getU64(k[9:])
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return fmt.Errorf("lossless: prepare subagent: read item: %w", err)
			}
			item, flags, err := decodeItem(pos, v)
			if err != nil {
				return err
			}
			if flags&(flagHeartbeat|flagHidden|flagSuperseded) == 0 {
				tokens += item.Tokens
			}
			all = append(all, kv{pos, v})
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	count := len(all)
	for len(all) > 0 {
		n := min(len(all), snapshotTxnItems)
		err := e.update(func(txn *badger.Txn) error {
			for _, x := range all[:n] {
				if err := txn.Set(forkItemKey(sub, x.pos), x.v); err != nil {
					return fmt.Errorf("lossless: prepare subagent: write snapshot: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
		all = all[n:]
	}
	return count, tokens, nil
}

// getSub reads sub's record (ok false when absent).
func getSub(txn *badger.Txn, sub subID) (SubagentInfo, bool, error) {
	var rec SubagentInfo
	err := getJSON(txn, subKey(sub), &rec)
	if errors.Is(err, core.ErrNotFound) {
		return rec, false, nil
	}
	return rec, err == nil, err
}

// removeSub deletes sub's record, alias, snapshot and parent link. With a
// non-empty token it removes only the preparation that token names (a
// rollback of an older preparation leaves a newer one alone). Absent
// state is not an error.
func (e *Engine) removeSub(ctx context.Context, sub subID, token string) error {
	var rec SubagentInfo
	var have bool
	err := e.db.View(func(txn *badger.Txn) error {
		var err error
		rec, have, err = getSub(txn, sub)
		return err
	})
	if err != nil {
		return err
	}
	if token != "" && (!have || rec.Token != token) {
		return nil
	}
	e.dropForkCache(sub)
	// Snapshot keys first (possibly many), the record last: a crash
	// in between leaves a record whose snapshot is partly gone, which the
	// next removal finishes.
	for {
		var keys [][]byte
		err := e.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: forkPrefixKey(sub), PrefetchValues: false})
			defer it.Close()
			for it.Rewind(); it.Valid() && len(keys) < 2048; it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", err)
		}
		err = e.update(func(txn *badger.Txn) error {
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", err)
		}
	}
	if !have {
		return nil
	}
	return e.update(func(txn *badger.Txn) error {
		if rec.ChildSessionID != "" {
			if err := txn.Delete(subAliasKey(rec.Agent, rec.ChildSessionID)); err != nil {
				return fmt.Errorf("lossless: remove subagent: %w", err)
			}
		}
		if pc, ok := parseConvID(rec.ParentConv); ok {
			if err := txn.Delete(subLinkKey(pc, sub)); err != nil {
				return fmt.Errorf("lossless: remove subagent: %w", err)
			}
		}
		if err := txn.Delete(subKey(sub)); err != nil {
			return fmt.Errorf("lossless: remove subagent: %w", err)
		}
		return nil
	})
}

// OnSubagentEnded handles the end of a child run. "deleted" and "swept"
// remove the child's prepared state (record and fork snapshot; messages
// the child stored stay in its own conversation, unlinked). "completed"
// and "released" keep the child's history and link it to the parent: the
// parent's Grep (conversation scope) searches it, the parent's
// DescribeSummary/ExpandSummary resolve its summaries and large-content
// ids, and recall finds it as another conversation of the agent. A child
// the engine never prepared is not an error.
func (e *Engine) OnSubagentEnded(ctx context.Context, p core.SubagentEndedParams) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	if p.ChildSessionKey == "" {
		return fmt.Errorf("lossless: subagent ended: empty childSessionKey: %w", ErrBadParams)
	}
	agent := e.agentFor("", p.ChildSessionKey)
	sub := subIDOf(agent, p.ChildSessionKey)
	mu := e.subMu()
	mu.Lock()
	defer mu.Unlock()
	switch p.Reason {
	case core.SubagentDeleted, core.SubagentSwept:
		return e.removeSub(ctx, sub, "")
	case core.SubagentCompleted, core.SubagentReleased:
	default:
		return fmt.Errorf("lossless: subagent ended: reason %q (want deleted, completed, swept or released): %w", p.Reason, ErrBadParams)
	}
	return e.update(func(txn *badger.Txn) error {
		rec, ok, err := getSub(txn, sub)
		if err != nil || !ok {
			return err
		}
		rec.State, rec.EndReason, rec.EndedAt, rec.ExpiresAt = SubagentEnded, p.Reason, time.Now().UnixMilli(), 0
		if err := setJSON(txn, subKey(sub), rec); err != nil {
			return err
		}
		if pc, ok := parseConvID(rec.ParentConv); ok {
			if err := txn.Set(subLinkKey(pc, sub), []byte(rec.ChildSessionKey)); err != nil {
				return fmt.Errorf("lossless: subagent ended: link: %w", err)
			}
		}
		return nil
	})
}

// SweepSubagents removes the preparations whose TTL expired while their
// child never started, and fork snapshots left without a record by a
// crash. It returns how many preparations it removed. The engine also
// sweeps once after open (first Assemble or subagent call) and whenever it
// meets an expired preparation.
func (e *Engine) SweepSubagents(ctx context.Context) (int, error) {
	done, err := e.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	mu := e.subMu()
	mu.Lock()
	defer mu.Unlock()
	now := time.Now().UnixMilli()
	var expired []subID
	orphans := map[subID]bool{}
	err = e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pSub}, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var sub subID
			k := it.Item().Key()
			if len(k) != 9 {
				continue
			}
			copy(sub[:], k[1:])
			var rec SubagentInfo
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &rec) }); err != nil {
				return fmt.Errorf("%w: subagent: %v", errBadRecord, err)
			}
			if e.expired(ctx, txn, rec, now) {
				expired = append(expired, sub)
			}
		}
		// One look-up per snapshot, not per item: seek past each one.
		fi := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pForkItem}, PrefetchValues: false})
		defer fi.Close()
		for fi.Rewind(); fi.Valid(); {
			k := fi.Item().Key()
			if len(k) != 17 {
				fi.Next()
				continue
			}
			var sub subID
			copy(sub[:], k[1:9])
			if _, err := txn.Get(subKey(sub)); errors.Is(err, badger.ErrKeyNotFound) {
				orphans[sub] = true
			}
			next, ok := nextSub(sub)
			if !ok {
				break
			}
			fi.Seek(forkPrefixKey(next))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, sub := range expired {
		if err := e.removeSub(ctx, sub, ""); err != nil {
			return 0, err
		}
	}
	for sub := range orphans {
		if err := e.removeSub(ctx, sub, ""); err != nil {
			return 0, err
		}
	}
	return len(expired), nil
}

// nextSub returns the subagent id after s in key order (false after the
// last one).
func nextSub(s subID) (subID, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		s[i]++
		if s[i] != 0 {
			return s, true
		}
	}
	return s, false
}

// expired reports whether rec is a preparation past its TTL whose child
// never started (the child's conversation stored no message).
func (e *Engine) expired(ctx context.Context, txn *badger.Txn, rec SubagentInfo, now int64) bool {
	if rec.State != SubagentPrepared || rec.ExpiresAt == 0 || now < rec.ExpiresAt {
		return false
	}
	return !e.childStarted(txn, rec)
}

// childStarted reports whether the child's conversation has messages.
func (e *Engine) childStarted(txn *badger.Txn, rec SubagentInfo) bool {
	for _, name := range []string{"k:" + rec.ChildSessionKey, "s:" + rec.ChildSessionID} {
		if name == "s:" {
			continue
		}
		c, ok, err := getConvName(txn, rec.Agent, name)
		if err != nil || !ok {
			continue
		}
		var cr convRecord
		if err := getJSON(txn, convKey(c), &cr); err == nil && cr.Messages > 0 {
			return true
		}
	}
	return false
}

// Subagent returns the record of the child with session key childKey.
func (e *Engine) Subagent(ctx context.Context, childKey string) (SubagentInfo, bool, error) {
	done, err := e.enter()
	if err != nil {
		return SubagentInfo{}, false, err
	}
	defer done()
	var rec SubagentInfo
	var ok bool
	err = e.db.View(func(txn *badger.Txn) error {
		var err error
		rec, ok, err = getSub(txn, subIDOf(e.agentFor("", childKey), childKey))
		return err
	})
	return rec, ok, err
}

// subFor finds the subagent record of an Assemble call's session (by key,
// else by the child session id alias). An expired preparation is swept
// and not returned; a prepared one is marked active (the child started).
func (e *Engine) subFor(ctx context.Context, agent, sessionID, sessionKey string) (subID, SubagentInfo, bool, error) {
	var sub subID
	var rec SubagentInfo
	found := false
	err := e.db.View(func(txn *badger.Txn) error {
		if sessionKey != "" {
			sub = subIDOf(agent, sessionKey)
			r, ok, err := getSub(txn, sub)
			if err != nil {
				return err
			}
			if ok {
				rec, found = r, true
				return nil
			}
		}
		if sessionID == "" {
			return nil
		}
		v, err := getValue(txn, subAliasKey(agent, sessionID))
		if errors.Is(err, core.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		copy(sub[:], v)
		r, ok, err := getSub(txn, sub)
		rec, found = r, ok
		return err
	})
	if err != nil || !found || rec.State != SubagentPrepared {
		return sub, rec, found, err
	}
	mu := e.subMu()
	mu.Lock()
	defer mu.Unlock()
	now := time.Now().UnixMilli()
	err = e.update(func(txn *badger.Txn) error {
		cur, ok, err := getSub(txn, sub)
		if err != nil || !ok {
			found = false
			return err
		}
		rec = cur
		if rec.State != SubagentPrepared {
			return nil
		}
		if e.expired(ctx, txn, rec, now) {
			found = false
			return nil
		}
		rec.State, rec.ExpiresAt = SubagentActive, 0
		return setJSON(txn, subKey(sub), rec)
	})
	if err != nil {
		return sub, rec, false, err
	}
	if !found {
		return sub, rec, false, e.removeSub(ctx, sub, "")
	}
	return sub, rec, true, nil
}

// forkPrefix prepends a forked child's parent snapshot to res, newest
// first within what res leaves of budget, starting at a whole turn (never
// a tool result whose call is cut off).
func (e *Engine) forkPrefix(ctx context.Context, agent, sessionID, sessionKey string, budget int, res *core.AssembleResult) error {
	sub, rec, ok, err := e.subFor(ctx, agent, sessionID, sessionKey)
	if err != nil || !ok || rec.Mode != core.ContextModeFork || rec.SnapshotItems == 0 {
		return err
	}
	parent, okp := parseConvID(rec.ParentConv)
	if !okp {
		return nil
	}
	avail := budget - res.EstimatedTokens
	if avail <= 0 {
		return nil
	}
	// The messages of the last assembly of this fork, reused (the
	// snapshot never changes; only the budget's cut moves).
	cache := e.forkCache(sub)
	cache.mu.Lock()
	defer cache.mu.Unlock()
	nextMsgs := make(map[uint64]core.Message, len(cache.msgs))
	nextSums := make(map[string]core.Message, len(cache.sums))
	var win window
	err = e.st.View(ctx, func(r store.Reader) (err error) {
		txn := badgerstore.TxnOf(r) // transitional (#16): the store scans a fork snapshot forward only
		win, err = budgetWalk(ctx, badgerItemsReverse(txn, forkPrefixKey(sub), forkItemKey(sub, math.MaxUint64)), avail, "assemble fork",
			func(_ int, item dag.Item, flags byte) (core.Message, error) {
				var m core.Message
				var err error
				if item.IsSummary() {
					m, err = e.summaryMessage(r, parent, item.Ref.ID, cache.sums)
					nextSums[item.Ref.ID] = m
				} else {
					m, err = e.itemMessage(r, parent, item.Ref.Seq, flags, cache.msgs)
					nextMsgs[item.Ref.Seq] = m
				}
				if err != nil {
					return m, fmt.Errorf("lossless: assemble fork of %s: %w", rec.ChildSessionKey, err)
				}
				return m, nil
			})
		return err
	})
	if err != nil || len(win.rev) == 0 {
		return err
	}
	cache.msgs, cache.sums = nextMsgs, nextSums
	prefix, used := win.chronological()
	res.Messages = append(prefix, res.Messages...)
	res.EstimatedTokens += used
	return nil
}

// forkMsgCache holds the parent messages of a fork's last assembly.
type forkMsgCache struct {
	mu   sync.Mutex
	msgs map[uint64]core.Message
	sums map[string]core.Message
}

func (e *Engine) forkCache(sub subID) *forkMsgCache {
	c, _ := e.subagents.forks.LoadOrStore(sub, new(forkMsgCache))
	return c.(*forkMsgCache)
}

// dropForkCache forgets sub's cache (its preparation was removed).
func (e *Engine) dropForkCache(sub subID) {
	e.subagents.forks.Delete(sub)
}

// linkedChildren returns the conversations of the ended children linked to
// conversation parent.
func (e *Engine) linkedChildren(ctx context.Context, parent convID) []convID {
	var out []convID
	_ = e.db.View(func(txn *badger.Txn) error {
		prefix := append([]byte{pSubLink}, parent[:]...)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
		defer it.Close()
		var subs []subID
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			if len(k) != 17 {
				continue
			}
			var s subID
			copy(s[:], k[9:])
			subs = append(subs, s)
		}
		for _, s := range subs {
			rec, ok, err := getSub(txn, s)
			if err != nil || !ok {
				continue
			}
			for _, name := range []string{"k:" + rec.ChildSessionKey, "s:" + rec.ChildSessionID} {
				if name == "s:" {
					continue
				}
				if c, ok, err := getConvName(txn, rec.Agent, name); err == nil && ok {
					out = append(out, c)
					break
				}
			}
		}
		return nil
	})
	return out
}

// LinkedChildren returns the conversation ids (hex) of the ended subagents
// linked to the session's conversation.
func (e *Engine) LinkedChildren(ctx context.Context, sessionID, sessionKey string) ([]string, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	c, err := e.lookup(ctx, e.agentFor("", sessionKey), sessionID, sessionKey)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range e.linkedChildren(ctx, c) {
		out = append(out, k.String())
	}
	return out, nil
}

// forkParent returns the parent conversation of a forked child's
// conversation c (found through its session key), if any.
func (e *Engine) forkParent(txn *badger.Txn, conv *Conversation) (convID, bool) {
	var cr convRecord
	if err := getJSON(txn, convKey(conv.id), &cr); err != nil {
		return convID{}, false
	}
	keys := []string{cr.Key}
	var candidates []subID
	for _, k := range keys {
		if k != "" {
			candidates = append(candidates, subIDOf(cr.Agent, k))
		}
	}
	for _, id := range cr.SessionIDs {
		if v, err := getValue(txn, subAliasKey(cr.Agent, id)); err == nil && len(v) == 8 {
			var s subID
			copy(s[:], v)
			candidates = append(candidates, s)
		}
	}
	for _, s := range candidates {
		rec, ok, err := getSub(txn, s)
		if err != nil || !ok || rec.Mode != core.ContextModeFork {
			continue
		}
		if pc, ok := parseConvID(rec.ParentConv); ok {
			return pc, true
		}
	}
	return convID{}, false
}

// convHolding returns the conversation that holds summary id (or the
// large-content reference "lcm-large:<key>") for a tool call made in conv:
// conv itself, else a forked child's parent (the child sees the parent's
// summaries), else an ended child linked to conv. conv when none does.
func (e *Engine) convHolding(ctx context.Context, conv *Conversation, id string) *Conversation {
	has := func(txn *badger.Txn, c convID) bool {
		if key, ok := bytes.CutPrefix([]byte(id), []byte(LargeRefPrefix)); ok {
			b, err := hex.DecodeString(string(key))
			if err != nil || len(b) != 16 {
				return false
			}
			var h msgHash
			copy(h[:], b)
			_, err = txn.Get(hashKey(c, h))
			return err == nil
		}
		_, err := txn.Get(summaryKey(c, id))
		return err == nil
	}
	out := conv
	_ = e.db.View(func(txn *badger.Txn) error {
		if has(txn, conv.id) {
			return nil
		}
		if pc, ok := e.forkParent(txn, conv); ok && has(txn, pc) {
			out = &Conversation{e: e, id: pc, Agent: conv.Agent}
			return nil
		}
		return nil
	})
	if out != conv {
		return out
	}
	for _, c := range e.linkedChildren(ctx, conv.id) {
		found := false
		_ = e.db.View(func(txn *badger.Txn) error { found = has(txn, c); return nil })
		if found {
			return &Conversation{e: e, id: c, Agent: conv.Agent}
		}
	}
	return conv
}
