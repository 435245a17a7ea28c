package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ttl"
)

// docRecord is a stored document: a fixed header (docs/format/keys.md) that lets
// reads decide liveness and preconditions without parsing JSON, then the JSON.
type docRecord struct {
	ts  int64   // _ts, Unix seconds of the last write
	seq uint64  // position in insertion order
	own ttl.Own // the document's own ttl, as interpreted
	lsn uint64  // log sequence number of the last write
	// feed is the change feed order key of the last write; zero (Second
	// 0, Writer 0) in records written before the feed existed (format 1).
	feed changefeed.Key
	// logRefers marks a version whose record in the change feed's log takes
	// its body from this record (changefeed.Record.CurrentIsLive), so that
	// what replaces or removes the version knows, without reading the log,
	// that the log needs a copy of it (scope.logBody).
	logRefers bool
	// logOp and logPrev are what the version's log record says besides:
	// a create, or a replace of the version numbered logPrev. A write sets
	// them; a referring version's header keeps them (formats 4 and 5), so
	// that what ends the version writes its record's copy without reading
	// the record (bodyEntry). logOp is 0 where unknown: the versions stored
	// before those formats, and the others, whose log record holds its body
	// and is never rewritten.
	logOp   changefeed.Op
	logPrev uint64
	json    []byte // the document as served
}

// Record formats: 1 without the feed key, 2 with it, 3 as 2 for a version
// whose log record refers to it (logRefers); 4 as 3 for a create's version
// and 5 for a replace's, followed by the replaced version's LSN (logOp and
// logPrev).
const (
	docHeaderLen   = 34
	docHeaderLenV2 = docHeaderLen + feedKeyLen
	docHeaderLenV5 = docHeaderLenV2 + 8
	feedKeyLen     = 20 // a write's order key: second, writer, seq
)

// hasFeed reports whether the version has a place in the change feed.
func (r *docRecord) hasFeed() bool { return r.feed.Writer != changefeed.ExpiryWriter }

var errCorruptRecord = errors.New("engine: corrupt document record")

func (r *docRecord) encode() []byte {
	return append(r.appendHeader(make([]byte, 0, r.headerLen()+len(r.json))), r.json...)
}

// format is the record's format (see the constants above).
func (r *docRecord) format() byte {
	switch {
	case !r.hasFeed():
		return 1
	case !r.logRefers:
		return 2
	case r.logOp == changefeed.OpCreate:
		return 4
	case r.logOp == changefeed.OpReplace:
		return 5
	}
	return 3
}

// headerLen is the length of the record's encoded header.
func (r *docRecord) headerLen() int {
	switch r.format() {
	case 1:
		return docHeaderLen
	case 5:
		return docHeaderLenV5
	}
	return docHeaderLenV2
}

// appendHeader appends the record's header: its format, then the fields
// that reads decide liveness and preconditions by.
func (r *docRecord) appendHeader(b []byte) []byte {
	version := r.format()
	b = append(b, version)
	b = binary.BigEndian.AppendUint64(b, uint64(r.ts))
	b = binary.BigEndian.AppendUint64(b, r.seq)
	b = append(b, byte(r.own.Kind))
	b = binary.BigEndian.AppendUint64(b, uint64(r.own.Seconds))
	b = binary.BigEndian.AppendUint64(b, r.lsn)
	if r.hasFeed() {
		b = r.feed.Append(b)
	}
	if version == 5 {
		b = binary.BigEndian.AppendUint64(b, r.logPrev)
	}
	return b
}

// encodeWithJSON sets the record's JSON to o's and returns the encoded
// record, in one allocation of the exact size that rec.json then shares: a
// write would otherwise grow the JSON's buffer a few times over as it
// encodes, then copy it again behind the header. The JSON is encoded into a
// pooled scratch buffer first, to learn its length.
func (r *docRecord) encodeWithJSON(o jsonv.Value) []byte {
	scratch := jsonScratch.Get().(*[]byte)
	js := jsonv.Append((*scratch)[:0], o)
	b := append(r.appendHeader(make([]byte, 0, r.headerLen()+len(js))), js...)
	r.json = b[r.headerLen():]
	if cap(js) <= maxScratchJSON { // a rare huge document's buffer is not kept
		*scratch = js
		jsonScratch.Put(scratch)
	}
	return b
}

