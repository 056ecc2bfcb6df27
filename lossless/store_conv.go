package lossless

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
)

// Conversation is one stored conversation. It implements dag.Store, so the
// DAG algorithms (package dag) compact it; it is safe for concurrent use.
type Conversation struct {
	e  *Engine
	id convID
	// Agent is the conversation's agent.
	Agent string
}

var _ dag.Store = (*Conversation)(nil)

// Conversation returns the stored conversation that sessionID (of agent;
// "" means Config.AgentID) belongs to, or an error wrapping
// core.ErrUnknownSession. The session id may be any id the conversation
// has had, or its sessionKey.
func (e *Engine) Conversation(ctx context.Context, agent, sessionID string) (*Conversation, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if agent == "" {
		agent = e.agentFor("", sessionID)
	}
	c, err := e.lookup(ctx, agent, sessionID, "")
	if err != nil {
		return nil, err
	}
	return &Conversation{e: e, id: c, Agent: agent}, nil
}

// ConversationFor is Conversation for a call's session id and key (the
// agent derived as for every call).
func (e *Engine) ConversationFor(ctx context.Context, agentID, sessionID, sessionKey string) (*Conversation, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	agent := e.agentFor(agentID, sessionKey)
	c, err := e.lookup(ctx, agent, sessionID, sessionKey)
	if err != nil {
		return nil, err
	}
	return &Conversation{e: e, id: c, Agent: agent}, nil
}

// lookup finds an existing conversation by session key, then session id
// (a key may also be passed as the id).
func (e *Engine) lookup(ctx context.Context, agent, sessionID, sessionKey string) (convID, error) {
	if sessionID == "" && sessionKey == "" {
		return convID{}, fmt.Errorf("lossless: %w", core.ErrEmptySessionID)
	}
	if err := ctx.Err(); err != nil {
		return convID{}, fmt.Errorf("lossless: %w", err)
	}
	var c convID
	err := e.db.View(func(txn *badger.Txn) error {
		for _, name := range []string{"k:" + sessionKey, "s:" + sessionID, "k:" + sessionID} {
			if name == "k:" || name == "s:" {
				continue
			}
			got, ok, err := getConvName(txn, agent, name)
			if err != nil {
				return err
			}
			if ok {
				c = got
				return nil
			}
		}
		return fmt.Errorf("lossless: session %q of agent %q: %w", sessionID+sessionKey, agent, core.ErrUnknownSession)
	})
	return c, err
}

// ID returns the conversation's id (hex).
func (c *Conversation) ID() string { return c.id.String() }

// Items returns the context items in position order (dag.Store).
func (c *Conversation) Items(ctx context.Context) ([]dag.Item, error) {
	done, err := c.e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return c.items(ctx)
}

func (c *Conversation) items(ctx context.Context) ([]dag.Item, error) {
	var err error
	var out []dag.Item
	err = c.e.db.View(func(txn *badger.Txn) error {
		var err error
		out, err = readItems(ctx, txn, c.id)
		return err
	})
	return out, err
}

func readItems(ctx context.Context, txn *badger.Txn, c convID) ([]dag.Item, error) {
	prefix := convPrefix(pItem, c)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
	defer it.Close()
	var out []dag.Item
	for it.Rewind(); it.Valid(); it.Next() {
		if len(out)%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("lossless: %w", err)
			}
		}
		item, err := decodeItemKV(it.Item())
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

func decodeItemKV(kv *badger.Item) (dag.Item, error) {
	k := kv.Key()
	pos, ok := getU64(k[len(k)-8:])
	if !ok || len(k) != 17 {
		return dag.Item{}, fmt.Errorf("%w: item key", errBadRecord)
	}
	var out dag.Item
	err := kv.Value(func(v []byte) error {
		var err error
		out, _, err = decodeItem(pos, v)
		return err
	})
	return out, err
}

// MessageText returns raw message seq rendered as plain text for a
// summarizer: its role, then its text, tool calls and tool results. Large
// content is given as its reference description (dag.Store).
func (c *Conversation) MessageText(ctx context.Context, seq uint64) (string, error) {
	done, err := c.e.enter()
	if err != nil {
		return "", err
	}
	defer done()
	var out string
	err = c.e.db.View(func(txn *badger.Txn) error {
		_, raw, err := getMsgText(txn, c.id, seq)
		if err != nil {
			return err
		}
		m, err := core.ParseMessage(raw)
		if err != nil {
			return fmt.Errorf("lossless: stored message %d: %w", seq, err)
		}
		out = MessagePlainText(m)
		return nil
	})
	return out, err
}

