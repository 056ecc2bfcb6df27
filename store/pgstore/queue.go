package pgstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// colType is how a column's values travel: bytea, bigint (every integer
// column), text or json (sent as text).
type colType uint8

const (
	cBytes colType = iota
	cInt
	cText
)

type column struct {
	name string
	typ  colType
	// sql is the column's type in the table (the cast from the array).
	sql string
}

// table is one record family's table: its key columns first.
type table struct {
	name string
	cols []column
	nkey int
	// upsert, insert and del take one array per column (per key column):
	// a whole queue's writes to the table in one statement each (insert
	// for the records written as fresh: their keys hold nothing).
	upsert, insert, del string
}

// Tables, indexes into tables.
const (
	tMeta = iota
	tConvs
	tNames
	tMessages
	tHashes
	tLarge
	tItems
	tSummaries
	tEntries
	tEntryIDs
	tReconcile
	tHostEntries
	tOrders
	tFileCPs
	tHostCPs
	tTurns
	tSubagents
	tChildren
	tForkItems
	tLinks
	numTables
)

func bcol(name string) column  { return column{name, cBytes, "bytea"} }
func i8col(name string) column { return column{name, cInt, "bigint"} }
func i4col(name string) column { return column{name, cInt, "integer"} }
func i2col(name string) column { return column{name, cInt, "smallint"} }
func tcol(name string) column  { return column{name, cText, "text"} }
func jcol(name string) column  { return column{name, cText, "json"} }

var itemCols = []column{i2col("ref_kind"), i8col("ref_seq"), tcol("ref_id"), i8col("tokens"), i4col("depth"), i8col("ts"), tcol("role"), i2col("flags")}

var tables = func() [numTables]*table {
	var ts [numTables]*table
	def := func(i int, name string, key []column, vals ...column) {
		ts[i] = &table{name: name, cols: append(append([]column(nil), key...), vals...), nkey: len(key)}
	}
	def(tMeta, "lossless_meta", []column{i2col("id")}, jcol("rec"))
	def(tConvs, "lossless_conversations", []column{bcol("conv")}, jcol("rec"))
	def(tNames, "lossless_names", []column{tcol("agent"), i2col("kind"), tcol("value")}, bcol("conv"))
	def(tMessages, "lossless_messages", []column{bcol("conv"), i8col("seq")},
		i2col("flags"), i8col("tokens"), i8col("ts"), tcol("role"), bcol("hash"), bcol("raw"))
	def(tHashes, "lossless_hashes", []column{bcol("conv"), bcol("hash")}, i8col("seq"))
	def(tLarge, "lossless_large", []column{bcol("conv"), i8col("seq")}, bcol("ref"))
	def(tItems, "lossless_items", []column{bcol("conv"), i8col("pos")}, itemCols...)
	def(tSummaries, "lossless_summaries", []column{bcol("conv"), tcol("id")}, jcol("rec"))
	def(tEntries, "lossless_entries", []column{bcol("conv"), bcol("tag"), i2col("map"), i8col("idx")}, i8col("seq"))
	def(tEntryIDs, "lossless_entry_ids", []column{bcol("conv"), bcol("tag"), tcol("entry_id")}, i8col("idx"))
	def(tReconcile, "lossless_reconcile", []column{bcol("conv"), bcol("tag")}, i8col("seq"))
	def(tHostEntries, "lossless_host_entries", []column{bcol("conv"), i8col("idx")}, i8col("seq"), bcol("key"), tcol("entry_id"))
	def(tOrders, "lossless_orders", []column{bcol("conv"), i8col("seq")}, i8col("pos"))
	def(tFileCPs, "lossless_file_checkpoints", []column{tcol("agent"), tcol("path")}, jcol("rec"))
	def(tHostCPs, "lossless_host_checkpoints", []column{tcol("agent"), bcol("conv")}, jcol("rec"))
	def(tTurns, "lossless_turns", []column{bcol("conv"), tcol("key")}, jcol("rec"))
	def(tSubagents, "lossless_subagents", []column{bcol("sub")}, jcol("rec"))
	def(tChildren, "lossless_subagent_children", []column{tcol("agent"), tcol("session_id")}, bcol("sub"))
	def(tForkItems, "lossless_fork_items", []column{bcol("sub"), i8col("pos")}, itemCols...)
	def(tLinks, "lossless_subagent_links", []column{bcol("parent"), bcol("sub")}, tcol("child_key"))
	for _, t := range ts {
		t.upsert, t.del = upsertSQL(t), deleteSQL(t)
		t.insert, _, _ = strings.Cut(t.upsert, " ON CONFLICT ")
	}
	return ts
}()

