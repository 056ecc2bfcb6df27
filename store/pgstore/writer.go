package pgstore

import (
	"encoding/json"
	"fmt"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// writer implements store.Writer over a queue, for a transaction (txn)
// and a batch alike: every write is copied and queued, and sent later
// (an Update's with its next read or at its commit; a batch's when it
// grows past flushBytes and at Flush).
type writer struct {
	q *queue
	// check is called before every write: the writer's state (ended, read
	// only) as an error.
	check func() error
	// limit is the size past which writes fail with store.ErrTooBig,
	// not counting the largest record (0: none, a batch).
	limit int64
	// grown is called when the queue holds flushBytes or more.
	grown func() error
	// failed is the first write error: a transaction that saw one does
	// not commit, whatever its function returns.
	failed error
}

var _ store.Writer = (*writer)(nil)

// flushBytes is how much a batch holds before it commits it as a part.
const flushBytes = 4 << 20

// u is a uint64 as its column holds it (the same 64 bits).
func u(v uint64) int64 { return int64(v) }

// cp copies b (never nil: bytea columns are NOT NULL).
func cp(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

func (w *writer) put(ti int, vals ...any) error { return w.write(ti, opPut, vals) }

func (w *writer) insert(ti int, vals ...any) error { return w.write(ti, opInsert, vals) }

func (w *writer) delete(ti int, keys ...any) error { return w.write(ti, opDel, keys) }

func (w *writer) write(ti int, kind opKind, vals []any) error {
	if w.failed != nil {
		return w.failed
	}
	if err := w.check(); err != nil {
		return err
	}
	w.q.add(ti, kind, vals...)
	return w.after(tables[ti].name)
}

func (w *writer) after(what string) error {
	if w.limit > 0 && w.q.total-w.q.largest > w.limit {
		w.failed = fmt.Errorf("pgstore: write %s: the transaction writes over %d bytes besides its largest record: %w", what, w.limit, store.ErrTooBig)
		return w.failed
	}
	if w.q.bytes >= flushBytes && w.grown != nil {
		if err := w.grown(); err != nil {
			w.failed = err
			return err
		}
	}
	return nil
}

// prefix queues a deletion by prefix: one statement per table.
func (w *writer) prefix(key []byte, sqls ...string) error {
	if w.failed != nil {
		return w.failed
	}
	if err := w.check(); err != nil {
		return err
	}
	for _, s := range sqls {
		w.q.addStmt(s, key)
	}
	return w.after("deletion")
}

func (w *writer) putJSON(ti int, what string, v any, keys ...any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("pgstore: encode %s: %w", what, err)
	}
	return w.put(ti, append(keys, string(b))...)
}

// PutMeta implements store.Writer.
func (w *writer) PutMeta(m store.Meta) error { return w.putJSON(tMeta, "meta", m, int64(1)) }

// PutConversation implements store.Writer.
func (w *writer) PutConversation(c store.ConvID, r store.Conversation) error {
	return w.putJSON(tConvs, "conversation", r, cp(c[:]))
}

// DeleteConversation implements store.Writer.
func (w *writer) DeleteConversation(c store.ConvID) error { return w.delete(tConvs, cp(c[:])) }

// PutName implements store.Writer.
func (w *writer) PutName(n store.Name, c store.ConvID) error {
	return w.put(tNames, n.Agent, int64(n.Kind), n.Value, cp(c[:]))
}

// DeleteName implements store.Writer.
func (w *writer) DeleteName(n store.Name) error {
	return w.delete(tNames, n.Agent, int64(n.Kind), n.Value)
}

// PutMessage implements store.Writer (m.Encoded is ignored: PostgreSQL
// compresses large values itself).
func (w *writer) PutMessage(c store.ConvID, m store.Message) error {
	return w.put(tMessages, messageVals(c, m)...)
}

func messageVals(c store.ConvID, m store.Message) []any {
	return []any{cp(c[:]), u(m.Seq), int64(m.Flags), int64(m.Tokens), m.Timestamp, m.Role, cp(m.Hash[:]), cp(m.Raw)}
}

var _ store.FreshWriter = (*writer)(nil)

// PutFreshMessage implements store.FreshWriter: an INSERT, which fails
// the transaction when the key holds a message.
func (w *writer) PutFreshMessage(c store.ConvID, m store.Message) error {
	return w.insert(tMessages, messageVals(c, m)...)
}

// PutFreshHash implements store.FreshWriter.
func (w *writer) PutFreshHash(c store.ConvID, h store.Hash, seq uint64) error {
	return w.insert(tHashes, cp(c[:]), cp(h[:]), u(seq))
}

// PutFreshItem implements store.FreshWriter.
func (w *writer) PutFreshItem(c store.ConvID, it store.Item) error {
	return w.insert(tItems, itemVals(cp(c[:]), it)...)
}

// DeleteMessage implements store.Writer.
func (w *writer) DeleteMessage(c store.ConvID, seq uint64) error {
	return w.delete(tMessages, cp(c[:]), u(seq))
}

// PutHash implements store.Writer.
func (w *writer) PutHash(c store.ConvID, h store.Hash, seq uint64) error {
	return w.put(tHashes, cp(c[:]), cp(h[:]), u(seq))
}

// DeleteHash implements store.Writer.
func (w *writer) DeleteHash(c store.ConvID, h store.Hash) error {
	return w.delete(tHashes, cp(c[:]), cp(h[:]))
}

// PutLarge implements store.Writer.
func (w *writer) PutLarge(c store.ConvID, seq uint64, ref []byte) error {
	return w.put(tLarge, cp(c[:]), u(seq), cp(ref))
}

// DeleteLarge implements store.Writer.
func (w *writer) DeleteLarge(c store.ConvID, seq uint64) error {
	return w.delete(tLarge, cp(c[:]), u(seq))
}

func itemVals(key []byte, it store.Item) []any {
	return []any{key, u(it.Pos), int64(it.Ref.Kind), u(it.Ref.Seq), it.Ref.ID, int64(it.Tokens), int64(it.Depth),
		it.Timestamp, it.Role, int64(it.Flags)}
}

// PutItem implements store.Writer.
func (w *writer) PutItem(c store.ConvID, it store.Item) error {
	return w.put(tItems, itemVals(cp(c[:]), it)...)
}

// DeleteItem implements store.Writer.
func (w *writer) DeleteItem(c store.ConvID, pos uint64) error {
	return w.delete(tItems, cp(c[:]), u(pos))
}

// PutSummary implements store.Writer.
func (w *writer) PutSummary(c store.ConvID, s dag.Summary) error {
	return w.putJSON(tSummaries, "summary", s, cp(c[:]), s.ID)
}

// DeleteSummary implements store.Writer.
func (w *writer) DeleteSummary(c store.ConvID, id string) error {
	return w.delete(tSummaries, cp(c[:]), id)
}

// PutEntrySeq implements store.Writer.
func (w *writer) PutEntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index, seq uint64) error {
	return w.put(tEntries, cp(c[:]), cp(tag[:]), int64(m), u(index), u(seq))
}

