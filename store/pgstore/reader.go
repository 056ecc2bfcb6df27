package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// reader is the store.Reader of a View or Update: a PostgreSQL
// transaction on one connection, begun with its first statement (begin is
// the BEGIN not sent yet). In an Update, w holds the transaction's queued
// writes, sent in the same round trip as its next read, so that the
// transaction reads its own writes.
type reader struct {
	ctx   context.Context
	conn  *pgx.Conn
	begin string
	w     *writer // nil in a View
	done  bool
}

var _ store.Reader = (*reader)(nil)

// query runs a read, pipelined after the BEGIN and the queued writes when
// there are any.
func (r *reader) query(sql string, args ...any) (pgx.Rows, error) {
	if r.done {
		return nil, errEnded
	}
	pending := false
	if r.w != nil {
		if r.w.failed != nil {
			return nil, r.w.failed
		}
		pending = !r.w.q.empty()
	}
	if r.begin == "" && !pending {
		rows, _ := r.conn.Query(r.ctx, sql, args...)
		return rows, nil
	}
	var b pgx.Batch
	n := 0
	if r.begin != "" {
		b.Queue(r.begin)
		r.begin = ""
		n++
	}
	if pending {
		n += r.w.q.appendTo(&b)
	}
	b.Queue(sql, args...)
	br := r.conn.SendBatch(r.ctx, &b)
	for range n {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			err = wrapErr("write", err)
			if r.w != nil {
				r.w.failed = err
			}
			return nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// batchRows are the rows of a batch's last statement: closing them closes
// the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (b *batchRows) Close() {
	b.Rows.Close()
	if b.br != nil {
		b.err = b.br.Close()
		b.br = nil
	}
}

func (b *batchRows) Err() error {
	if err := b.Rows.Err(); err != nil {
		return err
	}
	return b.err
}

// notFoundError is a missing record: store.ErrNotFound, with its message
// formatted only when asked for (the ingest path looks up the key of every
// new message, and almost all of those lookups miss).
type notFoundError struct {
	what string
	key  any
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("pgstore: %s %v: %v", e.what, e.key, store.ErrNotFound)
}

func (e *notFoundError) Unwrap() error { return store.ErrNotFound }

// corrupt is a record that does not decode.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("pgstore: %s: %w", fmt.Sprintf(format, args...), store.ErrCorrupt)
}

// wrapErr names the operation of a PostgreSQL error.
func wrapErr(op string, err error) error {
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// row reads one row into dest; key names the record in a not-found error.
func (r *reader) row(what string, key any, sql string, args []any, dest ...any) error {
	rows, err := r.query(sql, args...)
	if err != nil {
		return err
	}
	if !rows.Next() {
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrapErr("read "+what, err)
		}
		return &notFoundError{what: what, key: key}
	}
	err = rows.Scan(dest...)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return wrapErr("read "+what, err)
	}
	return nil
}

// u64Row reads a record holding one number.
func (r *reader) u64Row(what string, key any, sql string, args ...any) (uint64, error) {
	var v int64
	err := r.row(what, key, sql, args, &v)
	return uint64(v), err
}

func decodeJSON(what string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return corrupt("%s: %v", what, err)
	}
	return nil
}

// jsonRow reads a record stored as json.
func (r *reader) jsonRow(what string, key any, v any, sql string, args ...any) error {
	var b []byte
	if err := r.row(what, key, sql, args, &b); err != nil {
		return err
	}
	return decodeJSON(what, b, v)
}

// Meta implements store.Reader.
func (r *reader) Meta() (store.Meta, error) {
	var m store.Meta
	err := r.jsonRow("meta", "", &m, "SELECT rec FROM lossless_meta WHERE id = 1")
	return m, err
}

