package bench

import "strconv"

// The benchmark's documents. Document number n has id "d<n>", partition key
// "p<n mod partitions>" and an indexed field k = n/10, so that the ten
// consecutive documents sharing a k value lie in ten different partitions
// (when there are at least ten): the cross-partition query on k returns
// exactly one page of ten. v counts the document's versions (replaces and
// upserts bump it), and pad fills the document up to the requested size.
//
//	{"id":"d1234","pk":"p34","k":123,"v":0,"pad":"xxxx…"}

// docID returns the id of document number n.
func docID(n int) string { return "d" + strconv.Itoa(n) }

// docPK returns the partition key value of document number n.
func docPK(n, partitions int) string { return "p" + strconv.Itoa(n%partitions) }

// docK returns the k field of document number n.
func docK(n int) int { return n / 10 }

// appendDocument appends the JSON of document number n at version v to b,
// padded to size bytes (documents whose fixed fields are longer than size are
// not padded). A positive ttl adds a "ttl" property in seconds.
func appendDocument(b []byte, n, partitions, v, ttl, size int) []byte {
	start := len(b)
	b = append(b, `{"id":"d`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `","pk":"p`...)
	b = strconv.AppendInt(b, int64(n%partitions), 10)
	b = append(b, `","k":`...)
	b = strconv.AppendInt(b, int64(docK(n)), 10)
	b = append(b, `,"v":`...)
	b = strconv.AppendInt(b, int64(v), 10)
	if ttl > 0 {
		b = append(b, `,"ttl":`...)
		b = strconv.AppendInt(b, int64(ttl), 10)
	}
	b = append(b, `,"pad":"`...)
	pad := size - (len(b) - start) - len(`"}`)
	for range max(pad, 0) {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}
