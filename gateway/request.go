package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/metrics"
)

// maxBodyBytes bounds request bodies: a 2 MB document plus room for a batch's
// envelope. Larger bodies are refused with 413 before they are read in full.
const maxBodyBytes = 2<<20 + 64<<10

// maxPreallocatedBody is the largest declared body length that body
// allocates before reading: most documents are a few KB.
const maxPreallocatedBody = 64 << 10

// request carries one request's decoded routing data and the response state
// shared by every handler.
type request struct {
	r        *http.Request
	activity string
	segs     []string // decoded path segments
	charge   float64
	session  string // session token to return, if any
	altPath  string // x-ms-alt-content-path
	ridPath  string // x-ms-content-path
	minimal  bool   // Prefer: return=minimal

	op  metrics.Operation // for the request metrics; set only when they are on
	rec statusRecorder    // wraps the ResponseWriter when metrics are on
}

func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

func (rq *request) header(name string) string { return rq.r.Header.Get(name) }

// flag reads a boolean header ("true"/"True").
func (rq *request) flag(name string) bool { return strings.EqualFold(rq.header(name), "true") }

// body reads the request body, refusing more than maxBodyBytes with 413.
// A small body of known length (the SDKs always send Content-Length) is read
// into one buffer of that size: net/http ends the body there, and io.ReadAll
// would grow its buffer from 512 bytes, allocating about three times a
// document's size. A larger one grows as it arrives, so that a client that
// declares megabytes and sends nothing holds no more than it sent.
func (rq *request) body() ([]byte, error) {
	if rq.r.ContentLength > maxBodyBytes {
		return nil, lethe.Errorf(lethe.CodeEntityTooLarge, "Request size is too large: %d bytes; the limit is %d.", rq.r.ContentLength, maxBodyBytes)
	}
	if n := rq.r.ContentLength; n >= 0 && n <= maxPreallocatedBody {
		b := make([]byte, n)
		if _, err := io.ReadFull(rq.r.Body, b); err != nil {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The request body could not be read: %s", err.Error())
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(rq.r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The request body could not be read: %s", err.Error())
	}
	if len(b) > maxBodyBytes {
		return nil, lethe.Errorf(lethe.CodeEntityTooLarge, "Request size is too large; the limit is %d bytes.", maxBodyBytes)
	}
	return b, nil
}

// partitionKey parses the partition key header; nil when absent.
func (rq *request) partitionKey() (lethe.PartitionKey, error) {
	v, ok := rq.r.Header["X-Ms-Documentdb-Partitionkey"]
	if !ok || len(v) == 0 {
		return nil, nil
	}
	return parsePartitionKeyHeader(v[0])
}

// rangeScope reads the partition key range a request is confined to: a range
// id (x-ms-documentdb-partitionkeyrangeid, sent by SDKs that fan queries and
// feeds out over ranges) and effective partition key bounds (x-ms-start-epk
// and x-ms-end-epk, sent for a feed range narrower than a range).
func (rq *request) rangeScope() engine.Scope {
	return engine.Scope{
		RangeID: strings.TrimSpace(rq.header("x-ms-documentdb-partitionkeyrangeid")),
		EPKMin:  rq.header("x-ms-start-epk"),
		EPKMax:  rq.header("x-ms-end-epk"),
	}
}

// maxItemCount reads x-ms-max-item-count; 0 means the default.
func (rq *request) maxItemCount() (int, error) {
	v := rq.header("x-ms-max-item-count")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < -1 {
		return 0, lethe.Errorf(lethe.CodeBadRequest, "The x-ms-max-item-count header value '%s' is invalid: use a positive integer or -1.", truncateInput(v, 50))
	}
	if n == -1 {
		return 0, nil
	}
	return n, nil
}

// Constant response header values, shared by every response. net/http only
// reads them.
var (
	jsonContentType = []string{"application/json"}
	zeroLength      = []string{"0"}
)

// setHeader sets a header whose name is already in canonical form, sparing
// Header.Set its canonicalisation (a copy for every lower-case name).
func setHeader(h http.Header, canonical, value string) { h[canonical] = []string{value} }

// setCommonHeaders sets the headers every response carries. Cosmos DB also
// sends its service, gateway and schema versions, which no SDK reads; Lethe
// leaves them out, so that a point operation's response has at most eight
// headers: a Go map holds eight entries before it grows into a table, and
// net/http copies the map once more as the response is written (the two
// cost a read about 3 us under load).
func (rq *request) setCommonHeaders(h http.Header) {
	// The values share one backing array: one allocation, not one a header.
	vals := make([]string, 0, 5)
	set := func(canonical, value string) {
		vals = append(vals, value)
		n := len(vals)
		h[canonical] = vals[n-1 : n : n]
	}
	set("X-Ms-Activity-Id", rq.activity)
	set("X-Ms-Request-Charge", strconv.FormatFloat(rq.charge, 'f', -1, 64))
	if rq.session != "" {
		set("X-Ms-Session-Token", rq.session)
	}
	if rq.altPath != "" {
		set("X-Ms-Alt-Content-Path", rq.altPath)
	}
	if rq.ridPath != "" {
		set("X-Ms-Content-Path", rq.ridPath)
	}
}

// writeJSON writes v as the response body with status.
func (rq *request) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"code":"InternalServerError","message":"Internal error."}`)
		status = http.StatusInternalServerError
	}
	rq.writeRaw(w, status, b)
}

// writeRaw writes an already-encoded JSON body.
func (rq *request) writeRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	rq.setCommonHeaders(h)
	h["Content-Type"] = jsonContentType
	setHeader(h, "Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeResource writes one resource with its etag, honouring Prefer: return=minimal.
func (rq *request) writeResource(w http.ResponseWriter, status int, etag string, body []byte) {
	if etag != "" {
		setHeader(w.Header(), "Etag", etag)
	}
	if rq.minimal {
		rq.setCommonHeaders(w.Header())
		w.Header()["Content-Length"] = zeroLength
		w.WriteHeader(status)
		return
	}
	rq.writeRaw(w, status, body)
}

// writeFeed writes a feed body {"_rid","<list>":[...],"_count"} from raw items.
// The body is assembled in a pooled buffer and written in one piece, as
// net/http sends it in a few large writes: a page of ten 1 KB documents
// would otherwise allocate 13 KB a query, and writing it item by item would
// take more write calls.
func (rq *request) writeFeed(w http.ResponseWriter, rid, list string, items [][]byte) {
	n := 32 + len(rid) + len(list)
	for _, it := range items {
		n += len(it) + 1
	}
	pooled := feedBuffers.Get().(*[]byte)
	b := slices.Grow((*pooled)[:0], n)
	b = append(b, `{"_rid":`...)
	b = strconv.AppendQuote(b, rid)
	b = append(b, `,"`...)
	b = append(b, list...)
	b = append(b, `":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"_count":`...)
	b = strconv.AppendInt(b, int64(len(items)), 10)
	b = append(b, '}')
	w.Header().Set("x-ms-item-count", strconv.Itoa(len(items)))
	rq.writeRaw(w, http.StatusOK, b) // a Write keeps no reference to b
	if cap(b) <= maxPooledFeed {
		*pooled = b
		feedBuffers.Put(pooled)
	}
}

// feedBuffers holds the buffers writeFeed assembles bodies in, up to
// maxPooledFeed bytes each; a larger page's buffer is left to the collector.
var feedBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledFeed = 1 << 20