// hasDataSQL asks whether any table of the store's records but the format
// record's (lossless_meta) holds a row; the recall tables, derived from
// the records, are left out.
const hasDataSQL = "SELECT " +
	"EXISTS (SELECT 1 FROM lossless_conversations) OR " +
	"EXISTS (SELECT 1 FROM lossless_names) OR " +
	"EXISTS (SELECT 1 FROM lossless_messages) OR " +
	"EXISTS (SELECT 1 FROM lossless_hashes) OR " +
	"EXISTS (SELECT 1 FROM lossless_large) OR " +
	"EXISTS (SELECT 1 FROM lossless_items) OR " +
	"EXISTS (SELECT 1 FROM lossless_summaries) OR " +
	"EXISTS (SELECT 1 FROM lossless_entries) OR " +
	"EXISTS (SELECT 1 FROM lossless_entry_ids) OR " +
	"EXISTS (SELECT 1 FROM lossless_reconcile) OR " +
	"EXISTS (SELECT 1 FROM lossless_host_entries) OR " +
	"EXISTS (SELECT 1 FROM lossless_orders) OR " +
	"EXISTS (SELECT 1 FROM lossless_file_checkpoints) OR " +
	"EXISTS (SELECT 1 FROM lossless_host_checkpoints) OR " +
	"EXISTS (SELECT 1 FROM lossless_turns) OR " +
	"EXISTS (SELECT 1 FROM lossless_subagents) OR " +
	"EXISTS (SELECT 1 FROM lossless_subagent_children) OR " +
	"EXISTS (SELECT 1 FROM lossless_fork_items) OR " +
	"EXISTS (SELECT 1 FROM lossless_subagent_links)"

// HasData implements store.Reader.
func (r *reader) HasData() (bool, error) {
	var has bool
	err := r.row("records", "", hasDataSQL, nil, &has)
	return has, err
}

// Conversation implements store.Reader.
func (r *reader) Conversation(c store.ConvID) (store.Conversation, error) {
	var v store.Conversation
	err := r.jsonRow("conversation", c, &v, "SELECT rec FROM lossless_conversations WHERE conv = $1", c[:])
	return v, err
}

// ConvByName implements store.Reader.
func (r *reader) ConvByName(n store.Name) (store.ConvID, error) {
	var b []byte
	var c store.ConvID
	err := r.row("name", n, "SELECT conv FROM lossless_names WHERE agent = $1 AND kind = $2 AND value = $3",
		[]any{n.Agent, int16(n.Kind), n.Value}, &b)
	if err != nil {
		return c, err
	}
	if len(b) != len(c) {
		return c, corrupt("name %+v: conversation id of %d bytes", n, len(b))
	}
	copy(c[:], b)
	return c, nil
}

const msgHeader = "seq, flags, tokens, ts, role, hash"

func scanMessage(rows pgx.CollectableRow, withRaw bool) (store.Message, error) {
	var m store.Message
	var seq int64
	var flags int16
	var tokens int64
	var hash []byte
	dest := []any{&seq, &flags, &tokens, &m.Timestamp, &m.Role, &hash}
	if withRaw {
		dest = append(dest, &m.Raw)
	}
	if err := rows.Scan(dest...); err != nil {
		return m, wrapErr("read message", err)
	}
	m.Seq, m.Flags, m.Tokens = uint64(seq), byte(flags), int(tokens)
	if len(hash) != len(m.Hash) {
		return m, corrupt("message %d: key of %d bytes", m.Seq, len(hash))
	}
	copy(m.Hash[:], hash)
	if withRaw && m.Raw == nil {
		m.Raw = []byte{}
	}
	return m, nil
}

func (r *reader) message(c store.ConvID, seq uint64, withRaw bool) (store.Message, error) {
	sql := "SELECT " + msgHeader + " FROM lossless_messages WHERE conv = $1 AND seq = $2"
	if withRaw {
		sql = "SELECT " + msgHeader + ", raw FROM lossless_messages WHERE conv = $1 AND seq = $2"
	}
	rows, err := r.query(sql, c[:], u(seq))
	if err != nil {
		return store.Message{}, err
	}
	m, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (store.Message, error) { return scanMessage(row, withRaw) })
	if errors.Is(err, pgx.ErrNoRows) {
		return m, &notFoundError{what: "message", key: cseqKey{c, seq}}
	}
	return m, err
}

// cseqKey names a record of a conversation in a not-found error.
type cseqKey struct {
	c   store.ConvID
	seq uint64
}

func (k cseqKey) String() string { return fmt.Sprintf("%s/%d", k.c, k.seq) }

