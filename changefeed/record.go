package changefeed

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/lethe-db/lethe/jsonv"
)

// Op is what a change did, as the all versions and deletes mode names it.
type Op uint8

// Operations of the all versions and deletes mode. Upserts and patches are
// logged as what they did: a create or a replace.
const (
	OpCreate Op = iota + 1
	OpReplace
	OpDelete
)

// String renders the operation as metadata.operationType does.
func (o Op) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpReplace:
		return "replace"
	case OpDelete:
		return "delete"
	}
	return "unknown"
}

// Record is one change of the all versions and deletes log: a write, a
// delete, or a TTL expiry (a delete with TTLExpired).
type Record struct {
	Op Op
	// LSN is the change's log sequence number; PreviousLSN that of the
	// version it replaced or deleted (0: none, a create).
	LSN, PreviousLSN uint64
	// Second is when the change took effect (metadata.crts): a write's
	// commit, an expiry's instant.
	Second int64
	// TTLExpired marks a delete that is a TTL expiry.
	TTLExpired bool
	// CurrentIsLive marks a create or replace whose version is still the
	// document's live one: its body is not copied into the log, where it
	// would be stored twice, and Current is nil; a reader takes it from
	// the document. Whatever removes or replaces that version writes the
	// record again with the body, in the same transaction.
	CurrentIsLive bool
	// ID and PartitionKey (a JSON object of partition key paths to values,
	// as metadata.partitionKey) name the document.
	ID           string
	PartitionKey []byte
	// Current is the new version (creates and replaces); Previous the
	// version a delete or an expiry removed. Nil when absent. Both are the
	// documents as stored, without "_lsn", which AppendWire adds (LSN to
	// Current, PreviousLSN to Previous): the log keeps no copy of a body
	// that differs from the document's only by it.
	Current, Previous []byte
}

// recordVersion is the first byte of an encoded record.
const recordVersion = 1

// The bits of an encoded record's flags byte.
const (
	flagTTLExpired    = 1
	flagCurrentIsLive = 2
)

// Append appends the record's storage encoding to b.
func (r *Record) Append(b []byte) []byte {
	b = append(b, recordVersion, byte(r.Op))
	flags := byte(0)
	if r.TTLExpired {
		flags |= flagTTLExpired
	}
	if r.CurrentIsLive {
		flags |= flagCurrentIsLive
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, r.LSN)
	b = binary.BigEndian.AppendUint64(b, r.PreviousLSN)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Second))
	b = binary.AppendUvarint(b, uint64(len(r.ID)))
	b = append(b, r.ID...)
	for _, f := range [][]byte{r.PartitionKey, r.Current, r.Previous} { // optional
		if f == nil {
			b = append(b, 0) // absent
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(f))+1)
		b = append(b, f...)
	}
	return b
}

var errBadRecord = errors.New("changefeed: malformed log record")

// DecodeRecord decodes a record encoded by Append; its byte fields alias b.
func DecodeRecord(b []byte) (Record, error) {
	if len(b) < 27 || b[0] != recordVersion || b[1] < byte(OpCreate) || b[1] > byte(OpDelete) || b[2]&^(flagTTLExpired|flagCurrentIsLive) != 0 {
		return Record{}, errBadRecord
	}
	r := Record{Op: Op(b[1]), TTLExpired: b[2]&flagTTLExpired != 0, CurrentIsLive: b[2]&flagCurrentIsLive != 0,
		LSN: binary.BigEndian.Uint64(b[3:]), PreviousLSN: binary.BigEndian.Uint64(b[11:]), Second: int64(binary.BigEndian.Uint64(b[19:]))}
	b = b[27:]
	n, w := uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return Record{}, errBadRecord
	}
	r.ID, b = string(b[w:w+int(n)]), b[w+int(n):]
	fields := make([][]byte, 3)
	for i := range fields {
		n, w := uvarint(b)
		if w <= 0 || n > uint64(len(b)-w)+1 {
			return Record{}, errBadRecord
		}
		b = b[w:]
		if n == 0 {
			continue
		}
		fields[i], b = b[:n-1:n-1], b[n-1:]
	}
	if len(b) != 0 {
		return Record{}, errBadRecord
	}
	for _, doc := range fields[1:] {
		if doc != nil && (len(doc) < 2 || doc[0] != '{' || doc[len(doc)-1] != '}') {
			return Record{}, errBadRecord // a body is a JSON object
		}
	}
	r.PartitionKey, r.Current, r.Previous = fields[0], fields[1], fields[2]
	if r.CurrentIsLive && (r.Op == OpDelete || r.Current != nil) {
		return Record{}, errBadRecord // only a write has a live version, and its body is elsewhere
	}
	return r, nil
}

