package engine

import (
	"bytes"
	"time"

	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
)

// A WHERE conjunct that reads one path but that no index range serves
// (query.Query.PathConditions: CONTAINS(c.name, @q), ENDSWITH, LOWER(c.email)
// = @e, RegexMatch) left the query to read every document. The path's index
// entries hold its values: reading them and judging the conjunct on each,
// only the documents whose value passes are looked up, as Cosmos DB's
// "full index scan" does. The candidates are gathered as a range's are, and
// race the documents in insertion order for the first page (newScanRace).
// An entry whose value the index does not hold
// exactly is a candidate whatever it is: a cut string, a number whose
// spelling the conjunct may read, an object's or array's marker.

// conditionSource returns the source of a query with no index plan that
// has such a conjunct on an indexed path, the first of them that no
// document without the path satisfies (which the index would leave out);
// ok is false when it has none, or the query is scoped to a partition,
// whose documents are read instead (its list is usually far shorter than
// the path's entries).
func (s *scope) conditionSource(r kv.Reader, q *query.Query, params map[string]jsonv.Value, part *indexPlan, filter *docFilter, lookAhead int) (querySource, sourcePlan, bool) {
	if part != nil {
		return nil, sourcePlan{}, false
	}
	for _, c := range q.PathConditions(params) {
		if !s.l.index.indexed(c.Path) || c.Holds(nil, false, s.at) {
			continue
		}
		prefix := indexPrefix(s.rid, c.Path)
		src := s.indexSource(r, &indexPlan{spec: filterSpec{path: c.Path, kind: filterDefined}, ranges: []keyRange{{prefix, kv.PrefixEnd(prefix)}}}, filter, lookAhead)
		src.keep = &entryTest{cond: c, valueAt: len(prefix), now: s.at}
		src.gr = newScanRace(r, s.rid)
		src.gr.entryCost = judgedEntryCost
		return src, sourcePlan{path: c.Path}, true
	}
	return nil, sourcePlan{}, false
}

// judgedEntryCost is what gathering an entry whose value is judged costs,
// in plain entries (see gatherRace.entryCost): decoding the value and
// evaluating the conjunct on it cost a few times reading the entry (0.36
// µs an entry for CONTAINS over 100,000 names, gathered alone). Priced as
// one entry, a conjunct most documents satisfy ("c.status != 'open'")
// gathered entries worth four or five times the few documents its first
// page reads; priced at four, about one and a half to two times, and one
// few satisfy costs about a third more than gathering alone.
const judgedEntryCost = 4

// entryTest judges a path condition on the values of index entries.
type entryTest struct {
	cond    *query.PathCondition
	valueAt int // where the value starts in an entry's key
	now     time.Time
	// The last value judged, and the verdict: entries of a value come
	// together.
	last   []byte
	passed bool
}

// passes reports whether the document of index entry k may satisfy the
// condition.
func (t *entryTest) passes(k []byte) bool {
	if len(k) < t.valueAt+9 {
		return true // the lookup meets whatever is wrong with it
	}
	enc := k[t.valueAt : len(k)-8]
	if t.last != nil && bytes.Equal(enc, t.last) {
		return t.passed
	}
	t.last, t.passed = append(t.last[:0], enc...), t.judge(enc)
	return t.passed
}

func (t *entryTest) judge(enc []byte) bool {
	v, exact, err := entryValue(enc, t.cond.Spelled)
	return err != nil || !exact || t.cond.Holds(v, true, t.now)
}
