package lossless

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/diskusage"
	"github.com/lossless-engine/contextengine/store"
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
// (a key may also be passed as the id), reading the store. The hot paths
// (Assemble, commitTurn) use lookupCached.
func (e *Engine) lookup(ctx context.Context, agent, sessionID, sessionKey string) (convID, error) {
	if sessionID == "" && sessionKey == "" {
		return convID{}, fmt.Errorf("lossless: %w", core.ErrEmptySessionID)
	}
	if err := checkSession(agent, sessionID, sessionKey); err != nil {
		return convID{}, err
	}
	if err := ctx.Err(); err != nil {
		return convID{}, fmt.Errorf("lossless: %w", err)
	}
	var c convID
	err := e.st.View(ctx, func(r store.Reader) error {
		for _, n := range [...]store.Name{{Agent: agent, Kind: store.NameSessionKey, Value: sessionKey},
			{Agent: agent, Kind: store.NameSessionID, Value: sessionID}, {Agent: agent, Kind: store.NameSessionKey, Value: sessionID}} {
			if n.Value == "" {
				continue
			}
			got, err := r.ConvByName(n)
			if err == nil {
				c = got
				return nil
			}
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("lossless: read session map: %w", err)
			}
		}
		return fmt.Errorf("lossless: session %q of agent %q: %w", sessionID+sessionKey, agent, core.ErrUnknownSession)
	})
	return c, err
}

