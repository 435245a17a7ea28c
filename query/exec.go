package query

// This file is the contract between the query package and the engine that
// feeds it documents. The engine owns storage, liveness (time to live),
// partition scoping, index selection and continuation tokens; this package
// owns the language: it parses statements, evaluates them over the documents
// a Source yields, and orders, groups, aggregates and pages the results.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// Query is a parsed SELECT statement. It is immutable and safe for concurrent use.
//
//	q, err := query.Parse("SELECT c.id FROM c WHERE c.n > @min ORDER BY c.n")
//	if err != nil {
//		return lethe.Errorf(lethe.CodeBadRequest, "query: %s", err)
//	}
//	page, err := q.Execute(src, query.ExecOptions{Params: params, PageSize: 100, Now: now})
//	// ... return page.Rows; resume with After: page.Last, Emitted: page.Emitted
type Query struct {
	src  string
	stmt *selectStmt
	// params lists every parameter reference, so Execute can name a missing
	// one before reading anything.
	params []*Param
}

// Source yields the documents a query runs over: every document of the scope
// that is live at the query's instant, in ascending sequence (insertion) order
// unless ExecOptions.Unordered says otherwise.
//
// If a Source also implements interface{ Raw() []byte }, Raw returns the JSON
// text of the document Next returned last (nil if it has none at hand);
// SELECT * over whole documents returns that text instead of re-encoding
// the document. The text is handed out in the page's rows as it is, without
// a copy: it must never be modified once returned.
type Source interface {
	// Next returns the next document and its sequence number, or ok == false
	// at the end. The document must not be modified, and must stay unmodified
	// until Execute returns: sorting and grouping plans keep references.
	Next() (doc *jsonv.Object, seq uint64, ok bool, err error)
}

// Skipper is a Source that can pass over its next documents without
// producing them. Execute asks it to when the rows OFFSET skips are exactly
// the source's next documents, one row each, that no later stage looks at:
// WHERE answered by the source (ExecOptions.WhereHolds) or absent, a select
// list that makes a row of every document, and the source's own order the
// rows' (insertion order, or every ORDER BY key with ties in seq order). An
// engine whose index answers the query then counts index entries instead of
// reading the documents a deep OFFSET skips.
type Skipper interface {
	// Skip passes over up to n of the documents Next would yield next, and
	// returns how many it passed over: fewer than n at the end, or when it
	// cannot tell more without reading them (Next then yields the rest).
	// then is how many documents Execute expects to read after them, for a
	// source that reads ahead. Execute calls it at most once, before the
	// first Next.
	Skip(n, then int) (int, error)
}

// ExecOptions parameterise one page of execution.
type ExecOptions struct {
	// Params binds @parameters by name without the '@'.
	Params map[string]jsonv.Value
	// Now is the query's instant, for the date and time functions.
	Now time.Time
	// PageSize is the most rows to return (> 0).
	PageSize int
	// After resumes after the row at this position; nil starts at the beginning.
	After Cursor
	// Emitted is the number of rows earlier pages returned, for OFFSET, LIMIT and TOP.
	Emitted int
	// Unordered says the source yields documents in no particular order (an
	// index range scan, say) instead of ascending seq. Streaming queries then
	// read the whole source and keep the first rows by (seq, ordinal) in a
	// bounded heap, instead of stopping once the page is full.
	Unordered bool
	// SortedKeys says the source yields documents in the order of the
	// query's first SortedKeys ORDER BY keys, each in its direction (as
	// encoded by the cursor order: undefined < null < false < true < number
	// < string < array < object, numbers by value, strings by their bytes),
	// ties in any order; 0 says nothing of the order. An ORDER BY query then
	// stops reading once no later document can enter the page: the cost
	// follows the rows returned, not the source's size. The engine sets it
	// when an index supplies that order: a path index the first key's, a
	// composite index as many keys as it has paths after those its
	// equalities fix. Ignored by other plans.
	SortedKeys int
	// TiesInSeqOrder, with SortedKeys, says the documents sharing their
	// first SortedKeys ORDER BY keys come in ascending seq. When those are
	// every key and a document has one row (no JOIN, no FROM ... IN), rows
	// then come in the page's own order, and a page stops at its last row
	// instead of reading every document that shares that row's keys: a
	// partition's newest documents, written in the same second as hundreds
	// of others, cost a page.
	TiesInSeqOrder bool
	// FirstRowDecides says the documents come in the order of the path
	// MinMaxPath names, ascending for MIN and descending for MAX, with equal
	// values in ascending seq: the first row that passes WHERE then decides
	// every aggregate, and Execute reads no further.
	FirstRowDecides bool
	// WhereHolds says every document the source yields satisfies the
	// top-level WHERE clause (the engine's index answers it exactly), which
	// Execute then does not evaluate; ignored for queries with JOIN or
	// FROM ... IN, whose WHERE judges rows, not documents. With ReadsOnlyRaw,
	// the documents themselves are never looked at either.
	WhereHolds bool
	// WorkLimit caps the bindings the FROM and JOIN clauses may make in this
	// call: each document, each array element of IN or JOIN, each row of a
	// JOIN subquery, in subqueries too, whether WHERE keeps the row or not.
	// Past it Execute fails with ErrWorkLimit. It bounds the cost of cross
	// products and correlated subqueries. Zero means no limit.
	WorkLimit int
}