// jsonScratch holds the buffers encodeWithJSON encodes into; maxScratchJSON
// is the largest one it keeps (most documents are a few KB).
var jsonScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxScratchJSON = 64 << 10

// decodeDoc decodes a record; json aliases v.
func decodeDoc(v []byte) (docRecord, error) {
	header := docHeaderLen
	switch {
	case len(v) >= docHeaderLen && v[0] == 1:
	case len(v) >= docHeaderLenV2 && v[0] >= 2 && v[0] <= 4:
		header = docHeaderLenV2
	case len(v) >= docHeaderLenV5 && v[0] == 5:
		header = docHeaderLenV5
	default:
		return docRecord{}, fmt.Errorf("%w (%d bytes)", errCorruptRecord, len(v))
	}
	r := docRecord{
		ts:        int64(binary.BigEndian.Uint64(v[1:])),
		seq:       binary.BigEndian.Uint64(v[9:]),
		own:       ttl.Own{Kind: ttl.OwnKind(v[17]), Seconds: int64(binary.BigEndian.Uint64(v[18:]))},
		lsn:       binary.BigEndian.Uint64(v[26:]),
		logRefers: v[0] >= 3,
		json:      v[header:],
	}
	switch v[0] {
	case 4:
		r.logOp = changefeed.OpCreate
	case 5:
		r.logOp, r.logPrev = changefeed.OpReplace, binary.BigEndian.Uint64(v[docHeaderLenV2:])
	}
	if header >= docHeaderLenV2 {
		k, err := changefeed.DecodeKey(v[docHeaderLen:docHeaderLenV2])
		if err != nil || !(&docRecord{feed: k}).hasFeed() {
			return docRecord{}, fmt.Errorf("%w: feed key", errCorruptRecord)
		}
		r.feed = k
	}
	return r, nil
}

func (r *docRecord) etag() string { return etagFor(r.lsn) }

// layout is what a container's key structure depends on: its RID, its
// partition key paths, its indexing policy, and the paths of its unique keys.
type layout struct {
	rid     [8]byte
	pkPaths []string
	index   *indexPolicy
	unique  [][][]string // unique key -> its paths -> path segments
	// composites are the composite indexes (see composite.go): index ->
	// its paths -> path segments.
	composites [][][]string
	part       partitioning // partition key ranges
}

func (c *collRecord) layout() *layout {
	l := &layout{rid: c.rid(), pkPaths: c.PKPaths, index: policyFromPaths(c.IndexingMode, c.IncludedPaths, c.ExcludedPaths), composites: compositeLayout(c.Composites), part: newPartitioning(c)}
	for _, uk := range c.UniqueKeys {
		var paths [][]string
		for _, p := range uk {
			segs, _ := splitPath(p) // validated when the container was created
			paths = append(paths, segs)
		}
		l.unique = append(l.unique, paths)
	}
	return l
}

// fixedKeys returns the keys every document version owns besides its primary
// key: its insertion-order entry and its expiry index entry, both derived from
// the record's header.
func fixedKeys(l *layout, r *docRecord) [][]byte {
	keys := [][]byte{orderKey(l.rid, r.seq)}
	switch r.own.Kind {
	case ttl.OwnNone:
		keys = append(keys, tsKey(pfxByTS, l.rid, r.ts, r.seq))
	case ttl.OwnSeconds:
		keys = append(keys, tsKey(pfxByExpiry, l.rid, r.ts+r.own.Seconds, r.seq))
	}
	return keys
}