// Message implements store.Reader.
func (r *reader) Message(c store.ConvID, seq uint64) (store.Message, error) {
	return r.message(c, seq, true)
}

// MessageHeader implements store.Reader.
func (r *reader) MessageHeader(c store.ConvID, seq uint64) (store.Message, error) {
	return r.message(c, seq, false)
}

// Messages implements store.Reader.
func (r *reader) Messages(c store.ConvID, from uint64, withRaw bool) iter.Seq2[store.Message, error] {
	sql := "SELECT " + msgHeader + " FROM lossless_messages WHERE conv = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq LIMIT $4"
	maxPage := maxPageRows
	if withRaw {
		sql = "SELECT " + msgHeader + ", raw FROM lossless_messages WHERE conv = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq LIMIT $4"
		maxPage = maxPageRaw
	}
	return u64Scan(r, "messages", from, math.MaxUint64, sql, "", maxPage, []any{c[:]},
		func(row pgx.CollectableRow) (store.Message, uint64, error) {
			m, err := scanMessage(row, withRaw)
			return m, m.Seq, err
		})
}

// SeqByHash implements store.Reader.
func (r *reader) SeqByHash(c store.ConvID, h store.Hash) (uint64, error) {
	return r.u64Row("message key", h, "SELECT seq FROM lossless_hashes WHERE conv = $1 AND hash = $2", c[:], h[:])
}

var _ store.HashBatchReader = (*reader)(nil)

// SeqsByHash implements store.HashBatchReader: one query for every key.
func (r *reader) SeqsByHash(c store.ConvID, hs []store.Hash) ([]uint64, []bool, error) {
	seqs, found := make([]uint64, len(hs)), make([]bool, len(hs))
	if len(hs) == 0 {
		return seqs, found, nil
	}
	keys := make([][]byte, len(hs))
	for i := range hs {
		keys[i] = hs[i][:]
	}
	rows, err := r.query(`SELECT u.i, h.seq FROM unnest($2::bytea[]) WITH ORDINALITY u(hash, i)
		JOIN lossless_hashes h ON h.conv = $1 AND h.hash = u.hash`, c[:], keys)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var i, seq int64
		if err := rows.Scan(&i, &seq); err != nil {
			return nil, nil, wrapErr("read message keys", err)
		}
		if i < 1 || i > int64(len(hs)) {
			return nil, nil, corrupt("message keys: ordinal %d of %d keys", i, len(hs))
		}
		seqs[i-1], found[i-1] = uint64(seq), true
	}
	if err := rows.Err(); err != nil {
		return nil, nil, wrapErr("read message keys", err)
	}
	return seqs, found, nil
}

// Large implements store.Reader.
func (r *reader) Large(c store.ConvID, seq uint64) ([]byte, error) {
	var b []byte
	err := r.row("large reference", cseqKey{c, seq}, "SELECT ref FROM lossless_large WHERE conv = $1 AND seq = $2",
		[]any{c[:], u(seq)}, &b)
	if err == nil && b == nil {
		b = []byte{}
	}
	return b, err
}

const itemColsSQL = "pos, ref_kind, ref_seq, ref_id, tokens, depth, ts, role, flags"

func scanItem(row pgx.CollectableRow) (store.Item, uint64, error) {
	if it, ok := decodeItem(row); ok {
		return it, it.Pos, nil
	}
	var it store.Item
	var pos, refSeq, tokens int64
	var kind, flags int16
	var depth int32
	if err := row.Scan(&pos, &kind, &refSeq, &it.Ref.ID, &tokens, &depth, &it.Timestamp, &it.Role, &flags); err != nil {
		return it, 0, wrapErr("read item", err)
	}
	it.Pos, it.Ref.Kind, it.Ref.Seq, it.Tokens, it.Depth, it.Flags = uint64(pos), dag.RefKind(kind), uint64(refSeq), int(tokens), int(depth), byte(flags)
	return it, it.Pos, nil
}

// Item implements store.Reader.
func (r *reader) Item(c store.ConvID, pos uint64) (store.Item, error) {
	rows, err := r.query("SELECT "+itemColsSQL+" FROM lossless_items WHERE conv = $1 AND pos = $2", c[:], u(pos))
	if err != nil {
		return store.Item{}, err
	}
	it, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (store.Item, error) {
		it, _, err := scanItem(row)
		return it, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return it, &notFoundError{what: "item", key: cseqKey{c, pos}}
	}
	return it, err
}

