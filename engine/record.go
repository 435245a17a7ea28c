package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/ttl"
)

// docRecord is a stored document: a fixed header (docs/format/keys.md) that lets
// reads decide liveness and preconditions without parsing JSON, then the JSON.
type docRecord struct {
	ts   int64   // _ts, Unix seconds of the last write
	seq  uint64  // position in insertion order
	own  ttl.Own // the document's own ttl, as interpreted
	lsn  uint64  // log sequence number of the last write
	json []byte  // the document as served
}

const docHeaderLen = 34

var errCorruptRecord = errors.New("engine: corrupt document record")

func (r *docRecord) encode() []byte {
	b := make([]byte, 0, docHeaderLen+len(r.json))
	b = append(b, 1)
	b = binary.BigEndian.AppendUint64(b, uint64(r.ts))
	b = binary.BigEndian.AppendUint64(b, r.seq)
	b = append(b, byte(r.own.Kind))
	b = binary.BigEndian.AppendUint64(b, uint64(r.own.Seconds))
	b = binary.BigEndian.AppendUint64(b, r.lsn)
	return append(b, r.json...)
}

// decodeDoc decodes a record; json aliases v.
func decodeDoc(v []byte) (docRecord, error) {
	if len(v) < docHeaderLen || v[0] != 1 {
		return docRecord{}, fmt.Errorf("%w (%d bytes)", errCorruptRecord, len(v))
	}
	return docRecord{
		ts:   int64(binary.BigEndian.Uint64(v[1:])),
		seq:  binary.BigEndian.Uint64(v[9:]),
		own:  ttl.Own{Kind: ttl.OwnKind(v[17]), Seconds: int64(binary.BigEndian.Uint64(v[18:]))},
		lsn:  binary.BigEndian.Uint64(v[26:]),
		json: v[docHeaderLen:],
	}, nil
}

func (r *docRecord) etag() string { return etagFor(r.lsn) }

// layout is what a container's key structure depends on: its RID, its
// partition key paths, and the paths of each of its unique keys.
type layout struct {
	rid     [8]byte
	pkPaths []string
	unique  [][][]string // unique key -> its paths -> path segments
}

func (c *collRecord) layout() *layout {
	l := &layout{rid: c.rid(), pkPaths: c.PKPaths}
	for _, uk := range c.UniqueKeys {
		var paths [][]string
		for _, p := range uk {
			segs, _ := splitPath(p) // validated when the container was created
			paths = append(paths, segs)
		}
		l.unique = append(l.unique, paths)
	}
	return l
}

// secondaryKeys returns every key besides the primary one that the document
// owns: its insertion-order entry, its expiry index entry and its unique key
// entries. Every write and delete goes through here, so index entries never
// outlive their document.
func secondaryKeys(l *layout, r *docRecord) ([][]byte, error) {
	keys := [][]byte{orderKey(l.rid, r.seq)}
	switch r.own.Kind {
	case ttl.OwnNone:
		keys = append(keys, tsKey(pfxByTS, l.rid, r.ts, r.seq))
	case ttl.OwnSeconds:
		keys = append(keys, tsKey(pfxByExpiry, l.rid, r.ts+r.own.Seconds, r.seq))
	}
	uks, err := uniqueKeys(l, r.json)
	if err != nil {
		return nil, err
	}
	return append(keys, uks...), nil
}

// uniqueKeys returns the document's unique key entries:
// U <collRid> <pk tuple> <key ordinal> <value tuple>. A missing value counts as
// null, as in Cosmos DB (sparse unique keys are not supported).
func uniqueKeys(l *layout, doc []byte) ([][]byte, error) {
	if len(l.unique) == 0 {
		return nil, nil
	}
	o, err := jsonv.ParseObject(doc)
	if err != nil {
		return nil, fmt.Errorf("parse stored document: %w", err)
	}
	pk, err := extractPK(o, l.pkPaths)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for i, paths := range l.unique {
		k := appendTuple(collKey(pfxUnique, l.rid), pk)
		k = append(k, byte(i))
		for _, segs := range paths {
			k = appendValue(k, valueAt(o, segs))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// valueAt returns the value at a path, or nil (null) when it is missing.
func valueAt(o *jsonv.Object, segs []string) jsonv.Value {
	var cur jsonv.Value = o
	for _, s := range segs {
		obj, ok := cur.(*jsonv.Object)
		if !ok {
			return nil
		}
		if cur, ok = obj.Get(s); !ok {
			return nil
		}
	}
	return cur
}

// appendValue encodes any JSON value as one tuple component; objects and
// arrays are encoded by their compact JSON text.
func appendValue(b []byte, v jsonv.Value) []byte {
	switch t := v.(type) {
	case jsonv.Number:
		return appendTuple(b, lethe.PartitionKey{t.Float64()})
	case nil, bool, string:
		return appendTuple(b, lethe.PartitionKey{t})
	}
	return appendString(append(b, tagComposite), string(jsonv.Marshal(v)))
}
