package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ru"
)

// docReader is what the index and scan sources share: it looks their
// candidates' documents up ahead (lookAhead), hands the executor the live
// ones, and counts what the executor took, for the page's charge.
type docReader struct {
	s    *scope
	r    kv.Reader
	look lookAhead
	// rawOnly: the executor reads only Raw (query.Query.ReadsOnlyRaw, with a
	// WHERE that holds for every document yielded), so documents are not
	// parsed.
	rawOnly bool
	// keyPath, when set, is the one path the executor reads besides Raw
	// (query.Query.ReadsOnlyRawAndFirstKey): documents are yielded as an
	// object holding only the value there, read without parsing the rest.
	keyPath []string
	// paths, when set, are every document path the executor reads
	// (query.Query.ReadPaths): documents are yielded as objects holding
	// only the values there, read without parsing the rest.
	paths [][]string
	// countOnly: the executor reads nothing of the documents (a count:
	// query.Query.ReadsNoDocument, with no WHERE or one the index answers
	// exactly), so candidates are yielded without a lookup but for those in
	// expired, the seqs of the documents expired and not yet purged, which
	// a lookup would have left out (see scope.countWithoutLookups).
	countOnly bool
	expired   map[uint64]struct{}
	// storeCounted, once triedStore, is how many live documents of a
	// countOnly source that the store counted (storeCount) are left to
	// yield; -1 when the store did not count them.
	storeCounted int64
	triedStore   bool
	examined     int // live documents taken
	charged      int // entries read to produce the candidates taken
	loaded       int // bytes of the documents taken
	raw          []byte
	err          error
}

func newDocReader(s *scope, r kv.Reader, lookAhead int) docReader {
	return docReader{s: s, r: r, look: newLookAhead(r, lookAhead)}
}

// record returns the next live document of src's candidates, unparsed;
// false at the end.
func (d *docReader) record(src candidates) (*docRecord, uint64, bool, error) {
	if d.err != nil {
		return nil, 0, false, d.err
	}
	for {
		f, err := d.look.take(d.r, d.s.rid, src)
		if err != nil {
			d.err = err
			return nil, 0, false, err
		}
		if f == nil {
			d.charged = src.entriesRead()
			return nil, 0, false, nil
		}
		d.charged = f.scanned
		rec := f.rec
		if rec == nil || rec.seq != f.seq || !d.s.live(rec) {
			continue
		}
		d.examined++
		d.loaded += len(rec.json)
		d.raw = rec.json
		return rec, f.seq, true, nil
	}
}

// parsed returns the next live document of src's candidates, parsed unless
// rawOnly; false at the end.
func (d *docReader) parsed(src candidates) (*jsonv.Object, uint64, bool, error) {
	if d.countOnly {
		return d.counted(src)
	}
	rec, seq, ok, err := d.record(src)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	if d.rawOnly {
		return unparsed, seq, true, nil
	}
	if d.keyPath != nil {
		v, present, err := jsonv.StoredMember(rec.json, d.keyPath)
		if err != nil {
			d.err = err
			return nil, 0, false, err
		}
		return valueOnlyAt(d.keyPath, v, present), seq, true, nil
	}
	o, err := parseStored(rec.json, d.paths)
	if err != nil {
		d.err = err
		return nil, 0, false, err
	}
	return o, seq, true, nil
}

// parseStored parses a document's stored JSON: whole, or, when paths is
// not nil, into an object that holds only its values at paths, each parsed
// alone (see query.Query.ReadPaths).
func parseStored(b []byte, paths [][]string) (*jsonv.Object, error) {
	if paths == nil {
		return jsonv.ParseStoredObject(b)
	}
	o := jsonv.NewObject(len(paths))
	for _, path := range paths {
		v, present, err := jsonv.StoredMember(b, path)
		if err != nil {
			return nil, err
		}
		if present {
			o.SetPath(path, v)
		}
	}
	return o, nil
}

// reader returns d, for the sources that embed it.
func (d *docReader) reader() *docReader { return d }

