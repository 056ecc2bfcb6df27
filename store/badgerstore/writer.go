package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// kvWriter is what a writer writes to: a *badger.Txn (Update) or a
// *badger.WriteBatch (NewBatch). Both keep the key and value slices until
// the commit: every key and value handed to them is made for the call.
type kvWriter interface {
	Set(k, v []byte) error
	Delete(k []byte) error
}

// writer implements store.Writer on a kvWriter.
type writer struct {
	kv kvWriter
	// rtxn is the transaction the deletions that scan read (Update's own,
	// which sees its writes); nil in a batch, which reads a snapshot of
	// what is committed. (So rtxn != nil means an Update's writer.)
	rtxn *badger.Txn
	ctx  context.Context
	s    *Store
	// end is set when the transaction or batch ended: every write then
	// fails with it.
	end error
	// limit bounds the bytes an Update writes (0 in a batch); size counts
	// them as Badger does: a key and its value when the value is stored in
	// the LSM tree, a key and a pointer when it goes to the value log (from
	// valueThreshold bytes), so that one message of any size the engine
	// accepts fits in an Update beside others, as it does in Badger.
	limit, size int64
	// failed is the first write of an Update that failed in Badger or went
	// over limit: the Update then fails with it whatever fn returns, so
	// that an ignored error never commits part of fn's writes.
	failed error
}

var _ store.Writer = (*writer)(nil)

// tx is the store.Tx of an Update.
type tx struct {
	reader
	writer
}

var _ store.Tx = (*tx)(nil)

func (w *writer) check() error {
	if w.end != nil {
		return w.end
	}
	if w.failed != nil {
		return w.failed
	}
	if w.rtxn == nil && w.s.closedFlag.Load() {
		return fmt.Errorf("badgerstore: batch: %w", store.ErrClosed)
	}
	return nil
}

// valueThreshold is Badger's ValueThreshold (options.go): values of this
// size or more are stored in the value log.
const valueThreshold = 1 << 10

// valueCost is what a value of n bytes counts toward an Update's size: the
// value, or the value-log pointer standing for it in the LSM tree.
func valueCost(n int) int {
	if n >= valueThreshold {
		return 16
	}
	return n
}

// count adds n bytes to an Update's size: store.ErrTooBig over its limit.
func (w *writer) count(n int, what string) error {
	if w.limit == 0 {
		return nil
	}
	if w.size += int64(n); w.size > w.limit {
		return fmt.Errorf("badgerstore: write %s: the transaction writes over %d bytes: %w", what, w.limit, store.ErrTooBig)
	}
	return nil
}

// fail records the first failed write of an Update (see failed).
func (w *writer) fail(err error) error {
	w.s.space.noted(err)
	if w.rtxn != nil && w.failed == nil {
		w.failed = err
	}
	return err
}

func (w *writer) set(k, v []byte, what string) error {
	if err := w.check(); err != nil {
		return err
	}
	if err := w.count(len(k)+valueCost(len(v)), what); err != nil {
		return w.fail(err)
	}
	if err := w.kv.Set(k, v); err != nil {
		return w.fail(wrapErr("write "+what, err))
	}
	return nil
}

func (w *writer) del(k []byte, what string) error {
	if err := w.check(); err != nil {
		return err
	}
	if err := w.count(len(k), what); err != nil {
		return w.fail(err)
	}
	if err := w.kv.Delete(k); err != nil {
		return w.fail(wrapErr("delete "+what, err))
	}
	return nil
}

func (w *writer) setJSON(k []byte, what string, v any) error {
	b, err := encodeJSON(k, what, v)
	if err != nil {
		return err
	}
	return w.set(k, b, what)
}

// setU64 writes a record holding one 8-byte integer, checked.
func (w *writer) setU64(k []byte, n uint64, what string) error {
	return w.set(k, fixedValue(k, u64Bytes(n)), what)
}

// view runs fn on the transaction the writer reads: Update's own, or a
// read-only snapshot for a batch.
func (w *writer) view(fn func(txn *badger.Txn) error) error {
	if err := w.check(); err != nil {
		return err
	}
	if w.rtxn != nil {
		return fn(w.rtxn)
	}
	if err := w.s.enter(); err != nil {
		return err
	}
	defer w.s.exit()
	txn := w.s.db.NewTransaction(false)
	defer txn.Discard()
	return fn(txn)
}