// Cursor is a result row's place in the query's total order, opaque to the
// engine, which stores it in continuation tokens. Positions compare bytewise.
// Its encoding is described in cursor.go.
type Cursor []byte

// Page is one page of results.
type Page struct {
	// Rows are the JSON values of the page's rows.
	Rows [][]byte
	// Last is the position of the last row; resume with ExecOptions.After = Last.
	Last Cursor
	// Emitted counts the rows returned by this page and every earlier one.
	Emitted int
	// More reports whether a later page may hold rows: true when a later row
	// was seen, and for streaming queries (no ORDER BY, aggregate, GROUP BY
	// or DISTINCT) whenever the page is full, unless LIMIT or TOP is reached.
	More bool
	// Examined counts the documents read from the source, for request charges.
	Examined int
}

var (
	// ErrBadCursor is returned for an ExecOptions.After that no page of this
	// query could have returned.
	ErrBadCursor = errors.New("query: continuation does not belong to this query")
	// ErrWorkLimit is returned when a call exceeds ExecOptions.WorkLimit.
	ErrWorkLimit = errors.New("query: work limit exceeded")
)

// Execute runs the query over src and returns one page: at most
// opts.PageSize rows after opts.After in the query's total order, with OFFSET,
// LIMIT and TOP applied across pages through opts.Emitted.
//
// Every row has a place in a total order, and Last holds the last one's, so
// paging is keyset-based: a later page never skips a row that is still
// present and ordered after the previous page's last row, whatever was
// written or expired in between. The order is (seq, ordinal) for streaming
// queries, the ORDER BY keys then (seq, ordinal), the GROUP BY key, or the
// row's encoding for DISTINCT.
//
// Errors: an *Error for a problem with the query's inputs (a missing
// parameter, a TOP that is not a count), ErrBadCursor, ErrWorkLimit, or the
// source's error wrapped.
func (q *Query) Execute(src Source, opts ExecOptions) (*Page, error) {
	if opts.PageSize <= 0 {
		return nil, fmt.Errorf("query: page size %d is not positive", opts.PageSize)
	}
	for _, p := range q.params {
		if _, ok := opts.Params[p.Name]; !ok {
			return nil, &Error{Pos: PositionFor(q.src, p.At), Msg: "parameter @" + p.Name + " has no value"}
		}
	}
	s := q.stmt
	kind := s.cursorKind()
	var after []byte
	if opts.After != nil {
		if len(opts.After) == 0 || opts.After[0] != kind || kind == cursorStream && len(opts.After) != 17 {
			return nil, ErrBadCursor
		}
		after = opts.After[1:]
	}
	env := &Env{Vars: make(map[string]jsonv.Value, len(s.aliases)+1), Params: opts.Params, Source: q.src, Now: opts.Now}
	ex := &executor{s: s, ev: evaluator{env: env, ownsVars: true}, top: true,
		whereHolds: opts.WhereHolds && s.From != nil && !s.From.In && len(s.Joins) == 0}
	if opts.WorkLimit > 0 {
		ex.ev.work = &workCounter{left: int64(opts.WorkLimit)}
	}
	limit, offset, err := ex.bounds()
	if err != nil {
		return nil, err
	}
	page := &Page{Emitted: opts.Emitted}
	want := opts.PageSize
	if limit >= 0 {
		if left := limit - opts.Emitted; left <= want {
			want = left
		}
		if want <= 0 {
			return page, nil
		}
	}
	skip := 0
	if after == nil {
		skip = offset
	}
	var in input = &onceInput{}
	var si *sourceInput
	if s.From != nil {
		si = &sourceInput{src: src}
		in = si
		if _, whole := s.From.X.(*Ident); whole && s.Star {
			if r, ok := src.(interface{ Raw() []byte }); ok {
				ex.raw = r.Raw
			}
		}
	}
	if skip > 0 && si != nil && ex.skipsWholeDocuments(opts) {
		if sk, ok := src.(Skipper); ok {
			then := want // a streaming run stops at its last row
			if s.plan != planStream {
				then++ // a sorting run reads one more, to know the page is full
			}
			n, err := sk.Skip(skip, then)
			if err != nil {
				return nil, fmt.Errorf("read documents: %w", err)
			}
			skip -= n
			si.examined += n
		}
	}
	rows, more, err := ex.run(in, runOpts{after: after, skip: skip, want: want, ordered: !opts.Unordered, sortedKeys: opts.SortedKeys, tiesBySeq: opts.TiesInSeqOrder, firstDecides: opts.FirstRowDecides})
	if si != nil {
		page.Examined = si.examined
	}
	if err != nil {
		return nil, err
	}
	page.Rows = make([][]byte, len(rows))
	var buf []byte // encode in one growing buffer, then copy out exactly
	for i, r := range rows {
		if r.raw != nil {
			page.Rows[i] = r.raw
			continue
		}
		buf = jsonv.Append(buf[:0], r.val)
		page.Rows[i] = bytes.Clone(buf)
	}
	if n := len(rows); n > 0 {
		last := rows[n-1]
		if kind == cursorStream {
			page.Last = appendSeqOrd([]byte{kind}, last.seq, last.ord)
			if last.pos != nil { // an unordered source: the position is (seq, ordinal) already
				page.Last = append([]byte{kind}, last.pos...)
			}
		} else {
			page.Last = append([]byte{kind}, last.pos...)
		}
	}
	page.Emitted += len(rows)
	// A full page of a streaming query promises more even when nothing
	// follows, as Cosmos DB does (its document scan never looks ahead): the
	// next page is then empty and final, and clients count the same pages as
	// against Cosmos DB. Its ORDER BY, aggregate and DISTINCT queries do know
	// their end, and so do these.
	if kind == cursorStream && len(rows) == want {
		more = true
	}
	page.More = more && (limit < 0 || page.Emitted < limit)
	return page, nil
}

