package lethe

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Undefined is the partition key component of a document that has no value at the
// key's path. Clients send it as the JSON object {} inside the partition key header.
type Undefined struct{}

// PartitionKey is a partition key value: one component per path of the container's
// partition key definition (several for hierarchical keys). Each component is a
// string, a float64, a bool, nil (JSON null) or Undefined. An empty PartitionKey
// (header "[]") means "no value", used by containers without a key.
type PartitionKey []any

// Equal reports whether two partition keys have the same components. Numbers are
// compared as float64, so 5 and 5.0 are the same key, as in Cosmos DB.
func (pk PartitionKey) Equal(other PartitionKey) bool {
	if len(pk) != len(other) {
		return false
	}
	for i := range pk {
		if pk[i] != other[i] {
			return false
		}
	}
	return true
}

// MarshalJSON renders the key as the JSON array clients send in the
// x-ms-documentdb-partitionkey header, with Undefined as {}.
func (pk PartitionKey) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, c := range pk {
		if i > 0 {
			b.WriteByte(',')
		}
		switch v := c.(type) {
		case Undefined:
			b.WriteString("{}")
		case float64:
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		default:
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b.Write(enc)
		}
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// String returns the JSON form of the key, for messages and logs.
func (pk PartitionKey) String() string {
	b, err := pk.MarshalJSON()
	if err != nil {
		return "[?]"
	}
	return string(b)
}
