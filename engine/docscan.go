package engine

import (
	"bytes"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
	"github.com/lethe-db/lethe/ru"
)

// keyOrderScan yields the live documents of a container, or of a partition,
// in the order of their keys (partition key, then id) rather than in
// insertion order: one sequential read of the documents, where reading them
// in insertion order looks each one up by its key, which costs about as much
// again as parsing it. Only a query whose result does not depend on the
// order its documents come in may read it: a group, an aggregate, DISTINCT,
// or an ORDER BY that no index serves (query.Hints.Streaming is false), each
// of which reads every document anyway.
type keyOrderScan struct {
	s      *scope
	r      kv.Reader
	kr     keyRange
	from   int // where a document key's primary suffix starts
	filter *docFilter
	paths  [][]string // when set, the only paths the executor reads (see parseStored)
	it     kv.Iterator
	raw    []byte // the stored JSON of the document yielded last
	// examined and loaded count the live documents yielded and their bytes.
	examined, loaded int
	err              error
}

// keyOrderSource returns the keyOrderScan of a query that reads every
// document it selects in any order, over the container or, when the query
// is scoped to one, over the partition whose key prefix filter holds; ok is
// false for a streaming query, whose rows come in insertion order.
func (s *scope) keyOrderSource(r kv.Reader, h query.Hints, filter *docFilter) (querySource, bool) {
	if h.Streaming {
		return nil, false
	}
	start := collKey(pfxDoc, s.rid)
	from := len(start)
	if filter != nil && filter.prefix != nil {
		start = append(start, filter.prefix...)
	}
	return &keyOrderScan{s: s, r: r, kr: keyRange{start, kv.PrefixEnd(start)}, from: from, filter: filter}, true
}

// Next implements query.Source.
func (x *keyOrderScan) Next() (*jsonv.Object, uint64, bool, error) {
	if x.err != nil {
		return nil, 0, false, x.err
	}
	if x.it == nil {
		x.it = x.r.Scan(x.kr.start, x.kr.end, false)
	}
	for x.it.Next() {
		k := x.it.Key()
		if !x.filter.match(k[x.from:]) {
			continue
		}
		rec, err := decodeDoc(x.it.Value())
		if err != nil {
			return x.fail(err)
		}
		if !x.s.live(&rec) {
			continue
		}
		o, err := parseStored(rec.json, x.paths)
		if err != nil {
			return x.fail(err)
		}
		x.examined++
		x.loaded += len(rec.json)
		x.raw = rec.json
		return o, rec.seq, true, nil
	}
	if err := x.it.Err(); err != nil {
		return x.fail(err)
	}
	return nil, 0, false, nil
}

// Raw returns the stored JSON of the document yielded last, copied: the
// iterator's buffer it lies in is reused once the scan moves on (see
// query.Source).
func (x *keyOrderScan) Raw() []byte { return bytes.Clone(x.raw) }

func (x *keyOrderScan) fail(err error) (*jsonv.Object, uint64, bool, error) {
	x.err = err
	return nil, 0, false, err
}

// seek implements querySource: the plans this source serves read every
// document on every page, and their cursors hold no seq.
func (x *keyOrderScan) seek(uint64) {}

func (x *keyOrderScan) close() {
	if x.it != nil {
		_ = x.it.Close() // read errors were returned by Next
		x.it = nil
	}
}

// work implements querySource.
func (x *keyOrderScan) work() (ru.Query, error) {
	return ru.Query{Documents: x.examined, BytesLoaded: x.loaded}, x.err
}
