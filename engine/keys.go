package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
)

// Key prefixes; docs/format/keys.md describes each structure.
const (
	pfxDatabase     = 'B'
	pfxContainer    = 'C'
	pfxDoc          = 'D'
	pfxOrder        = 'O'
	pfxByTS         = 'T'
	pfxByExpiry     = 'X'
	pfxSeq          = 'S'
	pfxUnique       = 'U'
	pfxIndex        = 'I'
	pfxMeta         = 'M'
	pfxUsage        = 'K' // container usage tally
	pfxExpiryBucket = 'H' // expiry tallies by second
	pfxFeed         = 'F' // change feed, latest version: documents by the order key of their last write
	pfxFeedLog      = 'L' // change feed, all versions and deletes: the log of changes by order key
	pfxFeedFrom     = 'W' // change feed, all versions and deletes: the first second of the complete log
)

// Tuple type tags, ordered as Cosmos DB orders types.
const (
	tagUndefined = 0x01
	tagNull      = 0x02
	tagFalse     = 0x03
	tagTrue      = 0x04
	tagNumber    = 0x05
	tagString    = 0x06
	tagComposite = 0x07 // objects and arrays, by their JSON text (unique keys only)
	tagArrayElem = 0x08 // the "[]" segment of an index path
	tagContainer = 0x09 // index entry value: an object or array is at this path
)

var (
	keyClock    = []byte("Mclock")
	keyLSN      = []byte("Mlsn")  // a bound above every LSN given out (see persistLSN)
	keyFeedMark = []byte("Mfeed") // the last change feed order key given to a write
	keyDBSeq    = []byte("Mdbseq")
	keyCollSeq  = []byte("Mcollseq")
	collPrefixs = []byte{pfxDoc, pfxOrder, pfxByTS, pfxByExpiry, pfxSeq, pfxUnique, pfxIndex, pfxUsage, pfxExpiryBucket, pfxFeed, pfxFeedLog, pfxFeedFrom}
)

func databaseKey(name string) []byte { return append([]byte{pfxDatabase}, name...) }

func containerKey(dbRid [4]byte, name string) []byte {
	k := append([]byte{pfxContainer}, dbRid[:]...)
	return append(k, name...)
}

func containerPrefix(dbRid [4]byte) []byte { return append([]byte{pfxContainer}, dbRid[:]...) }

// collKey returns <pfx><collRid>.
func collKey(pfx byte, coll [8]byte) []byte {
	return appendCollKey(make([]byte, 0, 32), pfx, coll)
}

// appendCollKey appends <pfx><collRid>, the start of every key of one of a
// container's key spaces, to b.
func appendCollKey(b []byte, pfx byte, coll [8]byte) []byte {
	return append(append(b, pfx), coll[:]...)
}

// LookupCacheable reports whether a store's lookup cache should keep key:
// a document's primary key, one of a container's storage tallies, or the
// first second of its change feed's log. Documents are read by key (reads,
// query pages, replaces) far more often than they change. A tally (usage.go)
// is read and rewritten by every write of a document on an exclusive store:
// from the cache that read is a map access, where the store searches its
// memtable, which holds the tally's last version among a version for each
// write. The log's first second is read by every replace and delete of a
// document in a container that keeps the log (logBody), and written only
// when the log is trimmed. The engine's other keys are scanned, written and
// never read by key (index and feed entries), or read by key once for each
// version, which would take the cache's room from documents (a version's
// manifest and its log record, read when it is replaced or deleted: keeping
// them too cost a durable server's 8 MiB cache five times the misses under
// point reads).
func LookupCacheable(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	switch key[0] {
	case pfxDoc, pfxUsage, pfxExpiryBucket, pfxFeedFrom:
		return true
	}
	return false
}

// DocumentKeyPrefix returns the prefix of every document's primary key. A
// create looks its document's key up to check that the id is free, and
// nearly always finds nothing: a store may keep a filter of the keys under
// this prefix to answer that without a search (pebblekv.Options.FilterPrefix).
func DocumentKeyPrefix() []byte { return []byte{pfxDoc} }