// manifestFor returns the secondary index and unique key entries of a document
// version, and its change feed entry: what its manifest lists, so that the
// purge can remove the version without parsing its JSON. A replace or a
// delete, which has the JSON, computes it again instead of reading the
// manifest (versionKeys), and Check compares the two: a change to what
// manifestFor returns for a stored version must therefore migrate the stored
// manifests, or start a re-index of every container, as feedmigrate did when
// the change feed entries joined them.
func manifestFor(l *layout, rec *docRecord, o *jsonv.Object) ([][]byte, error) {
	seq := rec.seq
	keys := indexEntries(l, seq, o)
	if rec.hasFeed() {
		keys = append(keys, feedKey(l.rid, rec.feed))
	}
	uks, err := uniqueKeys(l, o)
	if err != nil {
		return nil, err
	}
	keys = append(keys, uks...)
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal), nil
}

// indexEntries returns the secondary index entries of a document:
// I <collRid> <path> <value> <seq> for each scalar value at an indexed path,
// and its entry in each composite index (see composite.go). Array elements
// are addressed by the "[]" segment, as in Cosmos DB. The slice has room for
// the two keys manifestFor adds most often.
func indexEntries(l *layout, seq uint64, o *jsonv.Object) [][]byte {
	if l.index == nil || l.index.none {
		return nil
	}
	w := indexWalkers.Get().(*indexWalker)
	w.l, w.seq = l, seq
	w.walk(o)
	for ord, paths := range l.composites {
		n := len(w.buf)
		if w.buf = appendCompositeEntry(w.buf, l.rid, ord, paths, o, seq); len(w.buf) > n {
			w.ends = append(w.ends, len(w.buf))
		}
	}
	buf := bytes.Clone(w.buf)                // the entries' one allocation, of the exact size
	keys := make([][]byte, 0, len(w.ends)+2) // room for a feed key and a unique key
	start := 0
	for _, end := range w.ends {
		keys = append(keys, buf[start:end:end])
		start = end
	}
	w.reset()
	indexWalkers.Put(w)
	return keys
}

// indexWalker collects a document's index entries. Every entry is built in
// buf, one after another, and ends records where each ends: indexEntries
// then copies them out in one allocation of the exact size. Walkers and
// their buffers are pooled.
type indexWalker struct {
	l    *layout
	seq  uint64
	ends []int
	path []string
	buf  []byte
}

// indexWalkers holds idle walkers; maxPooledIndexBuf is the largest buffer a
// walker keeps (a document's entries take a few hundred bytes).
var indexWalkers = sync.Pool{New: func() any {
	return &indexWalker{ends: make([]int, 0, 16), path: make([]string, 0, 8), buf: make([]byte, 0, 1024)}
}}

const maxPooledIndexBuf = 64 << 10

// reset readies the walker for the pool.
func (w *indexWalker) reset() {
	w.l = nil
	w.ends, w.path, w.buf = w.ends[:0], w.path[:0], w.buf[:0]
	if cap(w.buf) > maxPooledIndexBuf {
		w.buf = make([]byte, 0, 1024)
	}
	clear(w.path[:cap(w.path)]) // drop references to the document's keys
}

func (w *indexWalker) walk(v jsonv.Value) {
	switch t := v.(type) {
	case *jsonv.Object:
		if len(w.path) > 0 {
			w.add(containerMarker{})
		}
		for i := range t.Len() {
			k := t.Key(i)
			if len(w.path) == 0 && unindexedRootKey(k) {
				continue
			}
			w.path = append(w.path, k)
			w.walk(t.Val(i))
			w.path = w.path[:len(w.path)-1]
		}
	case []jsonv.Value:
		w.add(containerMarker{})
		w.path = append(w.path, arrayElem)
		for _, e := range t {
			w.walk(e)
		}
		w.path = w.path[:len(w.path)-1]
	default:
		w.add(t)
	}
}

