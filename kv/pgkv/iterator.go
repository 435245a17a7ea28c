package pgkv

import (
	"bytes"

	"github.com/jackc/pgx/v5"

	"github.com/lethe-db/lethe/kv"
)

// Scan pages. The first page is small, so that a short scan (a point query by
// prefix, a page of results) costs one round trip and reads few rows it does
// not need; each later page is pageGrowth times larger, up to maxPageRows rows
// and about maxPageBytes of keys and values, so that a long scan costs few
// round trips and never holds more than a page in memory.
const (
	firstPageRows = 128
	pageGrowth    = 4
	maxPageRows   = 4096
	maxPageBytes  = 1 << 20
)

// iterator is a kv.Iterator over a key range, fetched in pages by keyset
// pagination: each page starts after the last key of the one before.
type iterator struct {
	t       *txn
	start   []byte // inclusive lower bound, never nil
	end     []byte // exclusive upper bound; nil means none
	reverse bool

	fetched bool   // a page has been fetched
	more    bool   // the range may hold keys after the current page
	bound   []byte // the last key of the current page: the next page starts past it
	limit   int    // rows to ask for in the next page

	arena      []byte   // the current page's keys and values
	keys, vals [][]byte // slices of arena
	pos        int      // index of the current entry in keys

	err    error
	closed bool
}

// Scan implements kv.Reader. The iterator fetches its first page on the
// first call to Next.
func (t *txn) Scan(start, end []byte, reverse bool) kv.Iterator {
	it := &iterator{
		t:       t,
		start:   append([]byte{}, start...),
		reverse: reverse,
		more:    true,
		limit:   t.s.firstPage,
		pos:     -1,
	}
	if end != nil {
		it.end = append([]byte{}, end...)
		it.more = bytes.Compare(it.start, it.end) < 0
	}
	return it
}

// Next implements kv.Iterator.
func (it *iterator) Next() bool {
	if it.closed || it.err != nil {
		return false
	}
	if it.pos+1 < len(it.keys) {
		it.pos++
		return true
	}
	it.pos = len(it.keys)
	if !it.more {
		return false
	}
	if err := it.fetch(); err != nil {
		it.err = err
		return false
	}
	if len(it.keys) == 0 {
		return false
	}
	it.pos = 0
	return true
}

// query returns the statement and arguments that fetch the next page.
func (it *iterator) query() (string, []any) {
	sql := it.t.sql
	switch {
	case !it.reverse && !it.fetched && it.end == nil:
		return sql.scanFrom, []any{it.start, it.limit}
	case !it.reverse && !it.fetched:
		return sql.scanRange, []any{it.start, it.end, it.limit}
	case !it.reverse && it.end == nil:
		return sql.scanAfter, []any{it.bound, it.limit}
	case !it.reverse:
		return sql.scanBelow, []any{it.bound, it.end, it.limit}
	case !it.fetched && it.end == nil:
		return sql.revFrom, []any{it.start, it.limit}
	case !it.fetched:
		return sql.revRange, []any{it.start, it.end, it.limit}
	default:
		return sql.revRange, []any{it.start, it.bound, it.limit}
	}
}

// fetch replaces the current page with the next one.
func (it *iterator) fetch() error {
	q, args := it.query()
	limit := it.limit
	it.arena, it.keys, it.vals = it.arena[:0], it.keys[:0], it.vals[:0]
	var offsets []int // of each key's and value's end in arena
	t := it.t
	t.mu.Lock()
	err := t.roundTrip("scan", q, args, func(rows pgx.Rows) error {
		var cols [2][]byte
		for rows.Next() {
			if err := columns(rows, cols[:]); err != nil {
				return err
			}
			it.arena = append(it.arena, cols[0]...)
			offsets = append(offsets, len(it.arena))
			it.arena = append(it.arena, cols[1]...)
			offsets = append(offsets, len(it.arena))
		}
		return nil
	})
	t.mu.Unlock()
	if err != nil {
		return err
	}
	// The arena has stopped growing: slice it.
	prev := 0
	for i := 0; i < len(offsets); i += 2 {
		k, v := offsets[i], offsets[i+1]
		it.keys = append(it.keys, it.arena[prev:k:k])
		it.vals = append(it.vals, it.arena[k:v:v])
		prev = v
	}
	n := len(it.keys)
	it.fetched = true
	it.more = n == limit
	if n > 0 {
		it.bound = append(it.bound[:0], it.keys[n-1]...)
	}
	if it.more {
		next := min(limit*pageGrowth, maxPageRows)
		if len(it.arena) > 0 {
			// Rows of the size just seen that fill maxPageBytes.
			next = max(1, min(next, maxPageBytes*n/len(it.arena)))
		}
		it.limit = next
	}
	return nil
}

// Key implements kv.Iterator: valid until the next call to Next.
func (it *iterator) Key() []byte {
	if it.pos < 0 || it.pos >= len(it.keys) {
		return nil
	}
	return it.keys[it.pos]
}

// Value implements kv.Iterator: valid until the next call to Next.
func (it *iterator) Value() []byte {
	if it.pos < 0 || it.pos >= len(it.vals) {
		return nil
	}
	return it.vals[it.pos]
}

// Err implements kv.Iterator.
func (it *iterator) Err() error { return it.err }

// Close implements kv.Iterator. The iterator holds no server resources, only
// its page, which Close drops.
func (it *iterator) Close() error {
	it.closed = true
	it.arena, it.keys, it.vals = nil, nil, nil
	return it.err
}