// counted returns the next of src's candidates that has not expired, as a
// document the executor does not look into (countOnly).
func (d *docReader) counted(src candidates) (*jsonv.Object, uint64, bool, error) {
	if d.err != nil {
		return nil, 0, false, d.err
	}
	if !d.triedStore {
		d.triedStore = true
		d.storeCounted = d.storeCount(src)
	}
	if d.storeCounted >= 0 {
		if d.storeCounted == 0 || d.err != nil {
			return nil, 0, false, d.err
		}
		d.storeCounted--
		d.examined++
		return unparsed, uint64(d.examined), true, nil
	}
	for {
		c, ok, err := src.next()
		if err != nil {
			d.err = err
			return nil, 0, false, err
		}
		d.charged = src.entriesRead()
		if !ok {
			return nil, 0, false, nil
		}
		if _, gone := d.expired[c.seq]; gone {
			continue
		}
		d.examined++
		return unparsed, c.seq, true, nil
	}
}

// skip passes over up to n of src's next candidates without looking their
// documents up, for an executor that would drop them (query.Skipper: the
// documents an OFFSET skips, when the index answers WHERE and the order).
// As in a count (countWithoutLookups), only the documents expired and not
// yet purged would have been left out by a lookup, and they are known by
// their seqs; when there are too many of them, or something was already
// looked up, it passes over nothing and the lookups decide. then is how
// many documents the executor goes on to read: the next lookup takes that
// many, not what the page with its OFFSET would have needed.
func (d *docReader) skip(src candidates, n, then int) (int, error) {
	if d.err != nil || d.countOnly || n <= 0 || d.look.taken != len(d.look.ahead) || d.look.exhausted {
		return 0, d.err
	}
	expired, ok := d.s.expiredSeqs(d.r)
	if !ok {
		return 0, nil
	}
	passed := 0
	for passed < n {
		c, ok, err := src.next()
		if err != nil {
			d.err = err
			return passed, err
		}
		d.charged = src.entriesRead()
		if !ok {
			d.look.exhausted = true
			break
		}
		if _, gone := expired[c.seq]; !gone {
			passed++
		}
	}
	d.examined += passed
	if d.look.batch != nil {
		d.look.n = min(max(then, 1), maxLookAhead)
	}
	return passed, nil
}

// storeCountable is a source whose candidates are exactly the entries of
// some ranges, one for each document at most, when ok.
type storeCountable interface {
	countableRanges() (ranges []keyRange, ok bool)
}

// storeCount returns how many live documents src's candidates hold, as
// the store counts them (countLive); -1 when it does not count, or the
// source is not storeCountable.
func (d *docReader) storeCount(src candidates) int64 {
	sc, ok := src.(storeCountable)
	if !ok {
		return -1
	}
	ranges, ok := sc.countableRanges()
	if !ok {
		return -1
	}
	live, entries, ok, err := d.s.countLive(d.r, ranges)
	switch {
	case err != nil:
		d.err = err
		return 0
	case !ok:
		return -1
	}
	d.charged = int(entries)
	return live
}

// countLive counts the entries of ranges, which hold one entry a document
// at most, on a store that counts them where they are (kv.Counter: on
// PostgreSQL, where reading them sends every key and value over the
// connection), and the live documents among them: less the documents
// expired and not yet purged that have an entry there, which their
// manifests name. ok is false when the store does not count, or the
// expired documents are too many to look at.
func (s *scope) countLive(r kv.Reader, ranges []keyRange) (live, entries int64, ok bool, err error) {
	c, counts := r.(kv.Counter)
	if !counts {
		return 0, 0, false, nil
	}
	var gone int64
	ok = s.eachExpired(r, func(_, value []byte) bool {
		_, _, manifest, err := decodeOrderValue(value, &s.rid)
		if err == nil && slices.ContainsFunc(manifest, func(k []byte) bool { return inRanges(k, ranges) }) {
			gone++
		}
		return err == nil
	})
	if !ok {
		return 0, 0, false, nil
	}
	for _, kr := range ranges {
		n, err := c.Count(kr.start, kr.end, -1)
		if err != nil {
			return 0, 0, false, err
		}
		entries += n
	}
	return max(entries-gone, 0), entries, true, nil
}