// skipsWholeDocuments reports whether the first rows OFFSET skips are the
// source's first documents, one row each, so that a Skipper may pass over
// them unread: the top-level statement over whole documents (no JOIN, no
// FROM ... IN), whose WHERE the source answers (or that has none), whose
// select list makes a row of every document (SELECT *, or a list of
// members, which is an object even when every member is undefined; not
// SELECT VALUE, which makes no row where it is undefined, nor a list with
// a subquery, whose work counts against the limit), and whose rows come in
// the source's order: a streaming statement over a source in insertion
// order, or an ORDER BY whose every key the source is sorted by, ties in
// seq order.
func (ex *executor) skipsWholeDocuments(opts ExecOptions) bool {
	s := ex.s
	if !ex.top || !s.oneRowPerDocument() || s.Where != nil && !ex.whereHolds {
		return false
	}
	if _, whole := s.From.X.(*Ident); !whole || s.Value || !s.Star && s.hasSubquery() {
		return false
	}
	switch s.plan {
	case planStream:
		return !opts.Unordered
	case planOrder:
		return opts.SortedKeys >= len(s.OrderBy) && opts.TiesInSeqOrder
	}
	return false
}

// hasSubquery reports whether the select list holds a subquery.
func (s *selectStmt) hasSubquery() bool {
	return s.itemsHold(func(x Expr) bool {
		_, ok := x.(*SubqueryExpr)
		return ok
	})
}

// itemsHold reports whether an expression of the select list holds an
// expression that is reports true for.
func (s *selectStmt) itemsHold(is func(Expr) bool) bool {
	found := false
	for _, it := range s.Items {
		Inspect(it.X, func(x Expr) bool {
			found = found || is(x)
			return !found
		})
	}
	return found
}

// ReadsOnlyRaw reports whether the query returns each document's stored
// JSON as it is (SELECT * over the whole document, no JOIN, in source order)
// so that, executed with ExecOptions.WhereHolds over a source with Raw, it
// never looks into the documents: the source may then yield a placeholder
// for each document (any non-nil object) with Raw returning its JSON.
func (q *Query) ReadsOnlyRaw() bool {
	s := q.stmt
	if s.plan != planStream || s.From == nil || !s.Star || s.From.In || len(s.Joins) > 0 {
		return false
	}
	_, whole := s.From.X.(*Ident)
	return whole
}

