package pgstore

import (
	"encoding/binary"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// decodeItem decodes a row of itemColsSQL from its wire values: an
// assemble scans hundreds of items, and pgx's Scan of their nine columns
// was most of its CPU. false when a value is not as expected (NULL, or
// an integer not in binary form): the caller then scans the row.
func decodeItem(row pgx.CollectableRow) (store.Item, bool) {
	var it store.Item
	fd, v := row.FieldDescriptions(), row.RawValues()
	if len(v) != 9 || len(fd) != 9 {
		return it, false
	}
	ok := true
	num := func(k int) int64 {
		b := v[k]
		if fd[k].Format != pgx.BinaryFormatCode {
			ok = false
			return 0
		}
		switch len(b) {
		case 8:
			return int64(binary.BigEndian.Uint64(b))
		case 4:
			return int64(int32(binary.BigEndian.Uint32(b)))
		case 2:
			return int64(int16(binary.BigEndian.Uint16(b)))
		}
		ok = false
		return 0
	}
	it.Pos = uint64(num(0))
	it.Ref.Kind = dag.RefKind(num(1))
	it.Ref.Seq = uint64(num(2))
	it.Tokens = int(num(4))
	it.Depth = int(num(5))
	it.Timestamp = num(6)
	it.Flags = byte(num(8))
	if !ok || v[3] == nil || v[7] == nil {
		return store.Item{}, false
	}
	if len(v[3]) > 0 {
		it.Ref.ID = string(v[3])
	}
	it.Role = store.Role(v[7])
	return it, true
}