// Items implements store.Reader.
func (r *reader) Items(c store.ConvID, from, to uint64, reverse bool) iter.Seq2[store.Item, error] {
	const base = "SELECT " + itemColsSQL + " FROM lossless_items WHERE conv = $1 AND pos BETWEEN $2 AND $3 ORDER BY pos"
	desc := ""
	if reverse {
		desc = base + " DESC LIMIT $4"
	}
	return u64Scan(r, "items", from, to, base+" LIMIT $4", desc, maxPageRows, []any{c[:]}, scanItem)
}

// Summary implements store.Reader.
func (r *reader) Summary(c store.ConvID, id string) (dag.Summary, error) {
	var s dag.Summary
	err := r.jsonRow("summary", id, &s, "SELECT rec FROM lossless_summaries WHERE conv = $1 AND id = $2", c[:], id)
	return s, err
}

// Summaries implements store.Reader.
func (r *reader) Summaries(c store.ConvID) iter.Seq2[dag.Summary, error] {
	var last string
	return keysetScan(r, "summaries",
		func(first bool) (string, []any) {
			if first {
				return "SELECT id, rec FROM lossless_summaries WHERE conv = $2 ORDER BY id LIMIT $1", []any{c[:]}
			}
			return "SELECT id, rec FROM lossless_summaries WHERE conv = $2 AND id > $3 ORDER BY id LIMIT $1", []any{c[:], last}
		},
		func(row pgx.CollectableRow) (dag.Summary, error) {
			var rec []byte
			var s dag.Summary
			if err := row.Scan(&last, &rec); err != nil {
				return s, wrapErr("read summary", err)
			}
			return s, decodeJSON("summary "+last, rec, &s)
		})
}

// EntrySeq implements store.Reader.
func (r *reader) EntrySeq(c store.ConvID, tag store.FileTag, m store.EntryMap, index uint64) (uint64, error) {
	return r.u64Row("entry", index, "SELECT seq FROM lossless_entries WHERE conv = $1 AND tag = $2 AND map = $3 AND idx = $4",
		c[:], tag[:], int16(m), u(index))
}

// EntryIndex implements store.Reader.
func (r *reader) EntryIndex(c store.ConvID, tag store.FileTag, id string) (uint64, error) {
	return r.u64Row("entry id", id, "SELECT idx FROM lossless_entry_ids WHERE conv = $1 AND tag = $2 AND entry_id = $3",
		c[:], tag[:], id)
}

// Entries implements store.Reader.
func (r *reader) Entries(c store.ConvID, tag store.FileTag, m store.EntryMap, from uint64) iter.Seq2[store.EntryPair, error] {
	return u64Scan(r, "entries", from, math.MaxUint64,
		"SELECT idx, seq FROM lossless_entries WHERE conv = $1 AND tag = $5 AND map = $6 AND idx BETWEEN $2 AND $3 ORDER BY idx LIMIT $4",
		"", maxPageRows, []any{c[:], tag[:], int16(m)},
		func(row pgx.CollectableRow) (store.EntryPair, uint64, error) {
			var idx, seq int64
			if err := row.Scan(&idx, &seq); err != nil {
				return store.EntryPair{}, 0, wrapErr("read entry", err)
			}
			return store.EntryPair{Index: uint64(idx), Seq: uint64(seq)}, uint64(idx), nil
		})
}

// ReconcileFrom implements store.Reader.
func (r *reader) ReconcileFrom(c store.ConvID, tag store.FileTag) (uint64, error) {
	return r.u64Row("reconcile record", tag, "SELECT seq FROM lossless_reconcile WHERE conv = $1 AND tag = $2", c[:], tag[:])
}

func scanHostEntry(row pgx.CollectableRow) (store.HostEntryRecord, uint64, error) {
	var e store.HostEntryRecord
	var idx, seq int64
	var key []byte
	if err := row.Scan(&idx, &seq, &key, &e.EntryID); err != nil {
		return e, 0, wrapErr("read host entry", err)
	}
	e.Index, e.Seq = uint64(idx), uint64(seq)
	if len(key) != len(e.Key) {
		return e, 0, corrupt("host entry %d: key of %d bytes", e.Index, len(key))
	}
	copy(e.Key[:], key)
	return e, e.Index, nil
}

