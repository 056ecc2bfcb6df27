package pgstore

import (
	"math"

	"github.com/jackc/pgx/v5"
)

// Scans read in pages (keyset pagination: each page a query from the last
// key read), so that a scan of a large conversation holds one page in
// memory, and a Tx may read and write between two pages on its one
// connection. Pages grow from firstPage rows to their maximum: a scan
// broken off early reads little.
const (
	firstPage   = 64
	maxPageRows = 1024
	// maxPageRaw bounds a page of messages with their raw bytes.
	maxPageRaw = 256
)

func nextPage(n, max int) int { return min(n*4, max) }

// i64Range is a range of stored bigints, lo <= hi.
type i64Range struct{ lo, hi int64 }

// u64Ranges returns the ranges of stored bigints holding the uint64 values
// from..to, in unsigned order: a uint64 is stored with the same bits, so
// the values from 2^63 up are the negative bigints, read after the others.
func u64Ranges(from, to uint64) []i64Range {
	const top = 1 << 63
	switch {
	case from > to:
		return nil
	case to < top || from >= top:
		return []i64Range{{int64(from), int64(to)}}
	}
	return []i64Range{{int64(from), math.MaxInt64}, {math.MinInt64, int64(to)}}
}

// u64Scan scans the rows keyed by a uint64 from..to: asc (or desc, when
// set: the scan is then in reverse) is the query, with fixed[0] as $1, the
// range's bounds as $2 and $3, the page size as $4 and fixed[1:] as $5 on.
// decode returns a row's value and key.
func u64Scan[T any](r *reader, what string, from, to uint64, asc, desc string, maxPage int, fixed []any,
	decode func(pgx.CollectableRow) (T, uint64, error)) func(yield func(T, error) bool) {
	return func(yield func(T, error) bool) {
		var zero T
		ranges := u64Ranges(from, to)
		sql := asc
		if desc != "" {
			sql = desc
			for i, j := 0, len(ranges)-1; i < j; i, j = i+1, j-1 {
				ranges[i], ranges[j] = ranges[j], ranges[i]
			}
		}
		args := make([]any, 4, 4+len(fixed))
		args[0] = fixed[0]
		args = append(args, fixed[1:]...)
		var buf []T
		var keys []uint64
		page := firstPage
		for _, rg := range ranges {
			lo, hi := rg.lo, rg.hi
			for {
				args[1], args[2], args[3] = lo, hi, page
				keys = keys[:0]
				var err error
				buf, err = readPage(r, what, sql, args, buf, func(row pgx.CollectableRow) (T, error) {
					v, k, err := decode(row)
					keys = append(keys, k)
					return v, err
				})
				if err != nil {
					yield(zero, err)
					return
				}
				if !yieldAll(buf, yield) {
					return
				}
				if len(buf) < page {
					break
				}
				last := int64(keys[len(keys)-1])
				if desc != "" {
					if last == lo {
						break
					}
					hi = last - 1
				} else {
					if last == hi {
						break
					}
					lo = last + 1
				}
				page = nextPage(page, maxPage)
			}
		}
	}
}

// keysetScan scans pages: query(first) returns a page's query, with the
// page size as $1 and its arguments as $2 on, from the state decode leaves
// after the last row of the previous page.
func keysetScan[T any](r *reader, what string, query func(first bool) (string, []any),
	decode func(pgx.CollectableRow) (T, error)) func(yield func(T, error) bool) {
	return func(yield func(T, error) bool) {
		var zero T
		var buf []T
		page := firstPage
		for first := true; ; first = false {
			sql, args := query(first)
			var err error
			if buf, err = readPage(r, what, sql, append([]any{page}, args...), buf, decode); err != nil {
				yield(zero, err)
				return
			}
			if !yieldAll(buf, yield) || len(buf) < page {
				return
			}
			page = nextPage(page, maxPageRows)
		}
	}
}

// readPage reads one page of a scan into buf (emptied first).
func readPage[T any](r *reader, what, sql string, args []any, buf []T, decode func(pgx.CollectableRow) (T, error)) ([]T, error) {
	rows, err := r.query(sql, args...)
	if err != nil {
		return buf[:0], err
	}
	defer rows.Close()
	buf = buf[:0]
	for rows.Next() {
		v, err := decode(rows)
		if err != nil {
			return buf, err
		}
		buf = append(buf, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return buf, wrapErr("read "+what, err)
	}
	return buf, nil
}

// yieldAll yields vs; false when the loop broke off.
func yieldAll[T any](vs []T, yield func(T, error) bool) bool {
	for _, v := range vs {
		if !yield(v, nil) {
			return false
		}
	}
	return true
}
