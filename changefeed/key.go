// Package changefeed holds the change feed's own parts: the order key that
// places every change (writes by commit, TTL expiries by their instant), the
// continuation tokens built from it, the all-versions log record with its
// storage and wire forms, and the merge by which the all-versions reader
// pages through its streams (the log, and the expiries the engine
// synthesises from its expiry indexes). docs/changefeed.md is the design.
// The package does no I/O.
package changefeed

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Key is a change's place in the feed. Keys sort by Second, then Writer,
// then Seq (or, for expiries, Doc). Writer 0 is reserved for TTL expiries,
// which thus sort first within their second: a document that expires at T
// is expired for every write of second T.
type Key struct {
	// Second is the server time, in Unix seconds, at which the change took
	// effect: a write's commit, an expiry's instant.
	Second int64
	// Writer names the process that committed the change (EmbeddedWriter for
	// the embedded store); 0 for an expiry.
	Writer uint32
	// Seq is the writer's sequence number, growing with its commits.
	Seq uint64
	// Doc is an expiry's document: its sequence number in its container, 8
	// bytes big-endian (see ExpiryOf), which makes the key unique. Nil for
	// writes.
	Doc []byte
}

// ExpiryWriter is the Writer of TTL expiry keys; EmbeddedWriter that of the
// embedded store's writes.
const (
	ExpiryWriter   uint32 = 0
	EmbeddedWriter uint32 = 1
)

// keyFixed is the length of a write's key: second, writer, seq.
const keyFixed = 8 + 4 + 8

// Expiry returns the key of a document's expiry at instant second.
func Expiry(second int64, doc []byte) Key { return Key{Second: second, Writer: ExpiryWriter, Doc: doc} }

// ExpiryOf returns the key of the expiry at instant second of the document
// version with sequence number seq in its container. A version expires at
// most once (a write after its expiry creates a new version with a new
// number), so the key is unique; and the container's expiry indexes are
// ordered by instant then sequence number, as these keys are, so that a
// reader synthesising expiries from them reads them in key order.
func ExpiryOf(second int64, seq uint64) Key {
	return Expiry(second, binary.BigEndian.AppendUint64(nil, seq))
}

// IsExpiry reports whether k places a TTL expiry.
func (k Key) IsExpiry() bool { return k.Writer == ExpiryWriter }

// Append appends k's encoding to b: fixed-width big-endian fields, the
// second with its sign bit flipped, so that encodings sort as keys do.
func (k Key) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(k.Second)^(1<<63))
	b = binary.BigEndian.AppendUint32(b, k.Writer)
	if k.IsExpiry() {
		return append(b, k.Doc...)
	}
	return binary.BigEndian.AppendUint64(b, k.Seq)
}

// errBadKey is the decoding error of a malformed key.
var errBadKey = errors.New("changefeed: malformed order key")

// DecodeKey decodes an encoded key. An expiry's Doc aliases b.
func DecodeKey(b []byte) (Key, error) {
	if len(b) < 12 {
		return Key{}, errBadKey
	}
	k := Key{Second: int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), Writer: binary.BigEndian.Uint32(b[8:])}
	if k.IsExpiry() {
		if len(b) > 12 {
			k.Doc = b[12:]
		}
		return k, nil // without Doc: SecondStart, a position
	}
	if len(b) != keyFixed {
		return Key{}, errBadKey
	}
	k.Seq = binary.BigEndian.Uint64(b[12:])
	return k, nil
}

// Compare orders keys as their encodings sort: -1, 0 or 1.
func (k Key) Compare(o Key) int {
	return bytes.Compare(k.Append(nil), o.Append(nil))
}

// SecondStart is the smallest key of second s: a position there has seen
// nothing of s yet.
func SecondStart(s int64) Key { return Key{Second: s, Writer: ExpiryWriter} }

// Token renders k as a continuation: the etag of a feed response, quoted
// like Cosmos DB's etags. Both SDKs keep it opaque.
func (k Key) Token() string { return `"` + hex.EncodeToString(k.Append(nil)) + `"` }

// ParseToken decodes a continuation produced by Token, with or without its
// quotes (SDKs send If-None-Match either way).
func ParseToken(s string) (Key, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimSuffix(s, `"`), `"`)
	b, err := hex.DecodeString(s)
	if err != nil {
		return Key{}, fmt.Errorf("changefeed: continuation %q is not one this server issued", s)
	}
	k, err := DecodeKey(b)
	if err != nil {
		return Key{}, fmt.Errorf("changefeed: continuation %q is not one this server issued", s)
	}
	return k, nil
}