// deletePrefix deletes every key under prefix.
func (w *writer) deletePrefix(prefix []byte, what string) error {
	return w.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		n := 0
		for it.Rewind(); it.Valid(); it.Next() {
			if n++; n%256 == 0 {
				if err := w.ctx.Err(); err != nil {
					return fmt.Errorf("badgerstore: delete %s: %w", what, err)
				}
			}
			if err := w.del(it.Item().KeyCopy(nil), what); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return wrapErr("delete "+what, err)
		}
		return nil
	})
}

// PutMeta writes the format record.
func (w *writer) PutMeta(m store.Meta) error {
	b, err := encodeMeta(m)
	if err != nil {
		return err
	}
	return w.set(metaKey, b, "format record")
}

// PutConversation writes conversation c's record.
func (w *writer) PutConversation(c store.ConvID, r store.Conversation) error {
	return w.setJSON(convKey(c), "conversation", r)
}

// DeleteConversation deletes conversation c's record.
func (w *writer) DeleteConversation(c store.ConvID) error {
	return w.del(convKey(c), "conversation")
}

// PutName maps name n to conversation c.
func (w *writer) PutName(n store.Name, c store.ConvID) error {
	k := nameKey(n)
	return w.set(k, fixedValue(k, c[:]), "name")
}

// DeleteName deletes name n.
func (w *writer) DeleteName(n store.Name) error { return w.del(nameKey(n), "name") }

// PutMessage stores message m.Seq of c, its body compressed as package
// lossless does. When m.Encoded is set (Store.EncodeMessage's record) it is
// stored as it is (a copy), once its header is found to match m's fields:
// a record encoded before the message changed is refused.
func (w *writer) PutMessage(c store.ConvID, m store.Message) error {
	if m.Tokens < 0 {
		return fmt.Errorf("badgerstore: message %d: token count %d", m.Seq, m.Tokens)
	}
	if m.Encoded == nil {
		return w.set(msgKey(c, m.Seq), encodeMsg(&m), "message")
	}
	if err := checkEncoded(&m); err != nil {
		return err
	}
	return w.set(msgKey(c, m.Seq), bytes.Clone(m.Encoded), "message")
}

// checkEncoded checks that m.Encoded is a message record whose header is
// m's (the body is not decompressed: that is what encoding ahead saves).
func checkEncoded(m *store.Message) error {
	h := store.Message{Seq: m.Seq}
	if _, err := decodeMsgHead(m.Encoded, &h); err != nil {
		return fmt.Errorf("badgerstore: message %d: Encoded is not a message record (%v)", m.Seq, err)
	}
	if h.Flags != m.Flags || h.Tokens != m.Tokens || h.Timestamp != m.Timestamp || h.Role != m.Role || h.Hash != m.Hash {
		return fmt.Errorf("badgerstore: message %d: the header of Encoded differs from the message's fields (encoded before they changed?)", m.Seq)
	}
	return nil
}

// DeleteMessage deletes message seq of c (not its key index, item or
// large reference).
func (w *writer) DeleteMessage(c store.ConvID, seq uint64) error {
	return w.del(msgKey(c, seq), "message")
}

// PutHash indexes message key h to seq.
func (w *writer) PutHash(c store.ConvID, h store.Hash, seq uint64) error {
	return w.setU64(hashKey(c, h), seq, "message key index")
}

// DeleteHash deletes message key h from the index.
func (w *writer) DeleteHash(c store.ConvID, h store.Hash) error {
	return w.del(hashKey(c, h), "message key index")
}

// PutLarge stores the reference text standing for large message seq (ref
// is copied).
func (w *writer) PutLarge(c store.ConvID, seq uint64, ref []byte) error {
	k := largeKey(c, seq)
	return w.set(k, checked(k, ref), "large reference")
}

// DeleteLarge deletes the reference of large message seq.
func (w *writer) DeleteLarge(c store.ConvID, seq uint64) error {
	return w.del(largeKey(c, seq), "large reference")
}

