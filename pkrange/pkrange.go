// Package pkrange places partition key values in Cosmos DB's effective
// partition key (EPK) space and lays that space out in partition key ranges,
// as Cosmos DB does for a container's physical partitions.
//
// An EPK is an upper-case hex string. For partition key definition version 2
// (what every current SDK creates) it is the 128-bit MurmurHash3 of the key's
// binary encoding, most significant byte first, with the top two bits cleared,
// so that every EPK sorts below "40" and the sentinel "FF" that ends the last
// range. A hierarchical (MultiHash) key's EPK is the concatenation of each
// component's own hash, so a prefix of the key names a contiguous EPK range.
// Clients compute the same EPKs (the Go SDK for ReadMany and feed ranges, the
// JavaScript SDK for bulk and per-range queries) and route requests to the
// range that holds them: the server must agree with them byte for byte.
//
// Ranges are compared as strings, except that trailing zeros are not
// significant: "1F" and "1F00" are the same point. The package has no I/O.
package pkrange

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/spaolacci/murmur3"
)

// End is the exclusive upper end of the EPK space: the maxExclusive of a
// container's last range.
const End = "FF"

// MaxThroughputPerRange is the most throughput, in RU/s, that Cosmos DB gives
// one physical partition: a container provisioned with more starts with
// ceil(throughput / MaxThroughputPerRange) ranges.
const MaxThroughputPerRange = 10_000

// Binary encoding markers of partition key components, before hashing.
const (
	markerUndefined = 0x00
	markerNull      = 0x01
	markerFalse     = 0x02
	markerTrue      = 0x03
	markerNumber    = 0x05
	markerString    = 0x08
	stringEnd       = 0xFF // ends a string component (version 2)
)

// EPK returns the effective partition key of pk under a version 2 partition
// key definition: one hash of all components for a Hash key, one hash per
// component for a MultiHash key (hierarchical), concatenated. Components
// are lethe.Undefined, nil, bool, float64 or string, as lethe.PartitionKey
// holds them; an empty key (a query over every partition) has EPK "".
func EPK(pk lethe.PartitionKey, multiHash bool) string {
	if len(pk) == 0 {
		return ""
	}
	var buf []byte
	if !multiHash {
		for _, c := range pk {
			buf = appendComponent(buf, c)
		}
		return hash(buf)
	}
	var b strings.Builder
	for _, c := range pk {
		buf = appendComponent(buf[:0], c)
		b.WriteString(hash(buf))
	}
	return b.String()
}

// appendComponent appends the binary encoding of one key component that
// Cosmos DB hashes: a type marker, then the little-endian IEEE-754 bits of a
// number or the UTF-8 bytes of a string followed by 0xFF.
func appendComponent(b []byte, c any) []byte {
	switch v := c.(type) {
	case nil:
		return append(b, markerNull)
	case bool:
		if v {
			return append(b, markerTrue)
		}
		return append(b, markerFalse)
	case float64:
		if v == 0 {
			v = 0 // -0 is the same partition key value as 0 (the store keeps one key for both)
		}
		b = append(b, markerNumber)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	case string:
		b = append(b, markerString)
		b = append(b, v...)
		return append(b, stringEnd)
	}
	return append(b, markerUndefined) // lethe.Undefined
}

// hash returns the 32 hex digits of a component's EPK.
func hash(b []byte) string {
	low, high := murmur3.Sum128(b)
	var out [16]byte
	binary.BigEndian.PutUint64(out[:8], high&^(3<<62))
	binary.BigEndian.PutUint64(out[8:], low)
	return strings.ToUpper(hex.EncodeToString(out[:]))
}

// Range is a partition key range: the EPKs from Min (inclusive) to Max
// (exclusive). The first range starts at "" and the last ends at End.
type Range struct {
	ID       string
	Min, Max string
}

// Contains reports whether epk lies in the range.
func (r Range) Contains(epk string) bool {
	return Compare(r.Min, epk) <= 0 && Compare(epk, r.Max) < 0
}

// Overlaps reports whether the range shares an EPK with [min, max).
func (r Range) Overlaps(min, max string) bool {
	return Compare(r.Min, max) < 0 && Compare(min, r.Max) < 0
}

// Compare orders two EPKs: -1, 0 or 1. Trailing zeros are not significant,
// so a range boundary of 32 digits and a longer hierarchical EPK compare as
// points of one space.
func Compare(a, b string) int {
	a, b = strings.TrimRight(a, "0"), strings.TrimRight(b, "0")
	return strings.Compare(a, b)
}

// ForThroughput returns how many ranges a container provisioned with
// throughput RU/s starts with: one per MaxThroughputPerRange, at least one.
func ForThroughput(throughput int) int {
	return max(1, (throughput+MaxThroughputPerRange-1)/MaxThroughputPerRange)
}

// Layout returns n ranges, with ids "0" to "n-1", that split the EPK space
// evenly: range i starts at i/n of the hash space [0, 0x40 00..00), written
// as 32 hex digits, and the last one ends at End. Cosmos DB lays out a new
// container's physical partitions the same way.
func Layout(n int) []Range {
	n = max(n, 1)
	span := new(big.Int).Lsh(big.NewInt(1), 126) // every EPK's first 16 bytes lie below 2^126
	out := make([]Range, n)
	prev := ""
	for i := range n {
		next := End
		if i < n-1 {
			v := new(big.Int).Mul(span, big.NewInt(int64(i+1)))
			v.Div(v, big.NewInt(int64(n)))
			next = strings.ToUpper(leftPad(v.Text(16), 32))
		}
		out[i] = Range{ID: strconv.Itoa(i), Min: prev, Max: next}
		prev = next
	}
	return out
}

func leftPad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return strings.Repeat("0", n-len(s)) + s
}