// AppendWire appends the record as an item of the all versions and deletes
// feed (wire format 2021-09-15): current (an empty object on deletes),
// metadata, and previous when there is one (Lethe gives it on deletes and
// expiries too, which Cosmos DB does not; the SDKs treat it as optional).
func (r *Record) AppendWire(b []byte) []byte {
	b = append(b, `{"current":`...)
	if r.Current != nil {
		b = AppendWithLSN(b, r.Current, r.LSN)
	} else {
		b = append(b, `{}`...)
	}
	b = append(b, `,"metadata":{"crts":`...)
	b = strconv.AppendInt(b, r.Second, 10)
	b = append(b, `,"lsn":`...)
	b = strconv.AppendUint(b, r.LSN, 10)
	b = append(b, `,"operationType":"`...)
	b = append(b, r.Op.String()...)
	b = append(b, '"')
	if r.PreviousLSN != 0 {
		b = append(b, `,"previousImageLSN":`...)
		b = strconv.AppendUint(b, r.PreviousLSN, 10)
	}
	if r.Op == OpDelete {
		b = append(b, `,"timeToLiveExpired":`...)
		b = strconv.AppendBool(b, r.TTLExpired)
		b = append(b, `,"id":`...)
		b = jsonv.AppendString(b, r.ID)
		if r.PartitionKey != nil {
			b = append(b, `,"partitionKey":`...)
			b = append(b, r.PartitionKey...)
		}
	}
	b = append(b, '}')
	if r.Previous != nil {
		b = append(b, `,"previous":`...)
		b = AppendWithLSN(b, r.Previous, r.PreviousLSN)
	}
	return append(b, '}')
}

// AppendWithLSN appends doc, a JSON object, with "_lsn": lsn added as its
// last property, as the change feed serves documents.
func AppendWithLSN(b, doc []byte, lsn uint64) []byte {
	b = append(b, doc[:len(doc)-1]...) // the closing brace
	if len(doc) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"_lsn":`...)
	b = strconv.AppendUint(b, lsn, 10)
	return append(b, '}')
}

// uvarint is binary.Uvarint that refuses an overlong encoding, so that a
// record has one encoding only; w <= 0 on failure.
func uvarint(b []byte) (n uint64, w int) {
	n, w = binary.Uvarint(b)
	if w > 0 && w != len(binary.AppendUvarint(nil, n)) {
		return 0, -1
	}
	return n, w
}

// WireRecord is an all versions and deletes record as a client decodes it
// from the wire (what AppendWire writes): for Go clients, whose SDK has no
// such mode, and for tests.
type WireRecord struct {
	Current  map[string]any `json:"current"`
	Previous map[string]any `json:"previous"`
	Metadata struct {
		OperationType     string `json:"operationType"`
		LSN               uint64 `json:"lsn"`
		CRTS              int64  `json:"crts"`
		PreviousImageLSN  uint64 `json:"previousImageLSN"`
		TimeToLiveExpired bool   `json:"timeToLiveExpired"`
		ID                string `json:"id"`
		// PartitionKey maps each partition key path, without its leading
		// slash, to the deleted document's value there.
		PartitionKey json.RawMessage `json:"partitionKey"`
	} `json:"metadata"`
}

// DocID returns the id of the record's document: metadata.id on deletes,
// current.id otherwise.
func (w *WireRecord) DocID() string {
	if w.Metadata.ID != "" {
		return w.Metadata.ID
	}
	id, _ := w.Current["id"].(string)
	return id
}