// DeleteEntrySeq implements store.Writer.
func (w *writer) DeleteEntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index uint64) error {
	return w.delete(tEntries, cp(c[:]), cp(tag[:]), int64(m), u(index))
}

// PutEntryIndex implements store.Writer.
func (w *writer) PutEntryIndex(c store.ConvID, tag store.FileTag, id string, index uint64) error {
	return w.put(tEntryIDs, cp(c[:]), cp(tag[:]), id, u(index))
}

// DeleteEntryIndex implements store.Writer.
func (w *writer) DeleteEntryIndex(c store.ConvID, tag store.FileTag, id string) error {
	return w.delete(tEntryIDs, cp(c[:]), cp(tag[:]), id)
}

// PutReconcileFrom implements store.Writer.
func (w *writer) PutReconcileFrom(c store.ConvID, tag store.FileTag, seq uint64) error {
	return w.put(tReconcile, cp(c[:]), cp(tag[:]), u(seq))
}

// DeleteReconcileFrom implements store.Writer.
func (w *writer) DeleteReconcileFrom(c store.ConvID, tag store.FileTag) error {
	return w.delete(tReconcile, cp(c[:]), cp(tag[:]))
}

// PutOrder implements store.Writer.
func (w *writer) PutOrder(c store.ConvID, seq, pos uint64) error {
	return w.put(tOrders, cp(c[:]), u(seq), u(pos))
}