// ReadsNoDocument reports whether the query never looks into the documents
// it reads: an aggregate over whole documents (no GROUP BY, ORDER BY, JOIN
// or FROM ... IN) whose select list refers to none of them, such as SELECT
// VALUE COUNT(1) FROM c. Executed without WHERE or with
// ExecOptions.WhereHolds, it only counts the documents its source yields,
// so the source may yield a placeholder for each (any non-nil object).
func (q *Query) ReadsNoDocument() bool { return q.stmt.readsNoDocument() }

func (s *selectStmt) readsNoDocument() bool {
	if s.plan != planAggregate || s.From == nil || s.From.In || len(s.Joins) > 0 || s.Star || len(s.OrderBy) > 0 {
		return false
	}
	if _, whole := s.From.X.(*Ident); !whole {
		return false
	}
	for _, it := range s.Items {
		refers := false
		Inspect(it.X, func(x Expr) bool {
			switch x.(type) {
			case *Ident, *SubqueryExpr: // an alias, or a subquery that may use one
				refers = true
			}
			return !refers
		})
		if refers {
			return false
		}
	}
	return true
}

// callsRand reports whether the select list calls RAND, whose value differs
// from one row to the next.
func (s *selectStmt) callsRand() bool {
	return s.itemsHold(func(x Expr) bool {
		c, ok := x.(*CallExpr)
		return ok && strings.EqualFold(c.Fun.Name, "RAND")
	})
}

// ReadsOnlyRawAndFirstKey returns the path of the one ORDER BY key of a
// query that returns each document's stored JSON as it is (SELECT * over
// the whole document, no JOIN) in the order of that key, a property path of
// the document: executed with ExecOptions.WhereHolds over a source with
// Raw, it looks into each document only for the value at that path, so the
// source may yield an object holding just that value. ok is false for other
// queries.
func (q *Query) ReadsOnlyRawAndFirstKey() (path []string, ok bool) {
	s := q.stmt
	if s.plan != planOrder || s.From == nil || !s.Star || s.From.In || len(s.Joins) > 0 || len(s.OrderBy) != 1 {
		return nil, false
	}
	if _, whole := s.From.X.(*Ident); !whole {
		return nil, false
	}
	a := hintAnalyzer{}
	if !a.rootPrefix(s.From.X) {
		return nil, false
	}
	a.root = s.From.Alias.Name
	return a.path(s.OrderBy[0].X)
}

// ResumeFirstKey returns the first ORDER BY key of the row at after, for an
// ORDER BY query (no DISTINCT, GROUP BY or aggregate): a source that yields
// documents in first-key order (ExecOptions.SortedByFirstKey) may resume at
// the documents with that key, inclusive, since Execute skips the rows up to
// after. undefined reports a row whose first key is undefined. ok is false
// for other queries, a nil or foreign cursor, and keys that are not scalars.
func (q *Query) ResumeFirstKey(after Cursor) (key jsonv.Value, undefined, ok bool) {
	s := q.stmt
	if s.plan != planOrder || len(s.OrderBy) == 0 || len(after) < 2 || after[0] != cursorOrder {
		return nil, false, false
	}
	return decodeScalarKey(after[1:], s.OrderBy[0].Desc)
}

// ResumeTieSeq returns the document seq of the row at after, for an ORDER
// BY query with one key (no DISTINCT, GROUP BY or aggregate): a source whose
// documents sharing a first key come in ascending seq
// (ExecOptions.TiesInSeqOrder) may resume at that document among those with
// its key (see ResumeFirstKey), since Execute skips the rows up to after.
// ok is false for other queries and for a nil or foreign cursor.
func (q *Query) ResumeTieSeq(after Cursor) (seq uint64, ok bool) {
	s := q.stmt
	if s.plan != planOrder || len(s.OrderBy) != 1 || len(after) < 18 || after[0] != cursorOrder {
		return 0, false
	}
	return binary.BigEndian.Uint64(after[len(after)-16:]), true
}