// inRanges reports whether key lies in one of ranges.
func inRanges(key []byte, ranges []keyRange) bool {
	return slices.ContainsFunc(ranges, func(kr keyRange) bool {
		return bytes.Compare(key, kr.start) >= 0 && (kr.end == nil || bytes.Compare(key, kr.end) < 0)
	})
}

// maxCountExpired bounds the expired documents not yet purged whose seqs a
// count collects to count without lookups (countWithoutLookups): beyond
// it, while the purge catches up, a count looks its documents up.
const maxCountExpired = 4096

// countWithoutLookups sets d, the reader of a source whose executor reads
// nothing of the documents, to count its candidates without looking them
// up (countOnly). A lookup would only leave out the documents that have
// expired but are not yet purged: they are exactly those whose expiry
// entries (T, X) lie at or below the scope's cutoffs, the rule the purge
// and the usage tallies share, so their seqs are collected instead, unless
// there are more than maxCountExpired (or reading them fails: the lookups
// then meet the failure too).
func (s *scope) countWithoutLookups(r kv.Reader, d *docReader) {
	if expired, ok := s.expiredSeqs(r); ok {
		d.countOnly, d.expired = true, expired
	}
}

// expiredSeqs returns the seqs of the documents that have expired and are
// not yet purged: those whose expiry entries (T, X) lie at or below the
// scope's cutoffs. ok is false when there are more than maxCountExpired of
// them, or reading them fails.
func (s *scope) expiredSeqs(r kv.Reader) (expired map[uint64]struct{}, ok bool) {
	expired = map[uint64]struct{}{}
	ok = s.eachExpired(r, func(key, _ []byte) bool {
		if len(key) >= 8 {
			expired[binary.BigEndian.Uint64(key[len(key)-8:])] = struct{}{}
		}
		return true
	})
	if !ok {
		return nil, false
	}
	return expired, true
}

// eachExpired calls fn with the key and value of the expiry entry (T, X)
// of each document expired and not yet purged: those whose entries lie at
// or below the scope's cutoffs. It returns false, having stopped, when
// there are more than maxCountExpired of them, reading them fails, or fn
// returns false.
func (s *scope) eachExpired(r kv.Reader, fn func(key, value []byte) bool) bool {
	seen := 0
	for _, kind := range []byte{pfxByTS, pfxByExpiry} {
		kr, ok := s.expiredEntries(kind)
		if !ok {
			continue
		}
		it := r.Scan(kr.start, kr.end, false)
		for it.Next() {
			if seen++; seen > maxCountExpired || !fn(it.Key(), it.Value()) {
				it.Close()
				return false
			}
		}
		if it.Close() != nil {
			return false
		}
	}
	return true
}

// valueOnlyAt returns an object whose only value is v at path, or an empty
// object when the value is absent: a document as an executor that reads
// only that path sees it.
func valueOnlyAt(path []string, v jsonv.Value, present bool) *jsonv.Object {
	o := jsonv.NewObject(1)
	if present {
		o.SetPath(path, v)
	}
	return o
}

// unparsed stands for a document the executor will not look into (rawOnly).
var unparsed = jsonv.NewObject(0)

// Raw returns the stored JSON of the document taken last: part of the value
// its lookup returned, which the reader owns and nothing modifies, so a
// page's rows may keep it (query.Source).
func (d *docReader) Raw() []byte { return d.raw }

// work is what the source read to produce the documents taken, for the
// page's charge.
func (d *docReader) work() (ru.Query, error) {
	return ru.Query{IndexEntries: d.charged, Documents: d.examined, BytesLoaded: d.loaded}, d.err
}

