package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

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

// secondaryKeys returns every key besides the primary one that the document
// owns: its insertion-order entry and its expiry index entry. Every write and
// delete goes through here, so index entries never outlive their document.
func secondaryKeys(coll [8]byte, r *docRecord) [][]byte {
	keys := [][]byte{orderKey(coll, r.seq)}
	switch r.own.Kind {
	case ttl.OwnNone:
		keys = append(keys, tsKey(pfxByTS, coll, r.ts, r.seq))
	case ttl.OwnSeconds:
		keys = append(keys, tsKey(pfxByExpiry, coll, r.ts+r.own.Seconds, r.seq))
	}
	return keys
}