// DocumentKeys passes the primary key of every document r holds to add,
// until add returns false, for a store's filter of document keys
// (pebblekv.Options.FilterKeys). It reads them from the insertion-order
// index, whose entries hold the documents' primary suffixes in a few dozen
// bytes, where a scan of the documents would read their bodies. Every
// document has exactly one order entry, written and removed in the same
// transaction as the document itself (Check verifies both ways). add must
// copy what it keeps: the key's buffer is reused.
func DocumentKeys(r kv.Reader, add func(key []byte) bool) error {
	start := []byte{pfxOrder}
	it := r.Scan(start, kv.PrefixEnd(start), false)
	defer it.Close()
	key := make([]byte, 0, 64)
	for it.Next() {
		k := it.Key()
		if len(k) != 1+8+8 {
			return fmt.Errorf("order entry %x: %w", k, errCorruptRecord)
		}
		suffix, _, _, err := decodeOrderValue(it.Value(), nil)
		if err != nil {
			return fmt.Errorf("order entry %x: %w", k, err)
		}
		key = append(append(append(key[:0], pfxDoc), k[1:9]...), suffix...)
		if !add(key) {
			return nil
		}
	}
	return it.Err()
}

// docKey returns the primary key of a document from its primary suffix.
func docKey(coll [8]byte, suffix []byte) []byte {
	return append(collKey(pfxDoc, coll), suffix...)
}

// primarySuffix encodes <pk tuple><id>.
func primarySuffix(pk lethe.PartitionKey, id string) []byte {
	b := appendTuple(nil, pk)
	return appendString(b, id)
}

func orderKey(coll [8]byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(collKey(pfxOrder, coll), seq)
}

func tsKey(pfx byte, coll [8]byte, at int64, seq uint64) []byte {
	k := appendInt64(collKey(pfx, coll), at)
	return binary.BigEndian.AppendUint64(k, seq)
}

// tsBound is the first key of index pfx at instant at: scanning [collKey, tsBound(cut+1))
// yields every entry with instant <= cut.
func tsBound(pfx byte, coll [8]byte, at int64) []byte {
	return appendInt64(collKey(pfx, coll), at)
}

func appendInt64(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v)^(1<<63))
}

func decodeInt64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func appendTuple(b []byte, pk lethe.PartitionKey) []byte {
	for _, c := range pk {
		b = appendComponent(b, c)
	}
	return b
}

// appendComponent appends one tuple component: undefined, null, a boolean, a
// number (float64) or a string; anything else appends nothing.
func appendComponent(b []byte, c any) []byte {
	switch v := c.(type) {
	case lethe.Undefined:
		b = append(b, tagUndefined)
	case nil:
		b = append(b, tagNull)
	case bool:
		if v {
			b = append(b, tagTrue)
		} else {
			b = append(b, tagFalse)
		}
	case float64:
		bits := math.Float64bits(v)
		if v == 0 {
			bits = 0 // -0 and 0 are one key
		}
		if bits&(1<<63) != 0 {
			bits = ^bits
		} else {
			bits |= 1 << 63
		}
		b = append(b, tagNumber)
		b = binary.BigEndian.AppendUint64(b, bits)
	case string:
		b = appendString(b, v)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = append(b, tagString)
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			b = append(b, 0, 0xff)
		} else {
			b = append(b, s[i])
		}
	}
	return append(b, 0, 1)
}

// decodePKTuple decodes the first n components of a tuple (the partition key
// at the start of a primary suffix) back into a partition key value.
func decodePKTuple(b []byte, n int) (lethe.PartitionKey, bool) {
	pk := make(lethe.PartitionKey, 0, n)
	for range n {
		c, rest, ok := decodeComponent(b)
		if !ok {
			return nil, false
		}
		pk, b = append(pk, c), rest
	}
	return pk, true
}

// decodeComponent decodes the tuple component at the start of b (see
// appendComponent): undefined, null, a boolean, a number as a float64 or a
// string; rest is what follows it. ok is false for anything else.
func decodeComponent(b []byte) (c any, rest []byte, ok bool) {
	if len(b) == 0 {
		return nil, nil, false
	}
	tag := b[0]
	b = b[1:]
	switch tag {
	case tagUndefined:
		return lethe.Undefined{}, b, true
	case tagNull:
		return nil, b, true
	case tagFalse:
		return false, b, true
	case tagTrue:
		return true, b, true
	case tagNumber:
		if len(b) < 8 {
			return nil, nil, false
		}
		bits := binary.BigEndian.Uint64(b)
		if bits&(1<<63) != 0 {
			bits &^= 1 << 63
		} else {
			bits = ^bits
		}
		return math.Float64frombits(bits), b[8:], true
	case tagString:
		var sb []byte
		for {
			i := bytes.IndexByte(b, 0)
			if i < 0 || i+1 >= len(b) {
				return nil, nil, false
			}
			if b[i+1] == 1 {
				if sb == nil { // no escaped zero byte: one copy
					return string(b[:i]), b[i+2:], true
				}
				return string(append(sb, b[:i]...)), b[i+2:], true
			}
			sb = append(append(sb, b[:i]...), 0) // 0x00 0xff is an escaped zero byte
			b = b[i+2:]
		}
	}
	return nil, nil, false
}