// MessagePlainText renders a message as plain text: "role: text", tool
// calls as "[tool call name(args)]", a tool result as "[tool result name]".
// Thinking is left out.
func MessagePlainText(m core.Message) string {
	var sb strings.Builder
	sb.WriteString(m.Role())
	if m.Role() == core.RoleToolResult {
		fmt.Fprintf(&sb, " (%s", m.ToolName())
		if m.IsError() {
			sb.WriteString(", error")
		}
		sb.WriteString(")")
	}
	sb.WriteString(": ")
	sb.WriteString(m.Text())
	for _, b := range m.ToolCalls() {
		fmt.Fprintf(&sb, "\n[tool call %s(%s)]", b.Name, b.Arguments)
	}
	return sb.String()
}

// Summary returns summary id (dag.Store); dag.ErrNotFound when absent.
func (c *Conversation) Summary(ctx context.Context, id string) (dag.Summary, error) {
	done, err := c.e.enter()
	if err != nil {
		return dag.Summary{}, err
	}
	defer done()
	return c.summary(ctx, id)
}

func (c *Conversation) summary(ctx context.Context, id string) (dag.Summary, error) {
	var err error
	var s dag.Summary
	err = c.e.db.View(func(txn *badger.Txn) error {
		v, err := getValue(txn, summaryKey(c.id, id))
		if err != nil {
			if errors.Is(err, core.ErrNotFound) {
				return fmt.Errorf("lossless: summary %q: %w", id, dag.ErrNotFound)
			}
			return err
		}
		s, err = decodeSummary(v)
		return err
	})
	return s, err
}

// Replace atomically, in one Badger transaction, checks that the items at
// old's positions are still exactly old and contiguous (else
// dag.ErrConflict), deletes them, and stores s with item at old[0].Pos
// (dag.Store). Positions of other items never change.
func (c *Conversation) Replace(ctx context.Context, old []dag.Item, s dag.Summary, item dag.Item) error {
	done, err := c.e.enter()
	if err != nil {
		return err
	}
	defer done()
	return c.replace(ctx, old, s, item)
}

func (c *Conversation) replace(ctx context.Context, old []dag.Item, s dag.Summary, item dag.Item) error {
	if err := c.e.checkSpace(); err != nil {
		return err
	}
	var err error
	if len(old) == 0 {
		return fmt.Errorf("lossless: replace: no items to replace")
	}
	if s.ID == "" {
		return fmt.Errorf("lossless: replace: summary without id")
	}
	item.Pos = old[0].Pos
	item.Ref = dag.SummaryRef(s.ID)
	st, err := c.e.lockConv(ctx, c.id)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	rec := st.rec
	err = c.e.update(func(txn *badger.Txn) error {
		if err := checkRange(txn, c.id, old); err != nil {
			return err
		}
		if _, err := txn.Get(summaryKey(c.id, s.ID)); err == nil {
			return fmt.Errorf("lossless: replace: summary %q exists: %w", s.ID, dag.ErrConflict)
		}
		v, err := encodeSummary(s)
		if err != nil {
			return err
		}
		if err := txn.Set(summaryKey(c.id, s.ID), v); err != nil {
			return fmt.Errorf("lossless: write summary: %w", err)
		}
		for _, o := range old[1:] {
			if err := txn.Delete(itemKey(c.id, o.Pos)); err != nil {
				return fmt.Errorf("lossless: delete item: %w", err)
			}
		}
		if err := txn.Set(itemKey(c.id, item.Pos), encodeItem(item, 0)); err != nil {
			return fmt.Errorf("lossless: write item: %w", err)
		}
		rec.Summaries++
		return setJSON(txn, convKey(c.id), rec)
	})
	if err != nil {
		return err
	}
	st.rec = rec
	c.e.indexSummary(c.id, rec.Agent, s) // recall index (recall.go)
	return nil
}

