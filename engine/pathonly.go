package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
	"github.com/lethe-db/lethe/ru"
)

// A query that reads every document it selects but looks at one path only
// (query.Query.OnlyPath: "SELECT c.status, COUNT(1) FROM c GROUP BY
// c.status", "SELECT DISTINCT VALUE c.category FROM c", "SELECT VALUE
// AVG(c.price) FROM c WHERE c.price > 10") is served from that path's index
// entries: each entry holds a document's value there, so the document
// need not be read, which is most of what such a query costs. The source
// yields each live document as an object that holds only that value:
//   - an entry of a document expired and not yet purged is skipped, as a
//     count without lookups skips it (expiredSeqs);
//   - a string the index cuts to its prefix, an object or array (the
//     entry is a marker), and a number whose spelling the query may return
//     (5.0, 5e0: the index holds its value only) are read from the
//     document (entryValue); of equal numbers whose spelling reaches the
//     result only as the first document's (a GROUP BY key, MIN, a DISTINCT
//     row: query.SpellingFirst), the first live entry's;
//   - a document without the path has no entry, so, unless a WHERE
//     conjunct on the path rules such documents out (the read is then
//     narrowed to the conjunct's ranges), as many empty objects are yielded
//     as there are live documents without it: the container's stored
//     documents (its usage tally, as definedInEvery reads it) less the
//     path's entries, less the expired documents that have none;
//   - DISTINCT, and GROUP BY without aggregates, need only the first live
//     document of each value (query.Query.OnePerValue): the read skips
//     the value's other entries, so "SELECT DISTINCT VALUE c.category FROM
//     c" costs about an entry a category, not a document a document.

// pathOnlySource yields the documents of a query that looks at one indexed
// path only, from the path's index entries (see above).
type pathOnlySource struct {
	docReader // the documents of the entries the index does not hold exactly
	path      []string
	prefix    []byte // the path's index prefix
	ranges    []keyRange
	filter    *docFilter
	spelling  query.Spelling // how a number's spelling may reach the result
	// firstNumber is the encoded number whose first live entry was last
	// sent to its document for its spelling (query.SpellingFirst).
	firstNumber []byte
	// valueless: the executor looks at no document (a count whose WHERE
	// the read answers exactly), so entries are yielded without their
	// values; on a store that counts (kv.Counter) they are counted there
	// (countInStore), once triedStore.
	valueless  bool
	triedStore bool
	// missing: the read covers every entry of the path, and the documents
	// without it are yielded too; stored is the container's stored
	// documents, expired or not.
	missing bool
	stored  int64

	phase   int // 0: the entries; 1: the documents looked up; 2: those without the path
	ri      int
	it      kv.Iterator
	entries int   // index entries read
	atPath  int64 // entries in scope, expired or not
	expAt   int64 // of which expired
	later   candidateList
	// firstOnly: of the entries of one value, the first live one in scope
	// is all the query needs (query.Query.OnePerValue); once it is found,
	// the value's other entries are skipped, after skipAfter of them by
	// opening the read again past the value (see skip).
	firstOnly bool
	cur       keyRange // the range the read is in
	skipEnc   []byte   // the value whose first live entry was found
	skipRun   int      // entries of it since
	// lastEnc and lastDoc are the encoded value and the object of the
	// entry yielded last: the entries of equal values come together, and
	// share one object (the executor modifies nothing a source yields).
	lastEnc []byte
	lastDoc *jsonv.Object
	left    int64 // documents without the path still to yield; -1 before they are counted
}

// pathOnlySource returns the source of q, with params and hints h, when it
// looks at one indexed path only (query.Query.OnlyPath), and how it reads.
// ok is false when q does not, or is a count of one exact lookup (which
// counts the lookup's entries without decoding them), or the query is
// scoped to a partition (its list is read instead: a partition is usually
// far smaller than the path's entries), or to a range of partitions without
// a WHERE conjunct on the path, or more documents than a count collects
// await the purge.
func (s *scope) pathOnlySource(r kv.Reader, q *query.Query, params map[string]jsonv.Value, h query.Hints, filters []filterSpec, part *indexPlan, filter *docFilter, lookAhead int) (querySource, sourcePlan, bool) {
	path, spelling, ok := q.OnlyPath(params)
	if !ok || part != nil || !s.l.index.indexed(path) {
		return nil, sourcePlan{}, false
	}
	if q.ReadsNoDocument() && h.Conjuncts == 1 && len(filters) == 1 && exactLookup(filters[0]) {
		return nil, sourcePlan{}, false // a count of one exact lookup counts its entries (equalitySource)
	}
	prefix := indexPrefix(s.rid, path)
	p := orderedPlan{path: path, prefix: prefix}
	narrowed := p.narrow(filters)
	if !narrowed && filter != nil {
		return nil, sourcePlan{}, false
	}
	if _, usable := s.planIndex(filters); usable && !narrowed {
		// A hint on the path's elements (ARRAY_CONTAINS) reads its
		// documents' entries, where the path's own are every document's.
		return nil, sourcePlan{}, false
	}
	expired, ok := s.expiredSeqs(r)
	if !ok {
		return nil, sourcePlan{}, false
	}
	x := &pathOnlySource{docReader: newDocReader(s, r, lookAhead), path: path, prefix: prefix, ranges: p.ranges,
		filter: filter, spelling: spelling, left: -1}
	// A looked-up document is read for its value at the path only; the
	// entries of expired documents are skipped (see docReader.expired).
	x.keyPath, x.expired = path, expired
	sp := sourcePlan{path: path, unordered: true}
	if narrowed && q.ReadsNoDocument() && h.Conjuncts == 1 && len(filters) == 1 && exactRange(filters[0]) {
		x.valueless, sp.whereHolds = true, true
	}
	// Of each value, the first live document may be all the query needs;
	// then it needs those without the path only if one of them makes a row
	// (SELECT DISTINCT c.v does, as {}; SELECT DISTINCT VALUE c.v does not),
	// and counting them takes every entry.
	x.firstOnly = q.OnePerValue() && (narrowed || !s.emptyMakesRow(q, params))
	if !narrowed {
		x.ranges = []keyRange{{prefix, kv.PrefixEnd(prefix)}}
	}
	if !narrowed && !x.firstOnly {
		stored, err := s.storedTally(r)
		if err != nil {
			return nil, sourcePlan{}, false
		}
		x.missing, x.stored = true, stored.count
	}
	return x, sp, true
}