// get reads refs in one batched read (store.Reader.Get).
func (c *Conversation) get(ctx context.Context, refs []store.Ref) ([]store.Got, error) {
	var got []store.Got
	err := c.e.st.View(ctx, func(r store.Reader) error {
		var err error
		got, err = r.Get(refs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lossless: read: %w", fromStore(err))
	}
	return got, nil
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
	var out []dag.Item
	err := c.e.st.View(ctx, func(r store.Reader) error {
		var err error
		out, err = readItems(ctx, r, c.id)
		return err
	})
	return out, err
}

// readItems returns conversation c's context items in position order.
func readItems(ctx context.Context, r store.Reader, c convID) ([]dag.Item, error) {
	var out []dag.Item
	for it, err := range r.Items(c, 0, math.MaxUint64, false) {
		if err != nil {
			return nil, err
		}
		if len(out)%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("lossless: %w", err)
			}
		}
		out = append(out, it.Item)
	}
	return out, nil
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
	err = c.e.st.View(ctx, func(r store.Reader) error {
		_, raw, err := getMsgText(r, c.id, seq)
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
	var s dag.Summary
	err := c.e.st.View(ctx, func(r store.Reader) error {
		var err error
		s, err = r.Summary(c.id, id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("lossless: summary %q: %w", id, dag.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("lossless: summary %q: %w", id, err)
		}
		return nil
	})
	return s, err
}

// Replace atomically, in one store transaction, checks that the items at
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
	defer st.unlock()
	rec := st.rec
	err = c.e.storeUpdate(ctx, func(tx store.Tx) error {
		// On a shared store, a late commit of another process since the
		// read under the lock must not be rolled back by this record: the
		// compactor plans again (dag.ErrConflict).
		if err := c.e.checkBase(tx, c.id, rec); err != nil {
			return fmt.Errorf("lossless: replace: %w: %w", dag.ErrConflict, err)
		}
		if err := checkRange(tx, c.id, old); err != nil {
			return err
		}
		// A summary record that exists, even one that does not decode, is
		// never overwritten.
		if _, err := tx.Summary(c.id, s.ID); err == nil || errors.Is(err, store.ErrCorrupt) {
			return fmt.Errorf("lossless: replace: summary %q exists: %w", s.ID, dag.ErrConflict)
		} else if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("lossless: replace: read summary %q: %w", s.ID, err)
		}
		if err := tx.PutSummary(c.id, s); err != nil {
			return fmt.Errorf("lossless: write summary: %w", err)
		}
		for _, o := range old[1:] {
			if err := tx.DeleteItem(c.id, o.Pos); err != nil {
				return fmt.Errorf("lossless: delete item: %w", err)
			}
		}
		if err := tx.PutItem(c.id, store.Item{Item: item}); err != nil {
			return fmt.Errorf("lossless: write item: %w", err)
		}
		rec.Summaries++
		if err := tx.PutConversation(c.id, rec); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		return nil
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
func checkRange(r store.Reader, c convID, old []dag.Item) error {
	i := 0
	for got, err := range r.Items(c, old[0].Pos, math.MaxUint64, false) {
		if i == len(old) {
			break // the items after old are not read
		}
		if err != nil {
			return err
		}
		if got.Item != old[i] {
			return fmt.Errorf("lossless: replace: item at %d changed: %w", old[i].Pos, dag.ErrConflict)
		}
		i++
	}
	if i != len(old) {
		return fmt.Errorf("lossless: replace: %d of %d items found: %w", i, len(old), dag.ErrConflict)
	}
	return nil
}

// msgErr returns the error of a read of message seq: a missing message
// wraps dag.ErrNotFound.
func msgErr(seq uint64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("lossless: message %d: %w", seq, dag.ErrNotFound)
	}
	return fmt.Errorf("lossless: message %d: %w", seq, err)
}

// getMsg returns message seq of c with its raw bytes (dag.ErrNotFound when
// there is none).
func getMsg(r store.Reader, c convID, seq uint64) (msgRecord, error) {
	m, err := r.Message(c, seq)
	return m, msgErr(seq, err)
}

// getMsgHeader is getMsg without the body (neither copied nor
// decompressed).
func getMsgHeader(r store.Reader, c convID, seq uint64) (msgRecord, error) {
	m, err := r.MessageHeader(c, seq)
	return m, msgErr(seq, err)
}

// getMsgText returns the bytes that stand for message seq in text: its
// large-content reference when it has one (the body is then not read),
// else its raw bytes.
func getMsgText(r store.Reader, c convID, seq uint64) (msgRecord, []byte, error) {
	m, err := getMsgHeader(r, c, seq)
	if err != nil {
		return m, nil, err
	}
	if m.Flags&flagLarge != 0 {
		if v, err := r.Large(c, seq); err == nil {
			return m, v, nil
		}
	}
	m, err = getMsg(r, c, seq)
	return m, m.Raw, err
}

// Message returns stored message seq, bytes exactly as ingested.
func (c *Conversation) Message(ctx context.Context, seq uint64) (core.Message, error) {
	done, err := c.e.enter()
	if err != nil {
		return core.Message{}, err
	}
	defer done()
	var m core.Message
	err = c.e.st.View(ctx, func(r store.Reader) error {
		rec, err := getMsg(r, c.id, seq)
		if err != nil {
			return err
		}
		m, err = core.ParseMessage(rec.Raw)
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
	err = c.e.st.View(ctx, func(r store.Reader) error {
		var err error
		seq, err = r.SeqByHash(c.id, h)
		if errors.Is(err, store.ErrNotFound) {
			return fromStore(err)
		}
		if err != nil {
			return fmt.Errorf("lossless: read: %w", err)
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
func messageTimes(r store.Reader, c convID, rec convRecord) (first, last int64, err error) {
	if rec.Messages <= 0 {
		return 0, 0, nil
	}
	at := func(seq uint64) (int64, error) {
		m, err := r.MessageHeader(c, seq)
		switch {
		case err == nil:
			return m.Timestamp, nil
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCorrupt):
			// A missing record, or one that does not decode, has no
			// time: Check reports it.
			return 0, nil
		}
		return 0, fmt.Errorf("lossless: conversation %s: read message %d: %w", c, seq, err)
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
	err = e.st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: read conversations: %w", err)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: %w", err)
			}
			rec := cr.Conversation
			if agent != "" && rec.Agent != agent {
				continue
			}
			in, err := sessionInfo(r, cr.ID, rec) // read.go
			if err != nil {
				return err
			}
			out = append(out, in)
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
	return e.st.View(ctx, func(r store.Reader) error {
		rec, err := r.Conversation(conv.id)
		if err != nil {
			return fmt.Errorf("lossless: conversation %s: read record: %w", conv.id, fromStore(err))
		}
		if rec.Retiring {
			return retiringErr(conv.id, sessionID)
		}
		// Sequence numbers run from 1 without a gap; a gap or a short count
		// is corruption, reported with the missing range, never a short list.
		want := uint64(1)
		for msg, err := range r.Messages(conv.id, 0, true) {
			if err != nil {
				return fmt.Errorf("lossless: read message: %w", err)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: %w", err)
			}
			seq := msg.Seq
			if seq != want {
				return missingErr(conv.id, sessionID, want, seq-1)
			}
			want++
			m, err := core.ParseMessage(msg.Raw)
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
	// DiskBytes is what the store takes on disk (store.Store.Size): for
	// Badger the blocks allocated to its directory's files, recall index
	// aside, as du counts them; for PostgreSQL the database's size.
	DiskBytes int64 `json:"diskBytes"`
	// IndexBytes is the blocks allocated to the recall index's files, as
	// du counts them (0 without one).
	IndexBytes int64 `json:"indexBytes"`
	// Format is the store format version.
	Format int `json:"format"`
}

// Stats returns per-agent totals and the disk size. It reads the
// conversation records only.
func (e *Engine) Stats(ctx context.Context) (Stats, error) {
	done, err := e.enter()
	if err != nil {
		return Stats{}, err
	}
	defer done()
	st := Stats{Agents: map[string]AgentStats{}, Format: FormatVersion}
	err = e.st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: read conversations: %w", err)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: %w", err)
			}
			a := st.Agents[cr.Agent]
			a.Conversations++
			a.Messages += cr.Messages
			a.Summaries += cr.Summaries
			a.Bytes += cr.Bytes
			a.Tokens += cr.Tokens
			st.Agents[cr.Agent] = a
		}
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	if st.DiskBytes, err = e.st.Size(); err != nil {
		return Stats{}, fmt.Errorf("lossless: stats: %w", err)
	}
	if e.cfg.StoreDir == "" {
		return st, nil // no Bleve index beside the store
	}
	st.IndexBytes, _ = diskusage.Dir(e.indexDir()) // a figure, not a check: an unreadable file counts 0
	return st, nil
}

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
	err = c.e.st.View(ctx, func(r store.Reader) error {
		m, err := getMsgHeader(r, c.id, seq)
		if err != nil {
			return err
		}
		out = dag.MessageMeta{Seq: seq, Tokens: m.Tokens, Timestamp: m.Timestamp, Role: m.Role}
		return nil
	})
	return out, err
}