// add appends the entry of v at the current path, if the path is indexed.
func (w *indexWalker) add(v jsonv.Value) {
	if !w.l.index.indexed(w.path) {
		return
	}
	w.buf = appendIndexKey(w.buf, w.l.rid, w.path, v, w.seq)
	w.ends = append(w.ends, len(w.buf))
}

// indexPrefix returns I <collRid> <path>: every entry of one path.
func indexPrefix(coll [8]byte, path []string) []byte {
	return appendIndexPrefix(make([]byte, 0, 32), coll, path)
}

// appendIndexPrefix appends I <collRid> <path> to b.
func appendIndexPrefix(b []byte, coll [8]byte, path []string) []byte {
	b = append(appendCollKey(b, pfxIndex, coll), byte(len(path)))
	for _, s := range path {
		if s == arrayElem {
			b = append(b, tagArrayElem)
		} else {
			b = appendString(b, s)
		}
	}
	return b
}

// maxIndexedString is how many bytes of a string an index entry keeps. Longer
// strings share entries with every string of the same prefix; queries stay
// exact because every candidate is re-checked against the full WHERE clause.
const maxIndexedString = 128

// appendIndexKey appends the index entry of value v at path to b.
func appendIndexKey(b []byte, coll [8]byte, path []string, v jsonv.Value, seq uint64) []byte {
	b = appendIndexedValue(appendIndexPrefix(b, coll, path), v)
	return binary.BigEndian.AppendUint64(b, seq)
}

// appendIndexedValue appends v as index entries hold it: strings cut to
// maxIndexedString bytes (see indexedValue).
func appendIndexedValue(b []byte, v jsonv.Value) []byte {
	if s, ok := v.(string); ok {
		// Cut without boxing the cut string into a jsonv.Value again.
		return appendString(b, cutIndexedString(s))
	}
	return appendValue(b, v)
}

// indexedValue is the value an index entry records: strings are cut to
// maxIndexedString bytes (at a UTF-8 boundary).
func indexedValue(v jsonv.Value) jsonv.Value {
	if s, ok := v.(string); ok && len(s) > maxIndexedString {
		return cutIndexedString(s)
	}
	return v
}