// PutItem stores context item it at it.Pos.
func (w *writer) PutItem(c store.ConvID, it store.Item) error {
	if err := checkItem(&it.Item); err != nil {
		return err
	}
	k := itemKey(c, it.Pos)
	return w.set(k, encodeItem(k, &it.Item, it.Flags), "item")
}

// DeleteItem deletes the context item at pos.
func (w *writer) DeleteItem(c store.ConvID, pos uint64) error {
	return w.del(itemKey(c, pos), "item")
}

// PutSummary stores summary s (its id must not be empty).
func (w *writer) PutSummary(c store.ConvID, s dag.Summary) error {
	if s.ID == "" {
		return errors.New("badgerstore: summary without id")
	}
	k := summaryKey(c, s.ID)
	v, err := encodeSummary(k, &s)
	if err != nil {
		return err
	}
	return w.set(k, v, "summary")
}

// DeleteSummary deletes summary id.
func (w *writer) DeleteSummary(c store.ConvID, id string) error {
	return w.del(summaryKey(c, id), "summary")
}

// PutEntrySeq maps entry index of file tag's map m to message seq.
func (w *writer) PutEntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index, seq uint64) error {
	if err := checkEntryMap(m); err != nil {
		return err
	}
	return w.setU64(entryKey(c, tag, byte(m), index), seq, "entry map")
}

// DeleteEntrySeq deletes entry index of file tag's map m.
func (w *writer) DeleteEntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index uint64) error {
	if err := checkEntryMap(m); err != nil {
		return err
	}
	return w.del(entryKey(c, tag, byte(m), index), "entry map")
}

// PutEntryIndex maps entry id of file tag to its index.
func (w *writer) PutEntryIndex(c store.ConvID, tag store.FileTag, id string, index uint64) error {
	return w.setU64(entryIDKey(c, tag, id), index, "entry id")
}

// DeleteEntryIndex deletes entry id of file tag.
func (w *writer) DeleteEntryIndex(c store.ConvID, tag store.FileTag, id string) error {
	return w.del(entryIDKey(c, tag, id), "entry id")
}

// PutReconcileFrom records the first sequence number an unreconciled read
// of file tag may append.
func (w *writer) PutReconcileFrom(c store.ConvID, tag store.FileTag, seq uint64) error {
	return w.setU64(reconcileFromKey(c, tag), seq, "reconcile record")
}

// DeleteReconcileFrom deletes file tag's reconcile record.
func (w *writer) DeleteReconcileFrom(c store.ConvID, tag store.FileTag) error {
	return w.del(reconcileFromKey(c, tag), "reconcile record")
}

// PutOrder records the order position of a moved message.
func (w *writer) PutOrder(c store.ConvID, seq, pos uint64) error {
	return w.setU64(orderKey(c, seq), pos, "order record")
}

// DeleteOrder deletes seq's order record.
func (w *writer) DeleteOrder(c store.ConvID, seq uint64) error {
	return w.del(orderKey(c, seq), "order record")
}

// PutFileCheckpoint writes an imported file's checkpoint.
func (w *writer) PutFileCheckpoint(agent, path string, cp store.FileCheckpoint) error {
	return w.setJSON(checkKey(agent, path), "file checkpoint", cp)
}

// DeleteFileCheckpoint deletes an imported file's checkpoint.
func (w *writer) DeleteFileCheckpoint(agent, path string) error {
	return w.del(checkKey(agent, path), "file checkpoint")
}

// PutHostCheckpoint writes a host-kept transcript's checkpoint.
func (w *writer) PutHostCheckpoint(agent string, c store.ConvID, cp store.HostCheckpoint) error {
	return w.setJSON(hostCheckKey(agent, c), "host checkpoint", cp)
}

// DeleteHostCheckpoint deletes a host-kept transcript's checkpoint.
func (w *writer) DeleteHostCheckpoint(agent string, c store.ConvID) error {
	return w.del(hostCheckKey(agent, c), "host checkpoint")
}

