package lossless

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
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
		var err error
		c, err = records.LookupName(r, agent, sessionID, sessionKey)
		return err
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
	var out []dag.Item
	err := c.e.st.View(ctx, func(r store.Reader) error {
		var err error
		out, err = readItems(ctx, r, c.id)
		return err
	})
	return out, err
}

// readItems returns conversation c's context items in position order
// (records.ReadItems).
func readItems(ctx context.Context, r store.Reader, c convID) ([]dag.Item, error) {
	return records.ReadItems(ctx, r, c)
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
		var err error
		out, err = records.ReadPlainText(r, c.id, seq)
		return err
	})
	return out, err
}

// MessagePlainText renders a message as plain text: "role: text", tool
// calls as "[tool call name(args)]", a tool result as "[tool result name]".
// Thinking is left out.
func MessagePlainText(m core.Message) string { return records.PlainText(m) }

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
		s, err = records.GetSummary(r, c.id, id)
		return err
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
		// compactor plans again (dag.ErrConflict); a record older than
		// the messages stored is corruption, not a conflict.
		if err := c.e.checkBase(tx, c.id, rec); errors.Is(err, ErrConcurrentWrite) {
			return fmt.Errorf("lossless: replace: %w: %w", dag.ErrConflict, err)
		} else if err != nil {
			return fmt.Errorf("lossless: replace: %w", err)
		}
		return records.Replace(tx, c.id, old, s, item, &rec)
	})
	if err != nil {
		return err
	}
	st.rec = rec
	c.e.indexSummary(c.id, rec.Agent, s) // recall index (recall.go)
	return nil
}

// getMsgText returns the bytes that stand for message seq in text
// (records.GetMsgText).
func getMsgText(r store.Reader, c convID, seq uint64) (msgRecord, []byte, error) {
	return records.GetMsgText(r, c, seq)
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
		var err error
		m, err = records.ReadMessage(r, c.id, seq)
		return err
	})
	return m, err
}

// MessageByKey returns the stored message whose key (the hex id after
// LargeRefPrefix in a large-content reference) is key.
func (c *Conversation) MessageByKey(ctx context.Context, key string) (uint64, core.Message, error) {
	var seq uint64
	err := c.e.st.View(ctx, func(r store.Reader) (err error) {
		seq, err = records.SeqByKey(r, c.id, key)
		return err
	})
	if err != nil {
		return 0, core.Message{}, err
	}
	m, err := c.Message(ctx, seq)
	return seq, m, err
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
		var err error
		out, err = records.ReadMessageMeta(r, c.id, seq)
		return err
	})
	return out, err
}