func arrayType(c column) string {
	switch c.typ {
	case cBytes:
		return "bytea[]"
	case cInt:
		return "bigint[]"
	}
	return "text[]"
}

// upsertSQL: INSERT ... SELECT FROM unnest(arrays) ON CONFLICT (key) DO
// UPDATE SET the values.
func upsertSQL(t *table) string {
	var names, casts, params, sets, keys []string
	for i, c := range t.cols {
		names = append(names, c.name)
		casts = append(casts, fmt.Sprintf("u.%s::%s", c.name, c.sql))
		params = append(params, fmt.Sprintf("$%d::%s", i+1, arrayType(c)))
		if i < t.nkey {
			keys = append(keys, c.name)
		} else {
			sets = append(sets, fmt.Sprintf("%s = excluded.%s", c.name, c.name))
		}
	}
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM unnest(%s) AS u(%s) ON CONFLICT (%s) DO UPDATE SET %s",
		t.name, strings.Join(names, ", "), strings.Join(casts, ", "), strings.Join(params, ", "), strings.Join(names, ", "),
		strings.Join(keys, ", "), strings.Join(sets, ", "))
}

// deleteSQL: DELETE ... USING unnest(key arrays).
func deleteSQL(t *table) string {
	var names, params, conds []string
	for i, c := range t.cols[:t.nkey] {
		names = append(names, c.name)
		params = append(params, fmt.Sprintf("$%d::%s", i+1, arrayType(c)))
		conds = append(conds, fmt.Sprintf("t.%s = u.%s::%s", c.name, c.name, c.sql))
	}
	return fmt.Sprintf("DELETE FROM %s AS t USING unnest(%s) AS u(%s) WHERE %s",
		t.name, strings.Join(params, ", "), strings.Join(names, ", "), strings.Join(conds, " AND "))
}

// op is one queued write of one key: vals holds every column's value for
// a put (int64, []byte or string, in column order), the key columns' for
// a delete.
type op struct {
	kind opKind
	vals []any
}

// opKind is what an op does.
type opKind uint8

const (
	opPut    opKind = iota // upsert
	opInsert               // insert (a fresh record: its key holds nothing)
	opDel                  // delete
)

// tableOps are a segment's writes to one table: the last write of each
// key (a later write of a key replaces an earlier one: within a segment
// writes to different keys commute).
type tableOps struct {
	index map[string]int
	ops   []op
}

// stmt is a statement queued as it is (a deletion by prefix).
type stmt struct {
	sql  string
	args []any
}

// segment is the writes between two deletions by prefix, then those
// deletions (after).
type segment struct {
	tabs  [numTables]*tableOps
	after []stmt
}

// queue holds the writes of a transaction or a batch until they are sent:
// as few statements as there are tables written, each carrying arrays,
// pipelined in one round trip.
type queue struct {
	segs []*segment
	// bytes is what the queue holds; total what it was ever given (the
	// transaction's size, for ErrTooBig).
	bytes, total int64
	// largest is the largest record's size.
	largest int64
	keyBuf  []byte
}

func (q *queue) empty() bool { return len(q.segs) == 0 }

func (q *queue) reset() {
	q.segs = q.segs[:0]
	q.bytes = 0
}

func (q *queue) last() *segment {
	if len(q.segs) == 0 || len(q.segs[len(q.segs)-1].after) > 0 {
		q.segs = append(q.segs, &segment{})
	}
	return q.segs[len(q.segs)-1]
}

