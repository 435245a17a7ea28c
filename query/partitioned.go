package query

import (
	"strconv"
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

// Cross-partition query plans.
//
// Cosmos DB's gateway does not combine rows from several partition key
// ranges itself. For a query whose rows need combining (ORDER BY, GROUP BY,
// aggregates, DISTINCT, TOP, OFFSET LIMIT) it hands the SDK a plan: the
// queryInfo built here. The SDK's query pipeline then sends RewrittenQuery to
// every range (with x-ms-documentdb-partitionkeyrangeid) and merges what the
// ranges return: it merge-sorts ORDER BY rows by their orderByItems,
// re-aggregates per group, removes duplicates and applies TOP, OFFSET and
// LIMIT across ranges. The rewritten forms are Cosmos DB's:
//
//	ORDER BY   SELECT [TOP n] c._rid, [{"item": k1}, ...] AS orderByItems,
//	           <payload> AS payload FROM ... WHERE ({documentdb-formattableorderbyquery-filter})
//	           [AND (<where>)] ORDER BY k1, ... [OFFSET 0 LIMIT m+n]
//	aggregate  SELECT VALUE [{"item": COUNT(1)}] FROM ...
//	GROUP BY   SELECT [{"item": g1}, ...] AS groupByItems, {"n": {"item": COUNT(1)}, "g": g1}
//	           AS payload FROM ... GROUP BY g1, ...
//
// where the payload is the row the original select list makes (the FROM
// alias for SELECT *, the expression for SELECT VALUE, an object of the
// named members otherwise), and an aggregate travels as {"item": COUNT(x)},
// {"item": SUM(x)}, {"item": {"sum": SUM(x), "count": COUNT(x)}} for AVG and
// {"item": MIN(x), "item2": {"min": MIN(x), "count": COUNT(x)}} for MIN and
// MAX, so that a range with no rows (an undefined MIN) is told apart from
// one whose values had no minimum.
//
// Where Cosmos DB's forms would make the JavaScript SDK (@azure/cosmos 4.x)
// disagree with the server's own evaluation, the plan departs from them in
// ways other SDKs, which read only "item" and "item2", do not notice:
//
//   - A SUM that is undefined in a range (a string among its values) makes
//     {"item": SUM(x)} the empty object, which the SDK's GROUP BY and
//     non-VALUE aggregation read as null and report as a sum of null, and
//     which ends a grouped SELECT VALUE query with no rows at all. Outside a
//     lone SELECT VALUE SUM the sum travels as {"item": SUM(x), "kind":
//     "sum"}, which the SDK reads as undefined.
//   - SELECT DISTINCT VALUE is planned as a GROUP BY of the value (the SDK's
//     DISTINCT skips the values 0, false, null and "", its GROUP BY keeps
//     them): each distinct value is a group, reported at its first occurrence
//     in the order the client receives rows. With ORDER BY, the ORDER BY rows
//     carry {"groupByItems": [{"item": v}], "payload": v} as payload, and the
//     client groups them after merging.
//
// A SELECT VALUE row with ORDER BY whose value is undefined would reach the
// client as a row without a payload, which the SDK returns as a result: the
// WHERE clause keeps only rows whose value is defined, as Cosmos DB's does.
//
// Across several partition key ranges the SDKs combine per-range results
// with their own rules, which differ from the server's evaluation for some
// data:
// the JavaScript SDK refuses to merge ORDER BY rows whose keys differ in
// type or are null, arrays or objects; its SUM, AVG, MIN and MAX of a range
// whose values have no sum or extreme (a string among numbers, an array)
// are skipped instead of making the result undefined; and without ORDER BY
// the rows come range by range, so TOP and OFFSET without ORDER BY, and the
// order of DISTINCT and GROUP BY rows, differ from a single range's. Its
// DISTINCT over a grouped SELECT VALUE (SELECT DISTINCT VALUE c.n ... GROUP
// BY c.n) drops 0, false, null and "", with one range too. These are the
// SDKs' behaviours against Cosmos DB too.
//
// Shapes no SDK pipeline can combine are refused with an *Error saying why:
// an aggregate inside an expression (COUNT(1) + 1, {"n": COUNT(1)}, ABS(AVG(x)),
// several aggregates in one SELECT VALUE), since the pipelines combine only
// aggregates that are a whole select-list member. So are two ORDER BY
// queries the rewrite cannot express: over a FROM source without a usable
// alias (FROM c["a b"]), and with the filter placeholder's text in the query
// (clients replace its first occurrence). A query without FROM has no plan:
// it reads no documents and is served as it is.

// QueryInfo is the queryInfo member of a partitioned query execution plan:
// what an SDK with a query pipeline does with the rows of each partition key
// range. The JSON field names and shapes are Cosmos DB's.
type QueryInfo struct {
	// DistinctType is "None", "Ordered" (duplicates are adjacent in ORDER BY
	// order) or "Unordered".
	DistinctType string `json:"distinctType"`
	// Top, Offset and Limit are applied by the client across ranges.
	Top    *int `json:"top"`
	Offset *int `json:"offset"`
	Limit  *int `json:"limit"`
	// OrderBy holds "Ascending" or "Descending" per ORDER BY key; the
	// client merges the ranges' rows by their orderByItems in this order.
	OrderBy []string `json:"orderBy"`
	// OrderByExpressions are the keys' texts; the JavaScript SDK builds the
	// WHERE filters that resume an ORDER BY query from them.
	OrderByExpressions []string `json:"orderByExpressions"`
	// GroupByExpressions are the GROUP BY keys' texts.
	GroupByExpressions []string `json:"groupByExpressions"`
	// GroupByAliases are the member names of a grouped or aggregate select
	// list, in order.
	GroupByAliases []string `json:"groupByAliases"`
	// Aggregates names the aggregate of a SELECT VALUE aggregate query
	// ("Count", "Sum", "Average", "Min", "Max").
	Aggregates []string `json:"aggregates"`
	// GroupByAliasToAggregateType maps each member of a grouped or aggregate
	// select list to its aggregate, or to null for a member that is the same
	// in every row of a group (a GROUP BY key, a constant).
	GroupByAliasToAggregateType map[string]*string `json:"groupByAliasToAggregateType"`
	// RewrittenQuery is what the client sends to each range.
	RewrittenQuery string `json:"rewrittenQuery"`
	// HasSelectValue reports SELECT VALUE.
	HasSelectValue bool `json:"hasSelectValue"`
	// HasNonStreamingOrderBy is for vector search ORDER BY; always false.
	HasNonStreamingOrderBy bool `json:"hasNonStreamingOrderBy"`
	// DCountInfo is for DCOUNT; always null.
	DCountInfo *struct{} `json:"dCountInfo"`
}

// OrderByFilterPlaceholder is the text in an ORDER BY query's rewritten WHERE
// clause that the client replaces by "true", or by the filter that resumes
// the query after a continuation.
const OrderByFilterPlaceholder = "{documentdb-formattableorderbyquery-filter}"

// aggregateTypes names each aggregate function as plans do.
var aggregateTypes = map[string]string{
	"COUNT": "Count", "SUM": "Sum", "AVG": "Average", "MIN": "Min", "MAX": "Max",
}

// PartitionedInfo returns the query's queryInfo for a plan request: how a
// client runs it one partition key range at a time and combines the results
// (see the comment above QueryInfo). params binds the parameters of TOP,
// OFFSET and LIMIT, whose values the plan carries as numbers. A shape no
// client pipeline can combine is an *Error that says why.
func (q *Query) PartitionedInfo(params map[string]jsonv.Value) (*QueryInfo, error) {
	s := q.stmt
	info := &QueryInfo{
		DistinctType:                "None",
		OrderBy:                     []string{},
		OrderByExpressions:          []string{},
		GroupByExpressions:          []string{},
		GroupByAliases:              []string{},
		Aggregates:                  []string{},
		GroupByAliasToAggregateType: map[string]*string{},
		HasSelectValue:              s.Value,
	}
	if s.From == nil {
		// It reads no documents: any one range answers it as it is (see
		// ReadsDocuments), and the client has nothing to combine.
		info.RewrittenQuery = q.src
		return info, nil
	}
	var err error
	if info.Top, err = q.planCount(s.Top, "TOP", params); err != nil {
		return nil, err
	}
	if info.Offset, err = q.planCount(s.Offset, "OFFSET", params); err != nil {
		return nil, err
	}
	if info.Limit, err = q.planCount(s.Limit, "LIMIT", params); err != nil {
		return nil, err
	}
	if len(s.OrderBy) > 0 && strings.Contains(q.src, OrderByFilterPlaceholder) {
		return nil, &Error{Pos: PositionFor(q.src, Pos(strings.Index(q.src, OrderByFilterPlaceholder))), Msg: "the text " + OrderByFilterPlaceholder + " is where clients put their filter in the plan of an ORDER BY query: pass it as a parameter"}
	}
	if len(s.OrderBy) > 0 && !q.written(s.From.Alias) {
		return nil, &Error{Pos: PositionFor(q.src, s.From.Pos), Msg: "a FROM source that ends in a quoted name has no alias the plan of an ORDER BY query can use: give it one with AS"}
	}
	w := rewriter{q: q}
	switch {
	case s.plan == planGroup || s.plan == planAggregate:
		// An aggregate without GROUP BY is one row: DISTINCT changes nothing.
		if s.Distinct && s.plan == planGroup {
			info.DistinctType = "Unordered"
		}
		err = w.grouped(info)
	case s.Distinct && s.Value:
		w.distinctValue(info)
	case len(s.OrderBy) > 0:
		if s.Distinct {
			info.DistinctType = "Unordered"
			if q.distinctFollowsOrder() {
				info.DistinctType = "Ordered"
			}
		}
		w.ordered(info)
	default:
		if s.Distinct {
			info.DistinctType = "Unordered"
		}
		w.plain(info)
	}
	if err != nil {
		return nil, err
	}
	info.RewrittenQuery = w.b.String()
	return info, nil
}

// written reports whether an alias appears in the source as written, as an
// identifier (not one inferred from a quoted name: FROM c["a b"]).
func (q *Query) written(a *Ident) bool {
	p, e := int(a.Pos()), int(a.End())
	return p >= 0 && e <= len(q.src) && q.src[p:e] == a.Name
}

// planCount resolves a TOP, OFFSET or LIMIT count; nil when absent.
func (q *Query) planCount(x Expr, clause string, params map[string]jsonv.Value) (*int, error) {
	if x == nil {
		return nil, nil
	}
	var v jsonv.Value
	switch x := x.(type) {
	case *Literal:
		v = x.Value
	case *Param:
		var ok bool
		if v, ok = params[x.Name]; !ok {
			return nil, &Error{Pos: PositionFor(q.src, x.At), Msg: "parameter @" + x.Name + " has no value"}
		}
	}
	n, ok := countValue(v)
	if !ok {
		found := "undefined"
		if !isUndefined(v) {
			found = string(jsonv.Marshal(v))
		}
		return nil, &Error{Pos: PositionFor(q.src, x.Pos()), Msg: clause + " takes a non-negative integer, found " + found}
	}
	return &n, nil
}

// distinctFollowsOrder reports whether equal rows of a DISTINCT ORDER BY
// query (not SELECT VALUE, planned as a GROUP BY) are necessarily adjacent in
// ORDER BY order, so that the client may drop a row equal to the one before
// it: the ORDER BY keys and the row determine each other, the select list
// being exactly the ORDER BY keys. Otherwise the client must remember every
// row it returned.
func (q *Query) distinctFollowsOrder() bool {
	s := q.stmt
	if s.Star {
		return false
	}
	keys := map[string]bool{}
	for _, o := range s.OrderBy {
		keys[ExprString(o.X)] = true
	}
	items := map[string]bool{}
	for _, it := range s.Items {
		items[ExprString(it.X)] = true
	}
	if len(keys) != len(items) {
		return false
	}
	for k := range keys {
		if !items[k] {
			return false
		}
	}
	return true
}

// rewriter builds a plan's rewritten query from slices of the original text,
// so every expression reaches the ranges exactly as written.
type rewriter struct {
	q *Query
	b strings.Builder
}

// text returns the source text of a node.
func (w *rewriter) text(n Node) string { return w.q.src[n.Pos():n.End()] }

// ordered writes the rewritten query of an ORDER BY statement.
func (w *rewriter) ordered(info *QueryInfo) {
	w.orderedAs(info, nil)
}

// orderedAs is ordered with the payload of a SELECT VALUE row written by
// value, if not nil.
func (w *rewriter) orderedAs(info *QueryInfo, value func(text string)) {
	s := w.q.stmt
	for _, o := range s.OrderBy {
		dir := "Ascending"
		if o.Desc {
			dir = "Descending"
		}
		info.OrderBy = append(info.OrderBy, dir)
		info.OrderByExpressions = append(info.OrderByExpressions, w.operand(o.X))
	}
	w.b.WriteString("SELECT ")
	// DISTINCT removes duplicates on the client, after merging: a range's
	// own TOP or LIMIT would count rows the client then drops.
	if !s.Distinct {
		if s.Top != nil {
			w.b.WriteString("TOP " + strconv.Itoa(*info.Top) + " ")
		}
	}
	alias := s.From.Alias.Name
	w.b.WriteString(alias + "._rid, [")
	for i, o := range s.OrderBy {
		if i > 0 {
			w.b.WriteString(", ")
		}
		w.b.WriteString(`{"item": ` + w.text(o.X) + "}")
	}
	w.b.WriteString("] AS orderByItems, ")
	var defined string
	switch {
	case s.Star:
		w.b.WriteString(alias)
	case s.Value:
		defined = w.text(s.Items[0].X)
		if value != nil {
			value(defined)
		} else {
			w.b.WriteString(defined)
		}
	default:
		w.members(func(i int, it *selectItem) { w.b.WriteString(w.text(it.X)) })
	}
	w.b.WriteString(" AS payload")
	w.from()
	w.b.WriteString(" WHERE (" + OrderByFilterPlaceholder + ")")
	if s.Where != nil {
		w.b.WriteString(" AND (" + w.text(s.Where) + ")")
	}
	if defined != "" {
		w.b.WriteString(" AND IS_DEFINED(" + defined + ")")
	}
	w.b.WriteString(" ORDER BY ")
	for i, o := range s.OrderBy {
		if i > 0 {
			w.b.WriteString(", ")
		}
		w.b.WriteString(w.text(o.X))
		if o.Desc {
			w.b.WriteString(" DESC")
		}
	}
	if s.Offset != nil && !s.Distinct {
		w.b.WriteString(" OFFSET 0 LIMIT " + strconv.Itoa(satAdd(*info.Offset, *info.Limit)))
	}
}

// distinctValue writes the rewritten query of SELECT DISTINCT VALUE without
// GROUP BY as a GROUP BY of the value: the JavaScript SDK's DISTINCT drops
// the values 0, false, null and "" (it skips falsy rows), its GROUP BY does
// not. Each distinct value is one group, reported once, at its first
// occurrence in the order the client receives the rows: ORDER BY order when
// there is one (the ORDER BY rows then carry the grouping row as payload),
// else range by range.
func (w *rewriter) distinctValue(info *QueryInfo) {
	s := w.q.stmt
	v := w.text(s.Items[0].X)
	info.GroupByExpressions = append(info.GroupByExpressions, v)
	if len(s.OrderBy) > 0 {
		w.orderedAs(info, func(v string) {
			w.b.WriteString(`{"groupByItems": [{"item": ` + v + `}], "payload": ` + v + "}")
		})
		return
	}
	w.b.WriteString(`SELECT [{"item": ` + v + `}] AS groupByItems, ` + v + " AS payload")
	w.from()
	if s.Where != nil {
		w.b.WriteString(" WHERE " + w.text(s.Where))
	}
	w.b.WriteString(" GROUP BY " + v)
}

// plain writes the rewritten query of a statement without ORDER BY or
// grouping: the statement itself, with OFFSET m LIMIT n read as the first
// m+n rows of each range (none dropped when DISTINCT, which the client
// applies again across ranges before OFFSET and LIMIT).
func (w *rewriter) plain(info *QueryInfo) {
	s := w.q.stmt
	w.b.WriteString("SELECT ")
	if s.Distinct {
		w.b.WriteString("DISTINCT ")
	}
	if s.Top != nil {
		w.b.WriteString("TOP " + strconv.Itoa(*info.Top) + " ")
	}
	w.projection()
	w.from()
	if s.Where != nil {
		w.b.WriteString(" WHERE " + w.text(s.Where))
	}
	if s.Offset != nil && !s.Distinct {
		w.b.WriteString(" OFFSET 0 LIMIT " + strconv.Itoa(satAdd(*info.Offset, *info.Limit)))
	}
}

// grouped writes the rewritten query of a GROUP BY or aggregate statement
// and fills the plan's grouping members. DISTINCT, TOP, OFFSET and LIMIT
// apply to the combined groups, on the client only.
func (w *rewriter) grouped(info *QueryInfo) error {
	s := w.q.stmt
	for _, it := range s.Items {
		if err := w.q.checkAggregatePlacement(it.X); err != nil {
			return err
		}
	}
	for _, g := range s.GroupBy {
		info.GroupByExpressions = append(info.GroupByExpressions, w.text(g))
	}
	w.b.WriteString("SELECT ")
	if len(s.GroupBy) > 0 {
		w.b.WriteString("[")
		for i, g := range s.GroupBy {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.b.WriteString(`{"item": ` + w.text(g) + "}")
		}
		w.b.WriteString("] AS groupByItems, ")
	}
	lone := len(s.GroupBy) == 0 // a SELECT VALUE aggregate over all rows
	switch {
	case s.Value && len(s.GroupBy) == 0:
		w.b.WriteString("VALUE [")
		w.aggregateItem(info, s.Items[0].X, lone)
		w.b.WriteString("]")
	case s.Value:
		if a := topAggregate(s.Items[0].X); a != nil {
			w.b.WriteString("[")
			w.aggregateItem(info, a, lone)
			w.b.WriteString("] AS payload")
		} else {
			w.b.WriteString(w.text(s.Items[0].X) + " AS payload")
		}
	default:
		w.members(func(i int, it *selectItem) {
			name := s.names[i]
			info.GroupByAliases = append(info.GroupByAliases, name)
			a := topAggregate(it.X)
			if a == nil {
				info.GroupByAliasToAggregateType[name] = nil
				w.b.WriteString(w.text(it.X))
				return
			}
			t := aggregateTypes[a.Name]
			info.GroupByAliasToAggregateType[name] = &t
			w.aggregateValue(a, false)
		})
		w.b.WriteString(" AS payload")
	}
	w.from()
	if s.Where != nil {
		w.b.WriteString(" WHERE " + w.text(s.Where))
	}
	for i, g := range s.GroupBy {
		if i == 0 {
			w.b.WriteString(" GROUP BY ")
		} else {
			w.b.WriteString(", ")
		}
		w.b.WriteString(w.text(g))
	}
	return nil
}

// aggregateItem writes the array element of a SELECT VALUE aggregate's
// rewritten row and names the aggregate in the plan.
func (w *rewriter) aggregateItem(info *QueryInfo, x Expr, lone bool) {
	a := topAggregate(x)
	info.Aggregates = append(info.Aggregates, aggregateTypes[a.Name])
	w.aggregateValue(a, lone)
}

// aggregateValue writes how one aggregate travels from a range to the
// client. lone is a SELECT VALUE aggregate without GROUP BY: its SUM keeps
// Cosmos DB's form, whose empty object (an undefined sum in some range) ends
// the query with no row, as the server's own evaluation gives.
func (w *rewriter) aggregateValue(a *AggregateExpr, lone bool) {
	arg := w.text(a.Arg)
	switch a.Name {
	case "AVG":
		w.b.WriteString(`{"item": {"sum": SUM(` + arg + `), "count": COUNT(` + arg + `)}}`)
	case "MIN", "MAX":
		call := a.Name + "(" + arg + ")"
		w.b.WriteString(`{"item": ` + call + `, "item2": {"` + strings.ToLower(a.Name) + `": ` + call + `, "count": COUNT(` + arg + `)}}`)
	case "SUM":
		if lone {
			w.b.WriteString(`{"item": SUM(` + arg + `)}`)
		} else {
			w.b.WriteString(`{"item": SUM(` + arg + `), "kind": "sum"}`)
		}
	default:
		w.b.WriteString(`{"item": ` + a.Name + "(" + arg + ")}")
	}
}

// members writes the select list as an object of its named members, each
// value written by f.
func (w *rewriter) members(f func(i int, it *selectItem)) {
	w.b.WriteString("{")
	for i, it := range w.q.stmt.Items {
		if i > 0 {
			w.b.WriteString(", ")
		}
		w.b.Write(jsonv.AppendString(nil, w.q.stmt.names[i]))
		w.b.WriteString(": ")
		f(i, it)
	}
	w.b.WriteString("}")
}

// projection writes the original select list.
func (w *rewriter) projection() {
	s := w.q.stmt
	switch {
	case s.Star:
		w.b.WriteString("*")
	case s.Value:
		w.b.WriteString("VALUE " + w.text(s.Items[0].X))
	default:
		for i, it := range s.Items {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.b.WriteString(w.text(it.X))
			if it.Alias != nil {
				w.b.WriteString(" AS " + it.Alias.Name)
			}
		}
	}
}

// from writes the FROM and JOIN clauses as written.
func (w *rewriter) from() {
	s := w.q.stmt
	if s.From == nil {
		return
	}
	end := sourceEnd(s.From)
	if n := len(s.Joins); n > 0 {
		end = sourceEnd(s.Joins[n-1])
	}
	w.b.WriteString(" FROM " + w.q.src[s.From.Pos:end])
}

// sourceEnd returns the offset just past a FROM or JOIN source.
func sourceEnd(f *fromSource) Pos {
	if f.Explicit && !f.In {
		return f.Alias.End()
	}
	return f.X.End()
}

// operand returns the text of x, parenthesised unless it is a primary
// expression, so that a client may write it before a comparison operator.
func (w *rewriter) operand(x Expr) string {
	switch x.(type) {
	case *Ident, *SelectorExpr, *IndexExpr, *CallExpr, *Literal, *Param, *ParenExpr,
		*ArrayLit, *ObjectLit, *SubqueryExpr:
		return w.text(x)
	}
	return "(" + w.text(x) + ")"
}

// topAggregate returns the aggregate a select-list member consists of
// (parentheses aside), or nil.
func topAggregate(x Expr) *AggregateExpr {
	for {
		switch y := x.(type) {
		case *ParenExpr:
			x = y.X
		case *AggregateExpr:
			return y
		default:
			return nil
		}
	}
}

// checkAggregatePlacement refuses a select-list member with an aggregate
// anywhere but at its top: the client combines per-range aggregates only
// when they are a whole member.
func (q *Query) checkAggregatePlacement(x Expr) error {
	if topAggregate(x) != nil {
		return nil
	}
	var bad *AggregateExpr
	Inspect(x, func(y Expr) bool {
		if a, ok := y.(*AggregateExpr); ok && bad == nil {
			bad = a
		}
		return bad == nil
	})
	if bad == nil {
		return nil
	}
	return &Error{
		Pos: PositionFor(q.src, bad.Pos()),
		Msg: "aggregate " + bad.Name + " inside an expression cannot be combined across partition key ranges " +
			"(SDK query pipelines combine an aggregate only when it is a whole select-list member, as in " +
			"SELECT VALUE COUNT(1) or COUNT(1) AS n); give a partition key, or select the aggregates and compute the expression from them",
	}
}

// ContinuationKey is the part of the query text a continuation token is bound
// to: all of it but the WHERE condition. An SDK that resumes an ORDER BY
// query across partition key ranges from its own continuation sends the
// rewritten query again with the filter placeholder replaced by a condition
// on the ORDER BY keys, and with the range's continuation token: the rows
// after the token's position that pass the new condition are the right
// ones. The select list, FROM, GROUP BY, ORDER BY and the counts still must
// match, since the token's position means nothing under another order.
func (q *Query) ContinuationKey() string {
	w := q.stmt.Where
	if w == nil {
		return q.src
	}
	return q.src[:w.Pos()] + "\x00" + q.src[w.End():]
}
