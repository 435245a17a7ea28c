package query

import (
	"encoding/binary"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lethe-db/lethe/jsonv"
)

// Cursor encoding.
//
// A Cursor is one kind byte followed by the row's position in the query's
// total order. Positions are built from order-preserving, self-delimiting
// encodings, so two cursors of one query compare bytewise exactly as their
// rows are ordered, and a tuple of encodings compares lexicographically:
//
//	kind 0x01  streaming         seq(8) ordinal(8)
//	kind 0x02  ORDER BY          key_1 ... key_n seq(8) ordinal(8)
//	kind 0x03  DISTINCT          value
//	kind 0x04  GROUP BY          key_1 ... key_n
//	kind 0x05  aggregate         (nothing: the only row)
//	kind 0x06  DISTINCT ORDER BY key_1 ... key_n seq(8) ordinal(8)
//
// seq and ordinal are big-endian uint64: the document's sequence number and
// the row's number within the document (JOIN and IN expand a document into
// several rows, numbered in nested-loop order). A DESC key is its ascending
// encoding with every bit inverted: since no encoding is a prefix of
// another, inversion reverses the order of the key and leaves the following
// ones alone. DISTINCT over a grouped query orders by the value (kind 0x03).
//
// A value encodes as a tag byte, which orders the types
//
//	undefined 0x02 < null 0x03 < false 0x04 < true 0x05 < number 0x06
//	< string 0x07 < array 0x08 < object 0x09
//
// followed by
//
//	number  8 bytes: the float64 with the sign bit flipped if positive,
//	        every bit flipped if negative (-0 is 0), so 1 and 1.0 are equal
//	string  its UTF-8 bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x01;
//	        UTF-8 byte order is code point order
//	array   each element, then 0x00 (below every tag: shorter sorts first)
//	object  for each member in key order: 0x01, the key as a string, the
//	        value; then 0x00. Objects that differ only in member order are
//	        equal, as for jsonv.Equal and DISTINCT
//
// Cosmos DB orders arrays and objects by hash; Lethe orders them
// lexicographically, which is deterministic and needs no hash.

const (
	cursorStream        byte = 0x01
	cursorOrder         byte = 0x02
	cursorDistinct      byte = 0x03
	cursorGroup         byte = 0x04
	cursorAggregate     byte = 0x05
	cursorOrderDistinct byte = 0x06
)

const (
	tagEnd       byte = 0x00
	tagMember    byte = 0x01
	tagUndefined byte = 0x02
	tagNull      byte = 0x03
	tagFalse     byte = 0x04
	tagTrue      byte = 0x05
	tagNumber    byte = 0x06
	tagString    byte = 0x07
	tagArray     byte = 0x08
	tagObject    byte = 0x09
)

// appendKey appends the encoding of v, undefined included; desc inverts it.
func appendKey(dst []byte, v jsonv.Value, desc bool) []byte {
	start := len(dst)
	dst = appendValue(dst, v)
	if desc {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst
}

func appendValue(dst []byte, v jsonv.Value) []byte {
	switch t := v.(type) {
	case nil:
		return append(dst, tagNull)
	case bool:
		if t {
			return append(dst, tagTrue)
		}
		return append(dst, tagFalse)
	case jsonv.Number:
		return appendNumber(append(dst, tagNumber), t.Float64())
	case string:
		return appendString(append(dst, tagString), t)
	case []jsonv.Value:
		dst = append(dst, tagArray)
		for _, el := range t {
			dst = appendValue(dst, el)
		}
		return append(dst, tagEnd)
	case *jsonv.Object:
		dst = append(dst, tagObject)
		for _, i := range sortedMembers(t) {
			dst = append(dst, tagMember)
			dst = appendString(dst, t.Key(i))
			dst = appendValue(dst, t.Val(i))
		}
		return append(dst, tagEnd)
	}
	return append(dst, tagUndefined)
}

func appendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		f = 0 // -0
	}
	b := math.Float64bits(f)
	if b>>63 == 0 {
		b |= 1 << 63
	} else {
		b = ^b
	}
	return binary.BigEndian.AppendUint64(dst, b)
}