// add queues a put or an insert (vals are every column) or a delete
// (opDel: vals are the key columns).
func (q *queue) add(ti int, kind opKind, vals ...any) {
	t := tables[ti]
	seg := q.last()
	ops := seg.tabs[ti]
	if ops == nil {
		ops = &tableOps{index: map[string]int{}}
		seg.tabs[ti] = ops
	}
	k := q.keyBuf[:0]
	var size int64
	for i, v := range vals {
		switch v := v.(type) {
		case int64:
			if i < t.nkey {
				k = binary.BigEndian.AppendUint64(k, uint64(v))
			}
			size += 8
		case []byte:
			if i < t.nkey {
				k = binary.AppendUvarint(k, uint64(len(v)))
				k = append(k, v...)
			}
			size += int64(len(v))
		case string:
			if i < t.nkey {
				k = binary.AppendUvarint(k, uint64(len(v)))
				k = append(k, v...)
			}
			size += int64(len(v))
		default:
			panic(fmt.Sprintf("pgstore: queue: value of type %T", v))
		}
	}
	q.keyBuf = k
	size += 16 // per record, about what a key and its row header cost
	q.bytes += size
	q.total += size
	q.largest = max(q.largest, size)
	if i, ok := ops.index[string(k)]; ok {
		ops.ops[i] = op{kind: kind, vals: vals}
		return
	}
	ops.index[string(k)] = len(ops.ops)
	ops.ops = append(ops.ops, op{kind: kind, vals: vals})
}

// addStmt queues a deletion by prefix: after every write queued so far,
// before any queued after it.
func (q *queue) addStmt(sql string, args ...any) {
	seg := q.last()
	seg.after = append(seg.after, stmt{sql, args})
	q.bytes += 64
	q.total += 64
}

// appendTo queues the queue's writes in b (and empties the queue); it
// returns how many statements it queued.
func (q *queue) appendTo(b *pgx.Batch) int {
	n := b.Len()
	for _, seg := range q.segs {
		for ti, ops := range seg.tabs {
			if ops == nil {
				continue
			}
			t := tables[ti]
			var byKind [3][]op
			for _, o := range ops.ops {
				byKind[o.kind] = append(byKind[o.kind], o)
			}
			if dels := byKind[opDel]; len(dels) > 0 {
				b.Queue(t.del, columns(t.cols[:t.nkey], dels)...)
			}
			if puts := byKind[opPut]; len(puts) > 0 {
				b.Queue(t.upsert, columns(t.cols, puts)...)
			}
			if ins := byKind[opInsert]; len(ins) > 0 {
				b.Queue(t.insert, columns(t.cols, ins)...)
			}
		}
		for _, s := range seg.after {
			b.Queue(s.sql, s.args...)
		}
	}
	q.reset()
	return b.Len() - n
}

// columns turns rows into one array per column.
func columns(cols []column, ops []op) []any {
	args := make([]any, len(cols))
	for i, c := range cols {
		switch c.typ {
		case cBytes:
			a := make([][]byte, len(ops))
			for j, o := range ops {
				a[j] = o.vals[i].([]byte)
			}
			args[i] = a
		case cInt:
			a := make([]int64, len(ops))
			for j, o := range ops {
				a[j] = o.vals[i].(int64)
			}
			args[i] = a
		default:
			a := make([]string, len(ops))
			for j, o := range ops {
				a[j] = o.vals[i].(string)
			}
			args[i] = a
		}
	}
	return args
}

// commit runs, in one round trip, begin (unless ""), the queue's writes
// and end (COMMIT; unless "").
func (q *queue) commit(ctx context.Context, conn *pgx.Conn, begin, end string) error {
	var b pgx.Batch
	if begin != "" {
		b.Queue(begin)
	}
	q.appendTo(&b)
	if end != "" {
		b.Queue(end)
	}
	if b.Len() == 0 {
		return nil
	}
	br := conn.SendBatch(ctx, &b)
	defer br.Close()
	for i := range b.Len() {
		tag, err := br.Exec()
		if err != nil {
			return wrapErr("write", err)
		}
		if end != "" && i == b.Len()-1 && tag.String() != end {
			// COMMIT of a transaction a failed statement aborted.
			return wrapErr("commit", fmt.Errorf("the transaction was rolled back (%s)", tag))
		}
	}
	if err := br.Close(); err != nil {
		return wrapErr("write", err)
	}
	return nil
}