// checkRange verifies that the items from old[0].Pos to old[len-1].Pos are
// exactly old.
func checkRange(txn *badger.Txn, c convID, old []dag.Item) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: convPrefix(pItem, c)})
	defer it.Close()
	i := 0
	for it.Seek(itemKey(c, old[0].Pos)); it.Valid() && i < len(old); it.Next() {
		got, err := decodeItemKV(it.Item())
		if err != nil {
			return err
		}
		if got != old[i] {
			return fmt.Errorf("lossless: replace: item at %d changed: %w", old[i].Pos, dag.ErrConflict)
		}
		i++
	}
	if i != len(old) {
		return fmt.Errorf("lossless: replace: %d of %d items found: %w", i, len(old), dag.ErrConflict)
	}
	return nil
}

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

// msgValue returns the stored record of message seq (dag.ErrNotFound when
// there is none).
func msgValue(txn *badger.Txn, c convID, seq uint64) ([]byte, error) {
	v, err := getValue(txn, msgKey(c, seq))
	if errors.Is(err, core.ErrNotFound) {
		return nil, fmt.Errorf("lossless: message %d: %w", seq, dag.ErrNotFound)
	}
	return v, err
}

func getMsg(txn *badger.Txn, c convID, seq uint64) (msgRecord, error) {
	v, err := msgValue(txn, c, seq)
	if err != nil {
		return msgRecord{}, err
	}
	return decodeMsg(v, false)
}

// getMsgHeader is getMsg without the body (decodeMsgHeader).
func getMsgHeader(txn *badger.Txn, c convID, seq uint64) (msgRecord, error) {
	v, err := msgValue(txn, c, seq)
	if err != nil {
		return msgRecord{}, err
	}
	return decodeMsgHeader(v)
}

// getMsgText returns the bytes that stand for message seq in text: its
// large-content reference when it has one (the body is then not read),
// else its raw bytes.
func getMsgText(txn *badger.Txn, c convID, seq uint64) (msgRecord, []byte, error) {
	r, err := getMsgHeader(txn, c, seq)
	if err != nil {
		return r, nil, err
	}
	if r.Flags&flagLarge != 0 {
		if v, err := getValue(txn, largeKey(c, seq)); err == nil {
			return r, v, nil
		}
	}
	r, err = getMsg(txn, c, seq)
	return r, r.Raw, err
}

// Message returns stored message seq, bytes exactly as ingested.
func (c *Conversation) Message(ctx context.Context, seq uint64) (core.Message, error) {
	done, err := c.e.enter()
	if err != nil {
		return core.Message{}, err
	}
	defer done()
	var m core.Message
	err = c.e.db.View(func(txn *badger.Txn) error {
		r, err := getMsg(txn, c.id, seq)
		if err != nil {
			return err
		}
		m, err = core.ParseMessage(r.Raw)
		return err
	})
	return m, err
}

// MessageByKey returns the stored message whose key (the hex id after
// LargeRefPrefix in a large-content reference) is key.
func (c *Conversation) MessageByKey(ctx context.Context, key string) (uint64, core.Message, error) {
	key = strings.TrimPrefix(key, LargeRefPrefix)
	b, err := hex.DecodeString(key)
	if err != nil || len(b) != 16 {
		return 0, core.Message{}, fmt.Errorf("lossless: bad message key %q: %w", key, core.ErrNotFound)
	}
	var h msgHash
	copy(h[:], b)
	var seq uint64
	err = c.e.db.View(func(txn *badger.Txn) error {
		v, err := getValue(txn, hashKey(c.id, h))
		if err != nil {
			return err
		}
		var ok bool
		if seq, ok = getU64(v); !ok {
			return fmt.Errorf("%w: hash index", errBadRecord)
		}
		return nil
	})
	if err != nil {
		return 0, core.Message{}, err
	}
	m, err := c.Message(ctx, seq)
	return seq, m, err
}