func appendString(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			break
		}
		dst = append(append(dst, s[:i]...), 0x00, 0xFF)
		s = s[i+1:]
	}
	return append(append(dst, s...), 0x00, 0x01)
}

// sortedMembers returns the member indexes of o in key order.
func sortedMembers(o *jsonv.Object) []int {
	idx := make([]int, o.Len())
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return o.Key(idx[a]) < o.Key(idx[b]) })
	return idx
}

// decodeScalarKey decodes the scalar key (undefined, null, a boolean, a
// number or a string) at the start of b, as appendKey encoded it with desc.
// ok is false for other encodings and for bytes appendKey cannot produce.
func decodeScalarKey(b []byte, desc bool) (v jsonv.Value, undefined, ok bool) {
	at := func(i int) byte {
		if desc {
			return ^b[i]
		}
		return b[i]
	}
	if len(b) == 0 {
		return nil, false, false
	}
	switch at(0) {
	case tagUndefined:
		return nil, true, true
	case tagNull:
		return nil, false, true
	case tagFalse:
		return false, false, true
	case tagTrue:
		return true, false, true
	case tagNumber:
		if len(b) < 9 {
			return nil, false, false
		}
		var u uint64
		for i := 1; i <= 8; i++ {
			u = u<<8 | uint64(at(i))
		}
		if u>>63 == 1 {
			u &^= 1 << 63
		} else {
			u = ^u
		}
		f := math.Float64frombits(u)
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 && math.Signbit(f) { // never encoded
			return nil, false, false
		}
		return jsonv.NumberFromFloat(f), false, true
	case tagString:
		var s []byte
		for i := 1; i+1 < len(b); i++ {
			c := at(i)
			if c != 0 {
				s = append(s, c)
				continue
			}
			switch at(i + 1) {
			case 0xFF:
				s = append(s, 0)
				i++
			case 0x01:
				if !utf8.Valid(s) {
					return nil, false, false
				}
				return string(s), false, true
			default:
				return nil, false, false
			}
		}
	}
	return nil, false, false
}

// scalarKeyLen returns the length of the scalar key that b starts with, as
// decodeScalarKey reads it; len(b) when it runs to the end.
func scalarKeyLen(b []byte, desc bool) int {
	flip := byte(0)
	if desc {
		flip = 0xFF
	}
	if len(b) == 0 {
		return 0
	}
	switch b[0] ^ flip {
	case tagNumber:
		return min(9, len(b))
	case tagString:
		for i := 1; i+1 < len(b); i++ {
			if b[i]^flip != 0 {
				continue
			}
			if b[i+1]^flip == 0x01 {
				return i + 2
			}
			i++ // an escaped 0
		}
		return len(b)
	}
	return 1
}

// appendSeqOrd appends a streaming position.
func appendSeqOrd(dst []byte, seq, ord uint64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, seq)
	return binary.BigEndian.AppendUint64(dst, ord)
}

// streamPosition decodes the (seq, ordinal) of a streaming cursor.
func streamPosition(c Cursor) (seq, ord uint64, ok bool) {
	if len(c) != 17 || c[0] != cursorStream {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(c[1:9]), binary.BigEndian.Uint64(c[9:]), true
}

// compareTotal orders two values of any types the way their encodings do:
// by type (undefined < null < false < true < number < string < array <
// object), then within the type. MIN and MAX use it on scalars.
func compareTotal(a, b jsonv.Value) int {
	ka, kb := kindOf(a), kindOf(b)
	if ka != kb {
		if ka < kb {
			return -1
		}
		return 1
	}
	if c, ok := order(a, b); ok {
		return c
	}
	return strings.Compare(string(appendValue(nil, a)), string(appendValue(nil, b)))
}