// lookAhead looks a query source's documents up ahead of the executor, several
// candidates in one kv.GetBatch, so that a network store answers a page's
// lookups in one round trip rather than one each. The first lookup takes n
// candidates (a page's worth); each further one twice as many as the last, up
// to maxLookAhead, so that a page whose filter rejects most documents needs
// few round trips and a page that stops early wastes at most what it used.
//
// A reader that is not a kv.BatchGetter would make one Get per key anyway,
// so there candidates are looked up one at a time and nothing is read ahead.
//
// Sources count what they read as the executor takes documents
// (fetched.scanned), so a page's charge does not depend on the look-ahead.
type lookAhead struct {
	batch     kv.BatchGetter // nil: one Get per candidate
	n         int            // candidates the next lookup takes
	ahead     []fetched      // looked up, not yet taken: ahead[taken:]
	taken     int
	keys      [][]byte
	exhausted bool // the candidates have run out
}

// maxLookAhead bounds a lookup: a page of many large documents is looked up
// in rounds rather than held at once.
const maxLookAhead = 100

// fetched is a candidate and its stored document, looked up ahead of the
// executor.
type fetched struct {
	seq     uint64
	rec     *docRecord // nil: absent
	scanned int        // entries the source had read once it produced the candidate
}

// candidates is what a lookAhead draws from: a source's candidates in
// order, and how many entries it has read to produce them.
type candidates interface {
	// next returns the next candidate, false at the end. The candidate's
	// suffix need only stay valid until next is called again.
	next() (candidate, bool, error)
	entriesRead() int
}

// newLookAhead returns a lookAhead over r whose first lookup takes n
// candidates (0 means 1).
func newLookAhead(r kv.Reader, n int) lookAhead {
	b, ok := r.(kv.BatchGetter)
	if !ok {
		return lookAhead{n: 1}
	}
	return lookAhead{batch: b, n: min(max(n, 1), maxLookAhead)}
}

// reset lets go of what was looked up and not taken, for a source that seeks.
func (l *lookAhead) reset() {
	clear(l.ahead)
	l.ahead, l.taken, l.exhausted = l.ahead[:0], 0, false
}

// take returns the next candidate of src with its document, looking the next
// ones up when every one looked up has been taken; nil once src has run out.
func (l *lookAhead) take(r kv.Reader, coll [8]byte, src candidates) (*fetched, error) {
	if l.taken == len(l.ahead) {
		if l.exhausted {
			return nil, nil
		}
		if err := l.fetch(r, coll, src); err != nil {
			return nil, err
		}
		if len(l.ahead) == 0 {
			return nil, nil
		}
	}
	l.taken++
	return &l.ahead[l.taken-1], nil
}

// fetch draws the next l.n candidates from src and looks their documents up.
func (l *lookAhead) fetch(r kv.Reader, coll [8]byte, src candidates) error {
	clear(l.ahead) // let go of the documents taken
	l.ahead, l.taken, l.keys = slices.Grow(l.ahead[:0], l.n), 0, slices.Grow(l.keys[:0], l.n)
	for len(l.ahead) < l.n {
		c, ok, err := src.next()
		if err != nil {
			return err
		}
		if !ok {
			l.exhausted = true
			break
		}
		// docKey copies the suffix, which the source may reuse.
		l.keys = append(l.keys, docKey(coll, c.suffix))
		l.ahead = append(l.ahead, fetched{seq: c.seq, scanned: src.entriesRead()})
	}
	if len(l.keys) == 0 {
		return nil
	}
	if l.batch == nil {
		rec, err := lookupKey(r, l.keys[0])
		l.ahead[0].rec = rec
		return err
	}
	vals, err := l.batch.GetBatch(l.keys)
	if err != nil {
		return fmt.Errorf("read documents: %w", err)
	}
	for i, v := range vals {
		if v == nil {
			continue
		}
		rec, err := decodeDoc(v)
		if err != nil {
			return err
		}
		l.ahead[i].rec = &rec
	}
	l.n = min(2*l.n, maxLookAhead)
	return nil
}