// emptyMakesRow reports whether q, run over one document that holds nothing,
// returns a row; true when it fails.
func (s *scope) emptyMakesRow(q *query.Query, params map[string]jsonv.Value) bool {
	page, err := q.Execute(&oneDocument{doc: emptyDocument}, query.ExecOptions{Params: params, Now: s.at, PageSize: 1})
	return err != nil || len(page.Rows) > 0
}

// oneDocument is a query.Source of one document.
type oneDocument struct {
	doc  *jsonv.Object
	done bool
}

// Next implements query.Source.
func (o *oneDocument) Next() (*jsonv.Object, uint64, bool, error) {
	if o.done {
		return nil, 0, false, nil
	}
	o.done = true
	return o.doc, 0, true, nil
}

// exactRange reports whether the index entries in a range filter's ranges
// are exactly the documents it matches: its bounds are numbers, which the
// index holds as the float64 values comparisons compare (a string bound
// may meet strings the index cuts).
func exactRange(f filterSpec) bool {
	_, loNumber := f.lo.(jsonv.Number)
	_, hiNumber := f.hi.(jsonv.Number)
	return f.kind == filterRange && (f.hasLo || f.hasHi) && (!f.hasLo || loNumber) && (!f.hasHi || hiNumber)
}

// skipAfter is how many entries of a value a read that needs its first one
// only (firstOnly) reads on before it opens the read again past the value:
// reading on is cheaper while values have few entries, opening again once
// they have many.
const skipAfter = 16

// skip opens the read again past the entries of skipEnc.
func (x *pathOnlySource) skip() error {
	err := x.it.Close()
	x.cur.start = kv.PrefixEnd(append(slices.Clip(x.prefix), x.skipEnc...))
	x.skipEnc, x.it = nil, nil
	if x.cur.end == nil || bytes.Compare(x.cur.start, x.cur.end) < 0 {
		x.it = x.r.Scan(x.cur.start, x.cur.end, false)
	}
	return err
}

// entryValue returns the value that an index entry's encoded value enc
// holds, as the document holds it. exact is false when the entry does not
// hold it exactly, so that the document must be read for it: a string cut
// to the indexed prefix, the marker of an object or array, or, when
// spelled, a number (the entry holds its float64 value, not its text).
func entryValue(enc []byte, spelled bool) (v jsonv.Value, exact bool, err error) {
	switch {
	case len(enc) == 0:
		return nil, false, errCorruptIndexEntry
	case len(enc) == 1 && enc[0] == tagContainer, maybeCut(enc), enc[0] == tagNumber && spelled:
		return nil, false, nil
	}
	v, rest, ok := decodeComponent(enc)
	if !ok || len(rest) != 0 || enc[0] == tagUndefined {
		return nil, false, errCorruptIndexEntry
	}
	if f, isNumber := v.(float64); isNumber {
		v = jsonv.NumberFromFloat(f)
	}
	return v, true, nil
}

// errCorruptIndexEntry is a path-only read's failure at an index entry it
// cannot decode.
var errCorruptIndexEntry = errors.New("engine: corrupt index entry")

