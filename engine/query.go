package engine

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
	"github.com/lethe-db/lethe/ru"
)

// QueryOptions select one page of a query's results.
type QueryOptions struct {
	// Text is the SQL query.
	Text string
	// Params binds @parameters by name, without the '@'.
	Params map[string]jsonv.Value
	// PK restricts the query to one partition key value; nil queries every
	// partition. A prefix of a hierarchical key restricts it to that prefix.
	PK lethe.PartitionKey
	// MaxItems is the page size (0: the default of 100; at most 1000).
	MaxItems int
	// Continuation resumes the query after the previous page.
	Continuation string
	// IndexMetrics asks for the x-ms-cosmos-index-utilization report.
	IndexMetrics bool
	// Scope restricts the query to a partition key range or an effective
	// partition key range (SDKs that run query plans send one query per
	// range); the zero value reads every range.
	Scope Scope
	// ServeAll evaluates the query even when it is a cross-partition query
	// that Cosmos DB's gateway refuses, as Options.ServeAllCrossPartitionQueries
	// does for every request: for clients without a query pipeline.
	ServeAll bool
}

// QueryPage is one page of query results.
type QueryPage struct {
	// Rows are the JSON values of the page's rows.
	Rows [][]byte
	// Continuation resumes the query; "" when it is complete.
	Continuation string
	// Charge is the request charge: documents examined and rows returned.
	Charge float64
	// ContainerRID is the queried container's _rid ("" for resource queries).
	ContainerRID string
	// Examined counts the documents read to produce the page.
	Examined int
	// IndexMetrics is the index utilization report when it was asked for.
	IndexMetrics string
	// RangeIDs are the partition key ranges the query read, for its session
	// token.
	RangeIDs []string
}

// queryToken is a decoded query continuation. It binds the page to the
// container and to the query (its text but the WHERE condition, see
// query.ContinuationKey, and its parameters), and carries the keyset
// cursor of the last row returned, so a later page resumes after that row
// even if documents were written or expired in between.
type queryToken struct {
	RID     string `json:"rid,omitempty"`
	Query   uint64 `json:"q"`
	Cursor  []byte `json:"c"`
	Emitted int    `json:"n"`
}

// queryHash identifies a query by its text and parameters. Document queries
// hash their query.ContinuationKey, the text without the WHERE condition.
func queryHash(text string, params map[string]jsonv.Value) uint64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	if len(params) > 0 {
		b, _ := json.Marshal(paramsForHash(params)) // sorted by name
		h.Write(b)
	}
	return h.Sum64() | 1
}

func paramsForHash(params map[string]jsonv.Value) map[string]string {
	out := make(map[string]string, len(params))
	for k, v := range params {
		out[k] = string(jsonv.Marshal(v))
	}
	return out // encoding/json sorts map keys
}