// SessionInfo describes one stored conversation.
type SessionInfo struct {
	Agent string `json:"agent"`
	// ID is the conversation's id; SessionIDs every session id it has had
	// (the newest last); Key its sessionKey, if any.
	ID         string   `json:"id"`
	SessionIDs []string `json:"sessionIds"`
	Key        string   `json:"key,omitempty"`
	Messages   int64    `json:"messages"`
	Summaries  int64    `json:"summaries"`
	Bytes      int64    `json:"bytes"`
	Tokens     int64    `json:"tokens"`
	// Created and Updated are when the store created and last wrote the
	// conversation (Unix ms): for an imported history, the import's time.
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
	// FirstMessage and LastMessage are the times (Unix ms) of the first and
	// the last stored message, from the messages' own timestamps (0 when
	// neither carries one): when the conversation took place.
	FirstMessage int64 `json:"firstMessage,omitempty"`
	LastMessage  int64 `json:"lastMessage,omitempty"`
	// Retiring is true for a conversation an interrupted retention pass
	// left partly deleted (ErrRetiring); the next pass finishes it.
	Retiring bool `json:"retiring,omitempty"`
}

// messageTimes returns the timestamps (Unix ms) of the first and the last
// stored message of c (sequence numbers 1 and rec.Messages), the earlier
// first; a message without a timestamp counts as the other one, and 0, 0
// means neither has one.
func messageTimes(txn *badger.Txn, c convID, rec convRecord) (first, last int64, err error) {
	if rec.Messages <= 0 {
		return 0, 0, nil
	}
	at := func(seq uint64) (int64, error) {
		kv, err := txn.Get(msgKey(c, seq))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return 0, nil // a missing record: Check reports it
		}
		if err != nil {
			return 0, fmt.Errorf("lossless: conversation %s: read message %d: %w", c, seq, err)
		}
		var ts int64
		err = kv.Value(func(v []byte) error {
			if r, err := decodeMsgHeader(v); err == nil {
				ts = r.Timestamp
			} // a record that does not decode has no time: Check reports it
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("lossless: conversation %s: read message %d: %w", c, seq, err)
		}
		return ts, nil
	}
	if first, err = at(1); err != nil {
		return 0, 0, err
	}
	if last, err = at(uint64(rec.Messages)); err != nil {
		return 0, 0, err
	}
	switch {
	case first == 0:
		first = last
	case last == 0:
		last = first
	case last < first:
		first, last = last, first
	}
	return first, last, nil
}

// Sessions lists the stored conversations of agent ("" = all agents),
// ordered by agent then creation.
func (e *Engine) Sessions(ctx context.Context, agent string) ([]SessionInfo, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	var out []SessionInfo
	err = e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pConv}, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: %w", err)
			}
			var rec convRecord
			k := it.Item().Key()
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &rec) }); err != nil {
				return fmt.Errorf("%w: conversation: %v", errBadRecord, err)
			}
			if agent != "" && rec.Agent != agent {
				continue
			}
			var c convID
			copy(c[:], k[1:])
			first, last, err := messageTimes(txn, c, rec)
			if err != nil {
				return err
			}
			out = append(out, SessionInfo{Agent: rec.Agent, ID: hex.EncodeToString(k[1:]),
				SessionIDs: rec.SessionIDs, Key: rec.Key, Messages: rec.Messages, Summaries: rec.Summaries,
				Bytes: rec.Bytes, Tokens: rec.Tokens, Created: rec.Created, Updated: rec.Updated,
				FirstMessage: first, LastMessage: last, Retiring: rec.Retiring})
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Created < out[j].Created
	})
	return out, err
}