// HostEntry implements store.Reader.
func (r *reader) HostEntry(c store.ConvID, index uint64) (store.HostEntry, error) {
	rows, err := r.query("SELECT idx, seq, key, entry_id FROM lossless_host_entries WHERE conv = $1 AND idx = $2", c[:], u(index))
	if err != nil {
		return store.HostEntry{}, err
	}
	e, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (store.HostEntryRecord, error) {
		e, _, err := scanHostEntry(row)
		return e, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return e.HostEntry, &notFoundError{what: "host entry", key: cseqKey{c, index}}
	}
	return e.HostEntry, err
}

// HostEntries implements store.Reader.
func (r *reader) HostEntries(c store.ConvID, from uint64) iter.Seq2[store.HostEntryRecord, error] {
	return u64Scan(r, "host entries", from, math.MaxUint64,
		"SELECT idx, seq, key, entry_id FROM lossless_host_entries WHERE conv = $1 AND idx BETWEEN $2 AND $3 ORDER BY idx LIMIT $4",
		"", maxPageRows, []any{c[:]}, scanHostEntry)
}

// Order implements store.Reader.
func (r *reader) Order(c store.ConvID, seq uint64) (uint64, error) {
	return r.u64Row("order record", cseqKey{c, seq}, "SELECT pos FROM lossless_orders WHERE conv = $1 AND seq = $2", c[:], u(seq))
}

// Orders implements store.Reader.
func (r *reader) Orders(c store.ConvID) iter.Seq2[store.Pair, error] {
	return u64Scan(r, "order records", 0, math.MaxUint64,
		"SELECT seq, pos FROM lossless_orders WHERE conv = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq LIMIT $4",
		"", maxPageRows, []any{c[:]},
		func(row pgx.CollectableRow) (store.Pair, uint64, error) {
			var seq, pos int64
			if err := row.Scan(&seq, &pos); err != nil {
				return store.Pair{}, 0, wrapErr("read order record", err)
			}
			return store.Pair{Key: uint64(seq), Value: uint64(pos)}, uint64(seq), nil
		})
}

// FileCheckpoint implements store.Reader.
func (r *reader) FileCheckpoint(agent, path string) (store.FileCheckpoint, error) {
	var v store.FileCheckpoint
	err := r.jsonRow("file checkpoint", agent+":"+path, &v,
		"SELECT rec FROM lossless_file_checkpoints WHERE agent = $1 AND path = $2", agent, path)
	return v, err
}

// HostCheckpoint implements store.Reader.
func (r *reader) HostCheckpoint(agent string, c store.ConvID) (store.HostCheckpoint, error) {
	var v store.HostCheckpoint
	err := r.jsonRow("host checkpoint", c, &v,
		"SELECT rec FROM lossless_host_checkpoints WHERE agent = $1 AND conv = $2", agent, c[:])
	return v, err
}