func decodeQueryToken(s, rid string, qh uint64) (*queryToken, error) {
	if s == "" {
		return &queryToken{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	var tok queryToken
	if err != nil || json.Unmarshal(raw, &tok) != nil || tok.RID != rid || tok.Query != qh || tok.Emitted < 0 {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The continuation token is invalid, or belongs to another query or container.")
	}
	return &tok, nil
}

func encodeQueryToken(t queryToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseStatement(text string) (*query.Query, error) {
	q, err := query.Parse(text)
	if err != nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "Syntax error or unsupported query: %s", err.Error())
	}
	return q, nil
}

// queryWorkLimit bounds the bindings (documents, JOIN and IN elements,
// subquery rows) one query page may make, so a cross product of large arrays
// cannot occupy the server without end.
const queryWorkLimit = 20_000_000

func pageSize(n int) int {
	if n <= 0 {
		return defaultPage
	}
	return min(n, maxPage)
}

// QueryDocuments runs a query over a container's documents live at the
// request's instant and returns one page. Each page judges expiry at its own
// request's instant (one now per request): a query never returns a document
// expired when its page is served, and keyset continuations mean a document
// that expires between pages drops out without shifting later rows.
// Returns BadRequest (syntax, unsupported, parameters, continuation),
// NotFound (container).
func (e *Engine) QueryDocuments(ctx context.Context, dbID, collID string, opts QueryOptions) (QueryPage, error) {
	defer e.begin()()
	q, err := parseStatement(opts.Text)
	if err != nil {
		return QueryPage{}, err
	}
	now, precise, err := e.instant(ctx)
	if err != nil {
		return QueryPage{}, err
	}
	qh := queryHash(q.ContinuationKey(), opts.Params)
	var out QueryPage
	err = e.store.View(ctx, func(r kv.Reader) error {
		s, err := e.scope(r, dbID, collID, now)
		if err != nil {
			return err
		}
		if !e.opts.ServeAllCrossPartitionQueries && !opts.ServeAll && s.needsPlan(q, opts) {
			return crossPartitionRefused(q, opts.Params)
		}
		out, err = s.queryPage(r, q, qh, opts, precise, 0)
		return err
	})
	return out, err
}

// queryPage runs one page of q in scope s at the instant precise. Its source
// looks documents up lookAhead at a time; 0 means as many as a streamed page
// reads: its rows (no more than the query's TOP, or OFFSET plus LIMIT), and
// on a resumed page the previous page's last row again.
func (s *scope) queryPage(r kv.Reader, q *query.Query, qh uint64, opts QueryOptions, precise time.Time, lookAhead int) (QueryPage, error) {
	tok, err := decodeQueryToken(opts.Continuation, s.c.RID, qh)
	if err != nil {
		return QueryPage{}, err
	}
	if lookAhead == 0 {
		lookAhead = pageSize(opts.MaxItems)
		if bound := q.RowBound(opts.Params); bound >= 0 {
			lookAhead = min(lookAhead, max(bound, 1))
		}
		if tok.Cursor != nil {
			lookAhead++
		}
	}
	filter, ranges, err := s.filter(opts.PK, true, opts.Scope)
	if err != nil {
		return QueryPage{}, err
	}
	pkEq := s.pkEquality(opts.PK)
	part := s.partitionPlanOf(pkEq)
	first, undefined, resumesFirst := q.ResumeFirstKey(tok.Cursor)
	s.afterDefined = resumesFirst && !undefined
	src, plan := s.querySource(r, q, opts.Params, part, pkEq, filter, lookAhead)
	execute := func(src querySource, plan sourcePlan) (*query.Page, error) {
		if tok.Cursor != nil {
			if seq, ok := q.ResumeSeq(tok.Cursor); ok {
				src.seek(seq)
			} else if o, ok := src.(*orderedSource); ok {
				if resumesFirst {
					seq, tie := q.ResumeTieSeq(tok.Cursor)
					o.resume(first, undefined, seq, tie)
				}
			} else if k, ok := src.(*keysSource); ok {
				if keys, seq, ok := q.ResumeKeys(tok.Cursor); ok {
					k.resume(keys, seq)
				}
			}
		}
		return q.Execute(src, query.ExecOptions{
			Params: opts.Params, Now: precise, PageSize: pageSize(opts.MaxItems),
			After: tok.Cursor, Emitted: tok.Emitted, WorkLimit: queryWorkLimit,
			SortedKeys: plan.sorted, TiesInSeqOrder: plan.sorted > 0, Unordered: plan.sorted > 0 || plan.unordered, WhereHolds: plan.whereHolds,
			FirstRowDecides: plan.firstDecides,
		})
	}
	var page *query.Page
	var spent ru.Query // the work of abandoned attempts
	if o := s.budgeted(r, src, part, filter, lookAhead); o != nil {
		page, src, plan, spent, err = raceOrdered(o, plan, execute)
	} else {
		page, err = execute(src, plan)
	}
	if o, ok := src.(orderedRead); ok && errors.Is(err, errUnorderable) {
		// The index holds an object or array where the query orders: plan
		// again without reading in order, charging what was read.
		w, _ := o.work()
		w.IndexEntries = o.entriesRead()
		spent.Add(w)
		o.close()
		s.unordered = true
		src, plan = s.querySource(r, q, opts.Params, part, pkEq, filter, lookAhead)
		page, err = execute(src, plan)
	}
	defer src.close()
	if err != nil {
		return QueryPage{}, queryError(err)
	}
	work, err := src.work()
	if err != nil {
		return QueryPage{}, err
	}
	work.Add(spent)
	out := QueryPage{Rows: page.Rows, ContainerRID: s.c.RID, Examined: work.Documents, RangeIDs: ranges}
	if opts.IndexMetrics {
		out.IndexMetrics = indexMetrics(plan.path, plan.composite)
	}
	if page.More {
		out.Continuation = encodeQueryToken(queryToken{RID: s.c.RID, Query: qh, Cursor: page.Last, Emitted: page.Emitted})
	}
	for _, row := range page.Rows {
		work.BytesReturned += len(row)
	}
	out.Charge = work.Charge()
	return out, nil
}

// firstPlanBudget is the index entries an ORDER BY may read in the index's
// order before it first counts the list it races (see raceOrdered).
const firstPlanBudget = 256

// budgeted returns, for a query scoped to a partition whose list is part
// (see partitionPlan; nil for none) and whose source reads an ORDER BY in
// index order, the source with a budget against the partition's list (see
// raceOrdered); the source as it is when it already races an equality's
// list (see orderedOverEquality); nil when the source is not such a plan.
func (s *scope) budgeted(r kv.Reader, src querySource, part *indexPlan, filter *docFilter, lookAhead int) *orderedSource {
	x, ok := src.(*orderedSource)
	if !ok {
		return nil
	}
	if x.budget > 0 {
		return x // it races an equality's list
	}
	if part == nil || x.plan.composite() || slices.Equal(part.spec.path, x.plan.path) {
		return nil // a composite index fixes the partition: its read is a page
	}
	x.budget, x.alt, x.altCost = firstPlanBudget, part.ranges, raceLookupCost
	x.altSource = func() (querySource, sourcePlan) {
		return s.indexSource(r, part, filter, lookAhead), sourcePlan{path: x.plan.path}
	}
	return x
}

// raceOrdered runs a page of an ORDER BY that the index serves in order,
// racing a list that holds every document the query may return: the
// partition's, when the query is scoped to one, or an equality's (see
// orderedOverEquality). The index yields documents in order, so a page
// usually reads a page, but the documents the query wants may lie far down
// the index, among every other partition's or every document the equality
// rules out, while the list is short enough to read whole and sort. Each
// time the ordered read has used its budget of entries, it counts the
// list's, up to what the budget would pay for reading them instead, and
// gives up for the list when they are all counted; else it goes on with four
// times the budget. The work is a small multiple of the cheaper way, and the
// work of the abandoned read is charged.
func raceOrdered(o *orderedSource, plan sourcePlan, execute func(querySource, sourcePlan) (*query.Page, error)) (*query.Page, querySource, sourcePlan, ru.Query, error) {
	page, err := execute(o, plan)
	if !errors.Is(err, errOverBudget) {
		return page, o, plan, ru.Query{}, err
	}
	// Every entry the abandoned read read is charged, not only those of the
	// documents it took.
	spent, _ := o.work()
	spent.IndexEntries = o.entriesRead()
	o.close()
	src, p := o.altSource()
	page, err = execute(src, p)
	return page, src, p, spent, err
}

// countRanges counts the entries of ranges in filter, reading at most max+1
// of them: complete reports that the ranges held at most max. read is the
// entries read.
func countRanges(r kv.Reader, ranges []keyRange, filter *docFilter, max int) (read int, complete bool, err error) {
	in := 0
	if filter == nil { // every entry is in: the store may count them where they are
		for _, kr := range ranges {
			n, err := kv.Count(r, kr.start, kr.end, int64(max-in))
			if err != nil {
				return read, false, err
			}
			read += int(n)
			if in += int(n); in > max {
				return read, false, nil
			}
		}
		return read, true, nil
	}
	for _, kr := range ranges {
		it := r.Scan(kr.start, kr.end, false)
		for in <= max && it.Next() {
			read++
			if filter.match(it.Value()) {
				in++
			}
		}
		if err := it.Close(); err != nil {
			return read, false, err
		}
		if in > max {
			return read, false, nil
		}
	}
	return read, true, nil
}

// pkScope returns the key prefix of the documents a request's partition key
// selects: nil for every partition, the whole key's tuple, or (allowPrefix,
// hierarchical keys) the tuple of a prefix of it.
func (s *scope) pkScope(pk lethe.PartitionKey, allowPrefix bool) ([]byte, error) {
	if pk == nil {
		return nil, nil
	}
	if len(pk) == 0 || !allowPrefix {
		var err error
		if pk, err = normalizePK(pk, s.c.PKPaths); err != nil {
			return nil, err
		}
	}
	if len(pk) > len(s.c.PKPaths) {
		return nil, pkMismatch()
	}
	return appendTuple(nil, pk), nil
}

// querySource is planSource, with the source set to parse only the paths
// the query reads when it reads nothing else of its documents
// (query.Query.ReadPaths). Every source below gives each document's stored
// JSON as Raw, which a SELECT * returns.
func (s *scope) querySource(r kv.Reader, q *query.Query, params map[string]jsonv.Value, part *indexPlan, pk *filterSpec, filter *docFilter, lookAhead int) (querySource, sourcePlan) {
	src, sp := s.planSource(r, q, params, part, pk, filter, lookAhead)
	var target *[][]string // what the source parses by, if it parses documents
	switch x := src.(type) {
	case *pathOnlySource: // yields such objects already
	case *keyOrderScan:
		target = &x.paths
	case interface{ reader() *docReader }:
		if d := x.reader(); !d.rawOnly && !d.countOnly && d.keyPath == nil {
			target = &d.paths
		}
	}
	if target != nil {
		if paths, _, ok := q.ReadPaths(params); ok {
			*target = paths
		}
	}
	return src, sp
}

// planSource picks how a query reads the container: a composite index that
// yields its ORDER BY's order (see planComposite), an index plan when the
// index is usable and a WHERE conjunct can use it, else a scan in insertion
// order. Partition scoping (a full key or a hierarchical prefix) applies
// either way; pk is the equality the request's partition key implies, or
// nil.
func (s *scope) planSource(r kv.Reader, q *query.Query, params map[string]jsonv.Value, part *indexPlan, pk *filterSpec, filter *docFilter, lookAhead int) (querySource, sourcePlan) {
	h := q.Hints(params)
	if s.c.indexUsable() {
		filters := filtersFromHints(h)
		// MIN or MAX of an indexed path: its first document in the path's
		// order that passes WHERE decides.
		if path, max, ok := q.MinMaxPath(); ok && !s.unordered {
			if src, sp, ok := s.minMaxSource(r, q, h, filters, path, max, part, filter, lookAhead); ok {
				return src, sp
			}
		}
		// A query that looks at one path only reads its index entries.
		if src, sp, ok := s.pathOnlySource(r, q, params, h, filters, part, filter, lookAhead); ok {
			return src, sp
		}
		// A composite index reads about a page, where an equality reads
		// every document it selects to sort them.
		if cp, ok := s.planComposite(r, h, filters, pk); ok && !s.unordered {
			src := s.orderedSource(r, cp, part, filter, lookAhead)
			return src, src.keyOnly(q, sourcePlan{path: cp.path, sorted: 1, composite: cp.specs})
		}
		if kp, ok := s.planKeys(r, h, filters, pk, part); ok && !s.unordered {
			sp := sourcePlan{path: kp.paths[0], sorted: len(kp.paths), composite: kp.specs}
			sp.whereHolds = !q.Filters() || kp.whereExact
			return s.keysSource(r, kp, filter, lookAhead), sp
		}
		plan, usable := s.planIndex(filters)
		// An equality or IN lookup is usually narrower than reading in order.
		if usable && plan.spec.kind <= filterIn {
			src, sp := s.equalitySource(r, q, h, plan, filters, part, filter, lookAhead)
			if o := s.orderedOverEquality(r, h, filters, plan, src, sp, part, filter, lookAhead); o != nil {
				return o, sourcePlan{path: o.plan.path, sorted: 1}
			}
			return src, sp
		}
		if op, ok := s.planOrdered(r, h, filters, part, true); ok && !s.unordered {
			src := s.orderedSource(r, op, part, filter, lookAhead)
			return src, src.keyOnly(q, sourcePlan{path: op.path, sorted: 1})
		}
		if usable {
			src := s.indexSource(r, plan, filter, lookAhead)
			switch {
			case part == nil:
				src.gr = newScanRace(r, s.rid)
			case !slices.Equal(part.spec.path, plan.spec.path):
				src.gr = newGatherRace(r, part.ranges[0])
			}
			return src, sourcePlan{path: plan.spec.path}
		}
		// A conjunct no range serves may still be judged on the entries.
		if src, sp, ok := s.conditionSource(r, q, params, part, filter, lookAhead); ok {
			return src, sp
		}
	}
	// A query that reads every document in any order reads them in the
	// order of their keys, but for a count without WHERE, which counts
	// the documents' entries.
	if q.Filters() || !q.ReadsNoDocument() {
		if src, ok := s.keyOrderSource(r, h, filter); ok {
			return src, sourcePlan{unordered: true}
		}
	}
	// A count of a whole container without WHERE is its tallies'.
	if !q.Filters() && q.ReadsNoDocument() && part == nil && filter == nil {
		if src, ok := s.liveCount(r); ok {
			return src, sourcePlan{whereHolds: true}
		}
	}
	// SELECT * without WHERE returns every document's stored JSON unparsed;
	// a count without WHERE counts the documents without parsing them.
	rawOnly := !q.Filters() && (q.ReadsOnlyRaw() || q.ReadsNoDocument())
	src := s.inOrder(r, part, filter, lookAhead, rawOnly)
	if !q.Filters() && q.ReadsNoDocument() {
		s.countWithoutLookups(r, src.reader())
	}
	src.seek(0)
	return src, sourcePlan{whereHolds: rawOnly}
}

// equalitySource returns the source of plan, an equality or IN lookup, and
// how it reads: in a race with the lists of the query's other equalities
// and of the partition, if any (see equalityRace).
func (s *scope) equalitySource(r kv.Reader, q *query.Query, h query.Hints, plan *indexPlan, filters []filterSpec, part *indexPlan, filter *docFilter, lookAhead int) (*indexSource, sourcePlan) {
	src := s.indexSource(r, plan, filter, lookAhead)
	sp := sourcePlan{path: plan.spec.path}
	if src.race = s.equalityRace(r, plan, filters, part, filter); src.race != nil {
		return src, sp // a candidate from another list needs WHERE
	}
	// A WHERE that is this one lookup, over values the index holds exactly,
	// holds for every document it yields: SELECT * then returns their
	// stored JSON without parsing it, and a count counts them without
	// parsing them.
	if h.Conjuncts == 1 && len(h.Where) == 1 && exactLookup(plan.spec) {
		sp.whereHolds = true
		if q.ReadsOnlyRaw() || q.ReadsNoDocument() {
			src.rawOnly = true
		}
		if q.ReadsNoDocument() {
			s.countWithoutLookups(r, &src.docReader)
		}
	}
	return src, sp
}

// orderedOverEquality returns, for a query that orders by an indexed path
// and whose WHERE has an equality or IN, plan, the source that reads the
// ORDER BY's index in order and races plan's list (see raceOrdered): with
// "WHERE c.status = 'open' ORDER BY c._ts DESC" the equality may select a
// quarter of a large container, every document of which it would read and
// sort, where the ordered read finds a page after about four pages of
// entries. A list of at most raceFirstBudget documents is read and sorted
// without a race: "WHERE c.id = @id ORDER BY c._ts" reads one entry. Nil
// when the list is that short, or the query does not order by an indexed
// path, or it is scoped to a partition or holds other equalities (their
// races pick the shortest list), or the race is already lost (s.unordered).
// src and sp are plan's source and how it reads (equalitySource), which the
// race falls back to.
func (s *scope) orderedOverEquality(r kv.Reader, h query.Hints, filters []filterSpec, plan *indexPlan, src *indexSource, sp sourcePlan,
	part *indexPlan, filter *docFilter, lookAhead int) *orderedSource {
	if part != nil || src.race != nil || s.unordered {
		return nil
	}
	// No head: a read that must first find the documents without the key
	// walks the container's insertion order, where the equality's list is
	// at hand.
	op, ok := s.planOrdered(r, h, filters, part, false)
	if !ok {
		return nil
	}
	o := s.orderedSource(r, op, part, filter, lookAhead)
	if op.spec != nil && slices.Equal(op.spec.path, plan.spec.path) {
		return o // the ordered read reads the equality's own entries
	}
	if !raceList(r, o, plan, src, sp, filter) {
		return nil
	}
	return o
}

// raceList sets o, a read in order, to race plan's list, an equality's or
// IN's, which src reads as sp says (see raceOrdered); false, leaving o as
// it was, when the list holds at most raceFirstBudget documents, which are
// then best read at once (or reading it fails: reading it again fails too).
func raceList(r kv.Reader, o *orderedSource, plan *indexPlan, src querySource, sp sourcePlan, filter *docFilter) bool {
	read, short, err := countRanges(r, plan.ranges, filter, raceFirstBudget)
	if err != nil || short {
		return false
	}
	o.scanned = read // charged with the read, should the race abandon it
	o.budget, o.alt, o.altCost = firstPlanBudget, plan.ranges, 1
	o.altSource = func() (querySource, sourcePlan) { return src, sp }
	return true
}

// minMaxSource returns the source of a query whose aggregates are MIN, or
// MAX, of path (query.Query.MinMaxPath): the read in the path's order
// whose first row that passes WHERE decides (planMinMax), racing the list
// of an equality or IN on another path when WHERE has one ("MIN(c.t) WHERE
// c.status = 'open'"; a short list is read at once, as are the lists of a
// partition's equality race). False when the index cannot serve it.
func (s *scope) minMaxSource(r kv.Reader, q *query.Query, h query.Hints, filters []filterSpec, path []string, max bool,
	part *indexPlan, filter *docFilter, lookAhead int) (querySource, sourcePlan, bool) {
	op := s.planMinMax(r, path, max, filters)
	if op == nil {
		return nil, sourcePlan{}, false
	}
	o := s.orderedSource(r, op, part, filter, lookAhead)
	sp := sourcePlan{path: path, firstDecides: true}
	eq, usable := s.planIndex(filters)
	if !usable || eq.spec.kind > filterIn || slices.Equal(eq.spec.path, path) {
		return o, sp, true
	}
	src, esp := s.equalitySource(r, q, h, eq, filters, part, filter, lookAhead)
	if part != nil || src.race != nil || !raceList(r, o, eq, src, esp, filter) {
		return src, esp, true
	}
	return o, sp, true
}

// inOrder returns the source of the documents in filter in insertion order,
// which reads nothing until it is sought: a partition's documents through
// its list part (see partitionPlan) when there is one, else a scan of the
// container's documents. rawOnly: the executor reads only Raw, so documents
// are not parsed.
func (s *scope) inOrder(r kv.Reader, part *indexPlan, filter *docFilter, lookAhead int, rawOnly bool) recordSource {
	if part != nil {
		src := s.indexSource(r, part, filter, lookAhead)
		src.rawOnly = rawOnly
		// With one key path whose value the index holds whole, the
		// partition's list holds its documents and no other's.
		src.partitionOnly = len(s.c.PKPaths) == 1 && filter != nil && !filter.epk && exactLookup(part.spec)
		return src
	}
	src := &docSource{docReader: newDocReader(s, r, lookAhead), filter: filter}
	src.rawOnly = rawOnly
	return src
}

// maxRaceLists bounds the lists an equalityRace reads in turns: the race
// costs about the cheapest list times their number.
const maxRaceLists = 4

// equalityRace returns the race (see equalityRace) between plan, an
// equality or IN, and the index lists of the other equalities and INs among
// filters on indexed paths, and of the partition, part, when the query is
// scoped to one (nil otherwise); nil when there is no other list.
func (s *scope) equalityRace(r kv.Reader, plan *indexPlan, filters []filterSpec, part *indexPlan, filter *docFilter) *equalityRace {
	var paths [][]string
	var lists [][]keyRange
	add := func(p *indexPlan, ok bool) {
		if !ok || len(lists) == maxRaceLists || p.spec.kind > filterIn ||
			slices.ContainsFunc(paths, func(q []string) bool { return slices.Equal(q, p.spec.path) }) {
			return
		}
		paths = append(paths, p.spec.path)
		lists = append(lists, p.ranges)
	}
	add(plan, true)
	add(part, part != nil)
	for _, f := range filters {
		if f.kind <= filterIn {
			add(s.planIndex([]filterSpec{f}))
		}
	}
	if len(lists) < 2 {
		return nil
	}
	return newEqualityRace(r, lists, filter)
}

// partitionPlan returns an equality plan on the container's first partition
// key path for the value pk gives it, when the index holds that path. Its
// entries are in sequence order, so the documents of one partition stream in
// insertion order, as a scan yields them, but a page reads about a page of
// entries where a scan reads the entry of every document of every partition
// before and between them. The scope's filter still decides which candidates
// belong (a cut string, the rest of a hierarchical key). Nil when pk is nil
// or its first component undefined (documents without the path have no
// entry), or when the index leaves the path out.
func (s *scope) partitionPlan(pk lethe.PartitionKey) *indexPlan {
	return s.partitionPlanOf(s.pkEquality(pk))
}

// partitionPlanOf is partitionPlan for the equality eq a partition key
// implies (pkEquality; nil for none).
func (s *scope) partitionPlanOf(eq *filterSpec) *indexPlan {
	if eq == nil || !s.c.indexUsable() {
		return nil
	}
	plan, _ := s.planIndex([]filterSpec{*eq})
	return plan // nil when not usable
}

// pkEquality returns the equality on the first partition key path that a
// request's partition key pk implies for every document it selects, or nil
// when it implies none (no key, or the key of documents without the path).
func (s *scope) pkEquality(pk lethe.PartitionKey) *filterSpec {
	if len(pk) == 0 {
		return nil
	}
	var v jsonv.Value
	switch x := pk[0].(type) {
	case nil, bool, string:
		v = x
	case float64:
		v = jsonv.NumberFromFloat(x)
	default:
		return nil
	}
	path, err := splitPath(s.c.PKPaths[0])
	if err != nil {
		return nil
	}
	return &filterSpec{path: path, kind: filterEq, values: []jsonv.Value{v}}
}

// sourcePlan says how a query reads its container: the indexed path it uses
// (nil for a scan), in the order of how many ORDER BY keys documents come,
// and whether every document it yields satisfies the WHERE clause.
type sourcePlan struct {
	path      []string
	composite []string // the composite index read, as index metrics name it
	// sorted: documents come in the order of the first sorted ORDER BY
	// keys, ties in ascending seq (query.ExecOptions.SortedKeys); 0 for no
	// order.
	sorted     int
	whereHolds bool
	// firstDecides: the source yields documents in the order in which the
	// first row decides MIN or MAX (query.ExecOptions.FirstRowDecides).
	firstDecides bool
	// unordered: the source yields documents in no particular order (see
	// pathOnlySource).
	unordered bool
}

// exactLookup reports whether an equality or IN filter selects through the
// index exactly the documents it matches: its values are null, booleans,
// numbers or strings too short to have been cut (a cut string's key may equal
// a shorter string's). A number's key is its float64 value, and = compares
// numbers as float64 values too (jsonv.Equal), so two numbers share a key
// exactly when they are equal: 5, 5.0 and 5e0; 0 and -0; two integers beyond
// 2^53 that round to the same float64.
func exactLookup(f filterSpec) bool {
	if f.kind != filterEq && f.kind != filterIn || f.element {
		return false
	}
	for _, v := range f.values {
		switch v := v.(type) {
		case nil, bool, jsonv.Number:
		case string:
			if len(v) > maxIndexedString-utf8.UTFMax {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// queryError turns an execution failure into a BadRequest: the query, not the
// server, is at fault (a missing parameter, a type the language refuses).
func queryError(err error) error {
	if errors.Is(err, query.ErrWorkLimit) {
		return lethe.Errorf(lethe.CodeBadRequest, "The query needs more work than one request may do (JOIN or IN over large arrays, or correlated subqueries); narrow it with a filter or a partition key.")
	}
	if lethe.ErrorCode(err) != lethe.CodeInternal {
		return err
	}
	return lethe.Errorf(lethe.CodeBadRequest, "The query could not be executed: %s", err.Error())
}

// docSource yields a container's live documents in insertion order, optionally
// within one partition key (or hierarchical key prefix). It implements
// query.Source and hands out each document's stored JSON for SELECT *.
// Documents are looked up ahead of the executor (see lookAhead).
type docSource struct {
	docReader
	it      kv.Iterator
	filter  *docFilter
	scanned int // insertion-order entries visited
}

// seek restarts the scan at the document with sequence number seq.
func (d *docSource) seek(seq uint64) {
	if d.it != nil {
		d.it.Close()
	}
	d.look.reset()
	d.it = d.r.Scan(orderKey(d.s.rid, seq), kv.PrefixEnd(collKey(pfxOrder, d.s.rid)), false)
}

func (d *docSource) close() {
	if d.it != nil {
		d.it.Close()
	}
}

// next implements candidates: the next insertion-order entry in scope.
func (d *docSource) next() (candidate, bool, error) {
	for d.it.Next() {
		d.scanned++
		k := d.it.Key()
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		suffix, _, _, err := decodeOrderValue(d.it.Value(), nil)
		if err != nil {
			return candidate{}, false, err
		}
		if d.filter.match(suffix) {
			return candidate{seq, suffix}, true, nil
		}
	}
	return candidate{}, false, d.it.Err()
}

// entriesRead implements candidates.
func (d *docSource) entriesRead() int { return d.scanned }

// nextRecord returns the next live document record in scope, in insertion
// order, without parsing it. This is the one scan of a container's live
// documents that read feeds and queries share.
func (d *docSource) nextRecord() (*docRecord, uint64, bool, error) { return d.record(d) }

// Next implements query.Source.
func (d *docSource) Next() (*jsonv.Object, uint64, bool, error) { return d.parsed(d) }

// Skip implements query.Skipper.
func (d *docSource) Skip(n, then int) (int, error) {
	if d.it == nil {
		return 0, nil
	}
	return d.skip(d, n, then)
}

// sliceSource yields resources (databases, containers, offers) for queries
// over feeds other than documents.
type sliceSource struct {
	items [][]byte
	i     int
	raw   []byte
}

func (s *sliceSource) Next() (*jsonv.Object, uint64, bool, error) {
	if s.i >= len(s.items) {
		return nil, 0, false, nil
	}
	b := s.items[s.i]
	s.i++
	o, err := jsonv.ParseStoredObject(b)
	if err != nil {
		return nil, 0, false, err
	}
	s.raw = b
	return o, uint64(s.i), true, nil
}

// Raw returns the resource body taken last: one of the items the source
// was given, which nothing modifies (query.Source).
func (s *sliceSource) Raw() []byte { return s.raw }

// QueryResources runs a query over a list of resource bodies (the databases
// feed, a database's containers, the offers) and returns one page.
func (e *Engine) QueryResources(ctx context.Context, items [][]byte, opts QueryOptions) (QueryPage, error) {
	q, err := parseStatement(opts.Text)
	if err != nil {
		return QueryPage{}, err
	}
	_, precise, err := e.instant(ctx)
	if err != nil {
		return QueryPage{}, err
	}
	qh := queryHash(opts.Text, opts.Params)
	tok, err := decodeQueryToken(opts.Continuation, "", qh)
	if err != nil {
		return QueryPage{}, err
	}
	src := &sliceSource{items: items}
	page, err := q.Execute(src, query.ExecOptions{
		Params: opts.Params, Now: precise, PageSize: pageSize(opts.MaxItems),
		After: tok.Cursor, Emitted: tok.Emitted, WorkLimit: queryWorkLimit,
	})
	if err != nil {
		return QueryPage{}, queryError(err)
	}
	out := QueryPage{Rows: page.Rows, Examined: page.Examined, Charge: ru.Round(ru.Metadata + float64(len(items))*0.01)}
	if page.More {
		out.Continuation = encodeQueryToken(queryToken{Query: qh, Cursor: page.Last, Emitted: page.Emitted})
	}
	return out, nil
}