// ResumeKeys returns the ORDER BY keys of the row at after, in order, and
// the seq of its document, for an ORDER BY query (no DISTINCT, GROUP BY or
// aggregate): a source sorted by several keys, ties in ascending seq
// (ExecOptions.SortedKeys, TiesInSeqOrder), may resume at that row's
// place, since Execute skips the rows up to after. ok is false when a key
// is undefined, an array or an object, and for other queries and for a nil
// or foreign cursor.
func (q *Query) ResumeKeys(after Cursor) (keys []jsonv.Value, seq uint64, ok bool) {
	s := q.stmt
	if s.plan != planOrder || len(s.OrderBy) == 0 || len(after) < 18 || after[0] != cursorOrder {
		return nil, 0, false
	}
	b := after[1 : len(after)-16]
	for _, k := range s.OrderBy {
		v, undefined, ok := decodeScalarKey(b, k.Desc)
		if !ok || undefined {
			return nil, 0, false
		}
		keys = append(keys, v)
		b = b[scalarKeyLen(b, k.Desc):]
	}
	if len(b) != 0 {
		return nil, 0, false
	}
	return keys, binary.BigEndian.Uint64(after[len(after)-16:]), true
}

// RowBound returns the rows the query returns at most, counting those its
// OFFSET skips: its TOP, or its OFFSET plus its LIMIT; -1 without either, or
// when they are not counts (Execute reports that). A source need not look up
// more documents ahead than this, since a streaming query stops there.
func (q *Query) RowBound(params map[string]jsonv.Value) int {
	s := q.stmt
	if s.Top == nil && s.Offset == nil {
		return -1
	}
	ex := &executor{s: s, ev: evaluator{env: &Env{Params: params, Source: q.src}}}
	limit, offset, err := ex.bounds()
	if err != nil || limit < 0 {
		return -1
	}
	return offset + limit
}

// Filters reports whether the query has a WHERE clause: without one, every
// document of its source qualifies (ExecOptions.WhereHolds holds).
func (q *Query) Filters() bool { return q.stmt.Where != nil }

// ResumeSeq returns the document seq a streaming query resumes at after the
// row at after: the engine may seek its source there (inclusive; rows of that
// document up to after are skipped by Execute). ok is false for a nil or
// foreign cursor, and for queries that are not streaming (see Hints), which
// must read their whole source on every page.
func (q *Query) ResumeSeq(after Cursor) (seq uint64, ok bool) {
	if q.stmt.plan != planStream || q.stmt.From == nil {
		return 0, false
	}
	seq, _, ok = streamPosition(after)
	return seq, ok
}

// String returns the statement as an S-expression, e.g.
// (select (project c.id) (from c) (where (> c.age 21))).
func (q *Query) String() string {
	var b strings.Builder
	writeStmt(&b, q.stmt)
	return b.String()
}

// cursorKind returns the kind byte of the statement's cursors.
func (s *selectStmt) cursorKind() byte {
	switch s.plan {
	case planStream:
		return cursorStream
	case planOrder:
		return cursorOrder
	case planDistinct:
		return cursorDistinct
	case planOrderDistinct:
		return cursorOrderDistinct
	case planGroup:
		if s.Distinct {
			return cursorDistinct
		}
		return cursorGroup
	}
	return cursorAggregate
}

// Blanks is a Source of N documents that hold nothing: the documents a
// query that reads none of them (ReadsNoDocument) runs over, when the caller
// knows how many there are without reading them (a container's count of
// live documents). An aggregate without WHERE over them takes them in at
// once, as N of the one row they all make, so a count of a million
// documents costs what a count of one does; any other query reads them one
// by one, with seqs 1 to N. A caller's source may embed it.
type Blanks struct {
	N    int64
	sent int64
}

// blankDocument is every document Blanks yields.
var blankDocument = jsonv.NewObject(0)

// blanks makes a Blanks, and a source that embeds one, a blankSource.
func (b *Blanks) blanks() *Blanks { return b }

// blankSource is a Source of documents that hold nothing: Blanks, or a
// caller's source that embeds it.
type blankSource interface{ blanks() *Blanks }

// Next implements Source.
func (b *Blanks) Next() (*jsonv.Object, uint64, bool, error) {
	if b.sent >= b.N {
		return nil, 0, false, nil
	}
	b.sent++
	return blankDocument, uint64(b.sent), true, nil
}

// sourceInput adapts a Source and counts the documents it yields.
type sourceInput struct {
	src      Source
	examined int
}

func (in *sourceInput) next() (jsonv.Value, uint64, bool, error) {
	doc, seq, ok, err := in.src.Next()
	if err != nil {
		return nil, 0, false, fmt.Errorf("read documents: %w", err)
	}
	if !ok {
		return nil, 0, false, nil
	}
	if doc == nil {
		return nil, 0, false, errors.New("read documents: the source returned a nil document")
	}
	in.examined++
	return doc, seq, true, nil
}
