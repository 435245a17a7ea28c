package engine

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// Resource ids (RIDs) are hierarchical like Cosmos DB's: a database is 4 bytes, a
// container 8 (its database's 4 + 4), a document 16 (its container's 8 + 8). They
// are rendered in base64 with '/' replaced by '-', as Cosmos DB does, so that they
// can appear in paths.

func encodeRID(b []byte) string {
	return strings.ReplaceAll(base64.StdEncoding.EncodeToString(b), "/", "-")
}

func decodeRID(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(s, "-", "/"))
	return b, err == nil
}

func dbRID(n uint32) [4]byte {
	var r [4]byte
	binary.LittleEndian.PutUint32(r[:], n)
	return r
}

func collRID(db [4]byte, n uint32) [8]byte {
	var r [8]byte
	copy(r[:4], db[:])
	// Cosmos DB sets the top bit of a container's own part; the JS SDK does not
	// care, but keeping the shape makes RIDs look familiar.
	binary.LittleEndian.PutUint32(r[4:], n|0x80000000)
	return r
}

func docRID(coll [8]byte, seq uint64) string {
	var r [16]byte
	copy(r[:8], coll[:])
	binary.LittleEndian.PutUint64(r[8:], seq)
	return encodeRID(r[:])
}