// cutIndexedString is the part of s an index entry records: at most
// maxIndexedString bytes, cut at a UTF-8 boundary.
func cutIndexedString(s string) string {
	if len(s) <= maxIndexedString {
		return s
	}
	n := maxIndexedString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// uniqueKeys returns the document's unique key entries:
// U <collRid> <pk tuple> <key ordinal> <value tuple>. A missing value counts as
// null, as in Cosmos DB (sparse unique keys are not supported).
func uniqueKeys(l *layout, o *jsonv.Object) ([][]byte, error) {
	if len(l.unique) == 0 {
		return nil, nil
	}
	pk, err := extractPK(o, l.pkPaths)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for i, paths := range l.unique {
		k := appendTuple(collKey(pfxUnique, l.rid), pk)
		k = append(k, byte(i))
		for _, segs := range paths {
			k = appendValue(k, valueAt(o, segs))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// valueAt returns the value at a path, or nil (null) when it is missing.
func valueAt(o *jsonv.Object, segs []string) jsonv.Value {
	v, _ := o.GetPath(segs)
	return v
}

// containerMarker is the value of the index entry that says "an object or an
// array is here": it makes IS_DEFINED answerable from the index for paths that
// hold more than scalars.
type containerMarker struct{}

// appendValue encodes any JSON value as one tuple component; objects and
// arrays are encoded by their compact JSON text.
func appendValue(b []byte, v jsonv.Value) []byte {
	switch t := v.(type) {
	case containerMarker:
		return append(b, tagContainer)
	case jsonv.Number:
		return appendComponent(b, t.Float64())
	case nil, bool, string:
		return appendComponent(b, t)
	}
	return appendString(append(b, tagComposite), string(jsonv.Marshal(v)))
}

// Insertion-order and expiry entries hold the document's primary suffix,
// length-prefixed; the manifest holder (see manifestHolder) follows it with the
// manifest: every index and unique key entry the version owns, each as its
// structure byte, a length and the key after <structure><collRid>.

func encodeOrderValue(suffix []byte, size int, manifest [][]byte) []byte {
	n := binary.MaxVarintLen64 * (3 + len(manifest))
	n += len(suffix)
	for _, k := range manifest {
		n += len(k)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(size))
	b = binary.AppendUvarint(b, uint64(len(suffix)))
	b = append(b, suffix...)
	for _, k := range manifest {
		b = append(b, k[0])
		b = binary.AppendUvarint(b, uint64(len(k)-9))
		b = append(b, k[9:]...)
	}
	return b
}

// decodeOrderValue returns the suffix, the document's size and, when coll is
// not nil, the manifest's keys.
func decodeOrderValue(v []byte, coll *[8]byte) (suffix []byte, size int, manifest [][]byte, err error) {
	sz, w := binary.Uvarint(v)
	if w <= 0 || sz > maxDocBytes*2 {
		return nil, 0, nil, errCorruptRecord
	}
	v, size = v[w:], int(sz)
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n {
		return nil, 0, nil, errCorruptRecord
	}
	suffix, v = v[w:w+int(n)], v[w+int(n):]
	if coll == nil {
		return suffix, size, nil, nil
	}
	for len(v) > 0 {
		pfx := v[0]
		n, w := binary.Uvarint(v[1:])
		if w <= 0 || uint64(len(v)-1-w) < n {
			return nil, 0, nil, errCorruptRecord
		}
		k := collKey(pfx, *coll)
		manifest = append(manifest, append(k, v[1+w:1+w+int(n)]...))
		v = v[1+w+int(n):]
	}
	return suffix, size, manifest, nil
}

// ownedKeys returns every key of a stored document version besides its primary
// key, reading its manifest from the entry that holds it.
func ownedKeys(r kv.Reader, l *layout, rec *docRecord) ([][]byte, error) {
	keys := fixedKeys(l, rec)
	v, err := r.Get(manifestHolder(keys))
	if errors.Is(err, kv.ErrNotFound) {
		return keys, nil
	}
	if err != nil {
		return nil, err
	}
	_, _, manifest, err := decodeOrderValue(v, &l.rid)
	if err != nil {
		return nil, err
	}
	return append(keys, manifest...), nil
}

// versionKeys returns every key of the stored version rec besides its
// primary key, as ownedKeys does, for a write that replaces or removes it.
// With no re-index pending every stored manifest is the one the version's
// body and the container's policy call for (Check verifies it after every
// engine test), so it is computed from the body, which the caller has read,
// instead of read from the store: that lookup, of a key written once a
// version and long flushed, was 8% of a replace's server CPU in a profile.
// While a re-index is pending the manifest may follow the earlier policy,
// and is read. o is rec's JSON parsed, or nil to parse it here.
func (s *scope) versionKeys(r kv.Reader, rec *docRecord, o *jsonv.Object) ([][]byte, error) {
	if s.c.IndexBuild != nil {
		return ownedKeys(r, s.l, rec)
	}
	if o == nil {
		var err error
		if o, err = jsonv.ParseStoredObject(rec.json); err != nil {
			return nil, fmt.Errorf("stored document: %w", err)
		}
	}
	manifest, err := manifestFor(s.l, rec, o)
	if err != nil {
		return nil, err
	}
	return append(fixedKeys(s.l, rec), manifest...), nil
}

// manifestHolder picks, among a version's fixed keys, the entry whose value
// carries the manifest: the expiry entry when there is one (the purger reads
// those in order, so it deletes documents without a single point read), else
// the insertion-order entry (documents with ttl -1 are never purged).
func manifestHolder(fixed [][]byte) []byte { return fixed[len(fixed)-1] }

// feedKey returns the latest-version change feed entry of a version written
// at order key k.
func feedKey(coll [8]byte, k changefeed.Key) []byte {
	return k.Append(collKey(pfxFeed, coll))
}