// Messages calls fn with the stored messages of agent's session sessionID
// in order, bytes exactly as ingested. An error from fn stops and is
// returned.
func (e *Engine) Messages(ctx context.Context, agent, sessionID string, fn func(seq uint64, m core.Message) error) error {
	conv, err := e.Conversation(ctx, agent, sessionID)
	if err != nil {
		return err
	}
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	return e.db.View(func(txn *badger.Txn) error {
		var rec convRecord
		if err := getJSON(txn, convKey(conv.id), &rec); err != nil {
			return fmt.Errorf("lossless: conversation %s: read record: %w", conv.id, err)
		}
		if rec.Retiring {
			return retiringErr(conv.id, sessionID)
		}
		prefix := convPrefix(pMsg, conv.id)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		// Sequence numbers run from 1 without a gap; a gap or a short count
		// is corruption, reported with the missing range, never a short list.
		want := uint64(1)
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: %w", err)
			}
			k := it.Item().Key()
			seq, _ := getU64(k[9:])
			if seq != want {
				return missingErr(conv.id, sessionID, want, seq-1)
			}
			want++
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return fmt.Errorf("lossless: read message: %w", err)
			}
			r, err := decodeMsg(v, false)
			if err != nil {
				return err
			}
			m, err := core.ParseMessage(r.Raw)
			if err != nil {
				return fmt.Errorf("lossless: stored message %d: %w", seq, err)
			}
			if err := fn(seq, m); err != nil {
				return err
			}
		}
		if last := want - 1; int64(last) != rec.Messages || rec.NextSeq != want {
			hi := rec.NextSeq - 1
			if hi < want {
				return fmt.Errorf("lossless: conversation %s (session %s): %d messages read, its record counts %d (next seq %d): %w",
					conv.id, sessionID, last, rec.Messages, rec.NextSeq, ErrCorrupt)
			}
			return missingErr(conv.id, sessionID, want, hi)
		}
		return nil
	})
}

// ErrCorrupt is wrapped by errors that find the store damaged: a missing
// range of messages, a record that does not decode. What could be read is
// never returned as if it were all.
var ErrCorrupt = errors.New("lossless: store corrupt")

func missingErr(c convID, sessionID string, from, to uint64) error {
	return fmt.Errorf("lossless: conversation %s (session %s): messages %d-%d are missing: %w", c, sessionID, from, to, ErrCorrupt)
}

// AgentStats are one agent's totals.
type AgentStats struct {
	Conversations int64 `json:"conversations"`
	Messages      int64 `json:"messages"`
	Summaries     int64 `json:"summaries"`
	// Bytes is the raw JSON bytes of the stored messages.
	Bytes  int64 `json:"bytes"`
	Tokens int64 `json:"tokens"`
}

// Stats are the store's totals.
type Stats struct {
	Agents map[string]AgentStats `json:"agents"`
	// DiskBytes is the size of the store's LSM tree and value log.
	DiskBytes int64 `json:"diskBytes"`
	// IndexBytes is the size of the recall index's files (0 without one).
	IndexBytes int64 `json:"indexBytes"`
	// Format is the store format version.
	Format int `json:"format"`
}

// Stats returns per-agent totals and the disk size.
func (e *Engine) Stats(ctx context.Context) (Stats, error) {
	infos, err := e.Sessions(ctx, "")
	if err != nil {
		return Stats{}, err
	}
	done, err := e.enter()
	if err != nil {
		return Stats{}, err
	}
	defer done()
	st := Stats{Agents: map[string]AgentStats{}, Format: FormatVersion}
	for _, in := range infos {
		a := st.Agents[in.Agent]
		a.Conversations++
		a.Messages += in.Messages
		a.Summaries += in.Summaries
		a.Bytes += in.Bytes
		a.Tokens += in.Tokens
		st.Agents[in.Agent] = a
	}
	lsm, vlog := e.db.Size()
	st.DiskBytes = lsm + vlog
	_ = filepath.WalkDir(e.indexDir(), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				st.IndexBytes += info.Size()
			}
		}
		return nil
	})
	return st, nil
}

var _ = bytes.Equal

var _ dag.MessageMetaReader = (*Conversation)(nil)

// MessageMeta returns the metadata of raw message seq, in the active
// context or not (dag.MessageMetaReader). Tokens is the message's own count
// (for large content, the full content's, not its reference's).
func (c *Conversation) MessageMeta(ctx context.Context, seq uint64) (dag.MessageMeta, error) {
	done, err := c.e.enter()
	if err != nil {
		return dag.MessageMeta{}, err
	}
	defer done()
	var out dag.MessageMeta
	err = c.e.db.View(func(txn *badger.Txn) error {
		kv, err := txn.Get(msgKey(c.id, seq))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("lossless: message %d: %w", seq, dag.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("lossless: read: %w", err)
		}
		return kv.Value(func(v []byte) error {
			r, err := decodeMsgHeader(v)
			if err != nil {
				return err
			}
			out = dag.MessageMeta{Seq: seq, Tokens: r.Tokens, Timestamp: r.Timestamp, Role: r.Role}
			return nil
		})
	})
	return out, err
}