// Next implements query.Source: first the documents whose values the
// entries hold, then those looked up, then those without the path.
func (x *pathOnlySource) Next() (*jsonv.Object, uint64, bool, error) {
	if x.err != nil {
		return nil, 0, false, x.err
	}
	if x.valueless && !x.triedStore {
		x.triedStore = true
		n, ok, err := x.countInStore()
		if err != nil {
			return x.fail(err)
		}
		if ok {
			x.phase, x.missing, x.left = 2, false, n
		}
	}
	for x.phase == 0 && (x.it != nil || x.ri < len(x.ranges)) {
		if x.it == nil {
			x.cur = x.ranges[x.ri]
			x.ri++
			x.it = x.r.Scan(x.cur.start, x.cur.end, false)
		}
		if !x.it.Next() {
			err := x.it.Close()
			x.it = nil
			if err != nil {
				return x.fail(err)
			}
			continue
		}
		x.entries++
		k, suffix := x.it.Key(), x.it.Value()
		if len(k) < len(x.prefix)+9 || !bytes.HasPrefix(k, x.prefix) {
			return x.fail(errCorruptIndexEntry)
		}
		enc := k[len(x.prefix) : len(k)-8]
		if x.skipEnc != nil {
			if bytes.Equal(enc, x.skipEnc) {
				if x.skipRun++; x.skipRun == skipAfter {
					if err := x.skip(); err != nil {
						return x.fail(err)
					}
				}
				continue
			}
			x.skipEnc = nil
		}
		if !x.filter.match(suffix) {
			continue
		}
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		x.atPath++
		if _, gone := x.expired[seq]; gone {
			x.expAt++
			continue
		}
		if x.valueless {
			return emptyDocument, seq, true, nil
		}
		if x.lastDoc != nil && bytes.Equal(enc, x.lastEnc) {
			return x.lastDoc, seq, true, nil
		}
		// Of equal numbers, the result keeps the first document's
		// spelling (query.SpellingFirst), or may read each one's; of cut
		// strings, objects and arrays, each document has its own value.
		spelled := x.spelling == query.SpellingEach
		if x.spelling == query.SpellingFirst && enc[0] == tagNumber && !bytes.Equal(enc, x.firstNumber) {
			x.firstNumber, spelled = append(x.firstNumber[:0], enc...), true
		}
		v, exact, err := entryValue(enc, spelled)
		if err != nil {
			return x.fail(err)
		}
		if x.firstOnly && (exact || enc[0] == tagNumber) {
			x.skipEnc, x.skipRun = append(x.skipEnc[:0], enc...), 0
		}
		if !exact {
			x.later = append(x.later, candidate{seq, bytes.Clone(suffix)})
			continue
		}
		x.lastEnc, x.lastDoc = append(x.lastEnc[:0], enc...), valueOnlyAt(x.path, v, true)
		return x.lastDoc, seq, true, nil
	}
	if x.phase == 0 {
		x.phase = 1
	}
	if x.phase == 1 {
		o, seq, ok, err := x.parsed(&x.later)
		if err != nil || ok {
			return o, seq, ok, err
		}
		x.phase = 2
	}
	if x.missing && x.left < 0 {
		expiredWithout := int64(len(x.expired)) - x.expAt
		if x.left = x.stored - x.atPath - expiredWithout; x.left < 0 {
			return x.fail(fmt.Errorf("engine: the usage tally counts %d documents, fewer than the %d entries of %q and the %d expired documents without one",
				x.stored, x.atPath, x.path, expiredWithout))
		}
	}
	if x.left > 0 {
		x.left--
		return emptyDocument, 0, true, nil
	}
	return nil, 0, false, nil
}

// countInStore counts the live documents of a valueless read's ranges on
// a store that counts where the entries are (countLive): a document has
// one value at the path, so one entry at most. ok is false when the store
// does not count, the read is scoped by a filter of partitions, or too
// many documents await the purge.
func (x *pathOnlySource) countInStore() (live int64, ok bool, err error) {
	if x.filter != nil || x.firstOnly {
		return 0, false, nil
	}
	live, entries, ok, err := x.s.countLive(x.r, x.ranges)
	if ok {
		x.entries = int(entries)
	}
	return live, ok, err
}

// emptyDocument stands for a document without the path a path-only read
// reads; the executor never modifies what a source yields.
var emptyDocument = jsonv.NewObject(0)

func (x *pathOnlySource) fail(err error) (*jsonv.Object, uint64, bool, error) {
	x.err = err
	return nil, 0, false, err
}

// seek implements querySource: the plans this source serves read every
// document on every page, and their cursors hold no seq.
func (x *pathOnlySource) seek(uint64) {}

func (x *pathOnlySource) close() {
	if x.it != nil {
		_ = x.it.Close() // read errors were returned by Next
		x.it = nil
	}
}

// work implements querySource: the entries read, and the documents looked
// up. A value read from its entry is charged as the entry: no document was
// loaded for it.
func (x *pathOnlySource) work() (ru.Query, error) {
	return ru.Query{IndexEntries: x.entries, Documents: x.examined, BytesLoaded: x.loaded}, x.err
}

// candidateList is a list of candidates, read in order.
type candidateList []candidate

// next implements candidates.
func (l *candidateList) next() (candidate, bool, error) {
	if len(*l) == 0 {
		return candidate{}, false, nil
	}
	c := (*l)[0]
	*l = (*l)[1:]
	return c, true, nil
}

// entriesRead implements candidates; the entries were read, and counted,
// before.
func (l *candidateList) entriesRead() int { return 0 }