// DeleteOrder implements store.Writer.
func (w *writer) DeleteOrder(c store.ConvID, seq uint64) error {
	return w.delete(tOrders, cp(c[:]), u(seq))
}

// PutFileCheckpoint implements store.Writer.
func (w *writer) PutFileCheckpoint(agent, path string, c store.FileCheckpoint) error {
	return w.putJSON(tFileCPs, "file checkpoint", c, agent, path)
}

// DeleteFileCheckpoint implements store.Writer.
func (w *writer) DeleteFileCheckpoint(agent, path string) error {
	return w.delete(tFileCPs, agent, path)
}

// PutHostCheckpoint implements store.Writer.
func (w *writer) PutHostCheckpoint(agent string, c store.ConvID, h store.HostCheckpoint) error {
	return w.putJSON(tHostCPs, "host checkpoint", h, agent, cp(c[:]))
}

// DeleteHostCheckpoint implements store.Writer.
func (w *writer) DeleteHostCheckpoint(agent string, c store.ConvID) error {
	return w.delete(tHostCPs, agent, cp(c[:]))
}

// PutHostEntry implements store.Writer.
func (w *writer) PutHostEntry(c store.ConvID, index uint64, e store.HostEntry) error {
	return w.put(tHostEntries, cp(c[:]), u(index), u(e.Seq), cp(e.Key[:]), e.EntryID)
}

// DeleteHostEntries implements store.Writer.
func (w *writer) DeleteHostEntries(c store.ConvID) error {
	return w.prefix(cp(c[:]), "DELETE FROM lossless_host_entries WHERE conv = $1")
}

// PutTurn implements store.Writer.
func (w *writer) PutTurn(c store.ConvID, key string, t store.Turn) error {
	return w.putJSON(tTurns, "turn", t, cp(c[:]), key)
}

// DeleteTurn implements store.Writer.
func (w *writer) DeleteTurn(c store.ConvID, key string) error {
	return w.delete(tTurns, cp(c[:]), key)
}

// PutSubagent implements store.Writer.
func (w *writer) PutSubagent(s store.SubID, r store.Subagent) error {
	return w.putJSON(tSubagents, "subagent", r, cp(s[:]))
}

// DeleteSubagent implements store.Writer.
func (w *writer) DeleteSubagent(s store.SubID) error { return w.delete(tSubagents, cp(s[:])) }

// PutSubagentByChild implements store.Writer.
func (w *writer) PutSubagentByChild(agent, sessionID string, s store.SubID) error {
	return w.put(tChildren, agent, sessionID, cp(s[:]))
}

// DeleteSubagentByChild implements store.Writer.
func (w *writer) DeleteSubagentByChild(agent, sessionID string) error {
	return w.delete(tChildren, agent, sessionID)
}

// PutForkItem implements store.Writer.
func (w *writer) PutForkItem(s store.SubID, it store.Item) error {
	return w.put(tForkItems, itemVals(cp(s[:]), it)...)
}

// DeleteForkItems implements store.Writer.
func (w *writer) DeleteForkItems(s store.SubID) error {
	return w.prefix(cp(s[:]), "DELETE FROM lossless_fork_items WHERE sub = $1")
}

// PutSubagentLink implements store.Writer.
func (w *writer) PutSubagentLink(parent store.ConvID, s store.SubID, childKey string) error {
	return w.put(tLinks, cp(parent[:]), cp(s[:]), childKey)
}

// DeleteSubagentLink implements store.Writer.
func (w *writer) DeleteSubagentLink(parent store.ConvID, s store.SubID) error {
	return w.delete(tLinks, cp(parent[:]), cp(s[:]))
}

// convData are the tables DeleteConversationData empties of a
// conversation.
var convData = func() []string {
	var out []string
	for _, ti := range []int{tMessages, tHashes, tLarge, tItems, tSummaries, tEntries, tEntryIDs, tReconcile, tHostEntries, tOrders, tTurns} {
		out = append(out, "DELETE FROM "+tables[ti].name+" WHERE conv = $1")
	}
	return out
}()

// DeleteConversationData implements store.Writer.
func (w *writer) DeleteConversationData(c store.ConvID) error {
	return w.prefix(cp(c[:]), convData...)
}