// PutTurn records the committed turn of advancement key.
func (w *writer) PutTurn(c store.ConvID, key string, t store.Turn) error {
	return w.setJSON(turnKey(c, key), "turn", t)
}

// DeleteTurn deletes the committed turn of advancement key.
func (w *writer) DeleteTurn(c store.ConvID, key string) error {
	return w.del(turnKey(c, key), "turn")
}

// PutSubagent writes a subagent record.
func (w *writer) PutSubagent(s store.SubID, r store.Subagent) error {
	return w.setJSON(subKey(s), "subagent", r)
}

// DeleteSubagent deletes a subagent record.
func (w *writer) DeleteSubagent(s store.SubID) error { return w.del(subKey(s), "subagent") }

// PutSubagentByChild maps a child session id to its subagent.
func (w *writer) PutSubagentByChild(agent, sessionID string, s store.SubID) error {
	k := subAliasKey(agent, sessionID)
	return w.set(k, fixedValue(k, s[:]), "subagent alias")
}

// DeleteSubagentByChild deletes a child session id's mapping.
func (w *writer) DeleteSubagentByChild(agent, sessionID string) error {
	return w.del(subAliasKey(agent, sessionID), "subagent alias")
}

// PutForkItem stores item it of subagent s's fork snapshot.
func (w *writer) PutForkItem(s store.SubID, it store.Item) error {
	if err := checkItem(&it.Item); err != nil {
		return err
	}
	k := forkItemKey(s, it.Pos)
	return w.set(k, encodeItem(k, &it.Item, it.Flags), "fork item")
}

// DeleteForkItems deletes subagent s's fork snapshot. In an Update a large
// snapshot may exceed the transaction limit (store.ErrTooBig); a batch
// deletes any size.
func (w *writer) DeleteForkItems(s store.SubID) error {
	return w.deletePrefix(convPrefix(pForkItem, s), "fork snapshot")
}

// PutSubagentLink links ended child s to conversation parent; the link's
// value is the child's session key, as package lossless writes it.
func (w *writer) PutSubagentLink(parent store.ConvID, s store.SubID, childKey string) error {
	k := subLinkKey(parent, s)
	return w.set(k, checked(k, []byte(childKey)), "subagent link")
}

// DeleteSubagentLink deletes the link of child s to parent.
func (w *writer) DeleteSubagentLink(parent store.ConvID, s store.SubID) error {
	return w.del(subLinkKey(parent, s), "subagent link")
}

// DeleteConversationData deletes every key under the conversation-scoped
// prefixes followed by c (messages, key index, items, large references,
// summaries, entry maps with their reconcile records and host entries,
// order records, turns): lossless/retention's conversation-scoped deletion. In an
// Update a large conversation exceeds the transaction limit
// (store.ErrTooBig); retention deletes with a batch, which deletes the keys
// committed when it is called.
func (w *writer) DeleteConversationData(c store.ConvID) error {
	for _, p := range convScoped {
		if err := w.deletePrefix(convPrefix(p, c), "conversation data"); err != nil {
			return err
		}
	}
	return nil
}

// batch is the store.Batch of NewBatch.
type batch struct {
	writer
	wb *badger.WriteBatch
}

var _ store.Batch = (*batch)(nil)

// Flush commits what the batch holds and waits for every part of it. The
// batch is done after Flush, whatever its result.
func (b *batch) Flush() error {
	if b.end != nil {
		return b.end
	}
	b.end = errEnded
	if err := b.s.enter(); err != nil {
		return err // closed: the database, and the batch's writes, are gone
	}
	defer b.s.exit()
	if err := b.ctx.Err(); err != nil {
		b.wb.Cancel()
		return fmt.Errorf("badgerstore: flush: %w", err)
	}
	if err := b.wb.Flush(); err != nil {
		b.wb.Cancel()
		return b.s.space.noted(wrapErr("flush", err))
	}
	return nil
}

// Cancel drops the batch's writes not yet committed (parts committed as
// the batch grew stay). It is a no-op after Flush or Cancel.
func (b *batch) Cancel() {
	if b.end != nil {
		return
	}
	b.end = errEnded
	if !b.s.closedFlag.Load() {
		b.wb.Cancel()
	}
}