// Checkpoints implements store.Reader: the file checkpoints, then the host
// ones.
func (r *reader) Checkpoints() iter.Seq2[store.CheckpointRecord, error] {
	var agent, path string
	files := keysetScan(r, "file checkpoints",
		func(first bool) (string, []any) {
			if first {
				return "SELECT agent, path, rec FROM lossless_file_checkpoints ORDER BY agent, path LIMIT $1", nil
			}
			return "SELECT agent, path, rec FROM lossless_file_checkpoints WHERE (agent, path) > ($2, $3) ORDER BY agent, path LIMIT $1",
				[]any{agent, path}
		},
		func(row pgx.CollectableRow) (store.CheckpointRecord, error) {
			var rec []byte
			if err := row.Scan(&agent, &path, &rec); err != nil {
				return store.CheckpointRecord{}, wrapErr("read file checkpoint", err)
			}
			cp := store.CheckpointRecord{Agent: agent, Path: path, File: new(store.FileCheckpoint)}
			return cp, decodeJSON("file checkpoint", rec, cp.File)
		})
	var hagent string
	var hconv []byte
	hosts := keysetScan(r, "host checkpoints",
		func(first bool) (string, []any) {
			if first {
				return "SELECT agent, conv, rec FROM lossless_host_checkpoints ORDER BY agent, conv LIMIT $1", nil
			}
			return "SELECT agent, conv, rec FROM lossless_host_checkpoints WHERE (agent, conv) > ($2, $3) ORDER BY agent, conv LIMIT $1",
				[]any{hagent, hconv}
		},
		func(row pgx.CollectableRow) (store.CheckpointRecord, error) {
			var rec []byte
			if err := row.Scan(&hagent, &hconv, &rec); err != nil {
				return store.CheckpointRecord{}, wrapErr("read host checkpoint", err)
			}
			cp := store.CheckpointRecord{Agent: hagent, Host: new(store.HostCheckpoint)}
			if len(hconv) != len(cp.HostConv) {
				return cp, corrupt("host checkpoint of %q: conversation id of %d bytes", hagent, len(hconv))
			}
			copy(cp.HostConv[:], hconv)
			return cp, decodeJSON("host checkpoint", rec, cp.Host)
		})
	return func(yield func(store.CheckpointRecord, error) bool) {
		for v, err := range files {
			if !yield(v, err) || err != nil {
				return
			}
		}
		for v, err := range hosts {
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// Turn implements store.Reader.
func (r *reader) Turn(c store.ConvID, key string) (store.Turn, error) {
	var v store.Turn
	err := r.jsonRow("turn", key, &v, "SELECT rec FROM lossless_turns WHERE conv = $1 AND key = $2", c[:], key)
	return v, err
}

// Subagent implements store.Reader.
func (r *reader) Subagent(s store.SubID) (store.Subagent, error) {
	var v store.Subagent
	err := r.jsonRow("subagent", fmt.Sprintf("%x", s), &v, "SELECT rec FROM lossless_subagents WHERE sub = $1", s[:])
	return v, err
}

// SubagentByChild implements store.Reader.
func (r *reader) SubagentByChild(agent, sessionID string) (store.SubID, error) {
	var b []byte
	var s store.SubID
	err := r.row("subagent child", agent+":"+sessionID,
		"SELECT sub FROM lossless_subagent_children WHERE agent = $1 AND session_id = $2", []any{agent, sessionID}, &b)
	if err != nil {
		return s, err
	}
	if len(b) != len(s) {
		return s, corrupt("subagent child %q: id of %d bytes", sessionID, len(b))
	}
	copy(s[:], b)
	return s, nil
}

// Subagents implements store.Reader.
func (r *reader) Subagents() iter.Seq2[store.SubagentRecord, error] {
	var last []byte
	return keysetScan(r, "subagents",
		func(first bool) (string, []any) {
			if first {
				return "SELECT sub, rec FROM lossless_subagents ORDER BY sub LIMIT $1", nil
			}
			return "SELECT sub, rec FROM lossless_subagents WHERE sub > $2 ORDER BY sub LIMIT $1", []any{last}
		},
		func(row pgx.CollectableRow) (store.SubagentRecord, error) {
			var rec []byte
			var v store.SubagentRecord
			if err := row.Scan(&last, &rec); err != nil {
				return v, wrapErr("read subagent", err)
			}
			if len(last) != len(v.ID) {
				return v, corrupt("subagent id of %d bytes", len(last))
			}
			copy(v.ID[:], last)
			return v, decodeJSON(fmt.Sprintf("subagent %x", last), rec, &v.Subagent)
		})
}

// ForkItems implements store.Reader.
func (r *reader) ForkItems(s store.SubID) iter.Seq2[store.Item, error] {
	return u64Scan(r, "fork items", 0, math.MaxUint64,
		"SELECT "+itemColsSQL+" FROM lossless_fork_items WHERE sub = $1 AND pos BETWEEN $2 AND $3 ORDER BY pos LIMIT $4",
		"", maxPageRows, []any{s[:]}, scanItem)
}

// ForkSnapshots implements store.Reader: a skip scan of the fork items'
// index, one row per snapshot.
func (r *reader) ForkSnapshots() iter.Seq2[store.SubID, error] {
	var last []byte
	const skip = `WITH RECURSIVE s AS (
		(SELECT sub FROM lossless_fork_items WHERE sub > $2 ORDER BY sub LIMIT 1)
		UNION ALL
		SELECT (SELECT f.sub FROM lossless_fork_items f WHERE f.sub > s.sub ORDER BY f.sub LIMIT 1) FROM s WHERE s.sub IS NOT NULL)
	SELECT sub FROM s WHERE sub IS NOT NULL LIMIT $1`
	return keysetScan(r, "fork snapshots",
		func(first bool) (string, []any) {
			if first {
				return skip, []any{[]byte{}}
			}
			return skip, []any{last}
		},
		func(row pgx.CollectableRow) (store.SubID, error) {
			var s store.SubID
			if err := row.Scan(&last); err != nil {
				return s, wrapErr("read fork snapshot", err)
			}
			if len(last) != len(s) {
				return s, corrupt("fork snapshot id of %d bytes", len(last))
			}
			copy(s[:], last)
			return s, nil
		})
}

// SubagentLinks implements store.Reader.
func (r *reader) SubagentLinks(parent store.ConvID) iter.Seq2[store.SubagentLinkRecord, error] {
	var last []byte
	return keysetScan(r, "subagent links",
		func(first bool) (string, []any) {
			if first {
				return "SELECT sub, child_key FROM lossless_subagent_links WHERE parent = $2 ORDER BY sub LIMIT $1", []any{parent[:]}
			}
			return "SELECT sub, child_key FROM lossless_subagent_links WHERE parent = $2 AND sub > $3 ORDER BY sub LIMIT $1",
				[]any{parent[:], last}
		},
		func(row pgx.CollectableRow) (store.SubagentLinkRecord, error) {
			var v store.SubagentLinkRecord
			if err := row.Scan(&last, &v.ChildKey); err != nil {
				return v, wrapErr("read subagent link", err)
			}
			if len(last) != len(v.ID) {
				return v, corrupt("subagent link id of %d bytes", len(last))
			}
			copy(v.ID[:], last)
			return v, nil
		})
}

// Conversations implements store.Reader.
func (r *reader) Conversations() iter.Seq2[store.ConvRecord, error] {
	var last []byte
	return keysetScan(r, "conversations",
		func(first bool) (string, []any) {
			if first {
				return "SELECT conv, rec FROM lossless_conversations ORDER BY conv LIMIT $1", nil
			}
			return "SELECT conv, rec FROM lossless_conversations WHERE conv > $2 ORDER BY conv LIMIT $1", []any{last}
		},
		func(row pgx.CollectableRow) (store.ConvRecord, error) {
			var rec []byte
			var v store.ConvRecord
			if err := row.Scan(&last, &rec); err != nil {
				return v, wrapErr("read conversation", err)
			}
			if len(last) != len(v.ID) {
				return v, corrupt("conversation id of %d bytes", len(last))
			}
			copy(v.ID[:], last)
			return v, decodeJSON(fmt.Sprintf("conversation %x", last), rec, &v.Conversation)
		})
}

// Names implements store.Reader.
func (r *reader) Names() iter.Seq2[store.NameRecord, error] {
	var agent, value string
	var kind int16
	return keysetScan(r, "names",
		func(first bool) (string, []any) {
			if first {
				return "SELECT agent, kind, value, conv FROM lossless_names ORDER BY agent, kind, value LIMIT $1", nil
			}
			return "SELECT agent, kind, value, conv FROM lossless_names WHERE (agent, kind, value) > ($2, $3, $4) ORDER BY agent, kind, value LIMIT $1",
				[]any{agent, kind, value}
		},
		func(row pgx.CollectableRow) (store.NameRecord, error) {
			var conv []byte
			var v store.NameRecord
			if err := row.Scan(&agent, &kind, &value, &conv); err != nil {
				return v, wrapErr("read name", err)
			}
			v.Name = store.Name{Agent: agent, Kind: store.NameKind(kind), Value: value}
			if len(conv) != len(v.Conv) {
				return v, corrupt("name %+v: conversation id of %d bytes", v.Name, len(conv))
			}
			copy(v.Conv[:], conv)
			return v, nil
		})
}
