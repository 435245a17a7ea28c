// Package query is Lethe's Cosmos DB for NoSQL query language: a hand-written
// scanner (token.go, scanner.go), a syntax tree (ast.go, stmt.go), a
// recursive-descent parser (parser.go, parser_select.go) with a resolver
// (resolve.go), an evaluator over jsonv values (eval.go, operator.go,
// like.go, builtin*.go) and an executor for SELECT statements (exec.go,
// pipeline.go, aggregate.go, subquery.go, cursor.go). The layout follows
// go/token, go/scanner, go/ast and go/parser.
//
// It serves two callers. Conditional patch uses ParseCondition and
// Condition.Match on a precondition such as "FROM c WHERE c.status =
// 'active'". Queries use Parse, then Query.Execute over the documents an
// engine Source yields, one page at a time; Query.Hints tells the engine's
// index planner which documents can matter.
//
// # Statements
//
//	SELECT [DISTINCT] [TOP n] * | VALUE e | e [AS name], ...
//	[FROM c | root r | c.path [AS] a | t IN c.path] [JOIN ...]
//	[WHERE e] [GROUP BY e, ...] [ORDER BY e [ASC|DESC], ...] [OFFSET m LIMIT n]
//
// with correlated subqueries (scalar, EXISTS, ARRAY, and JOIN (SELECT ...))
// and the aggregates COUNT, SUM, AVG, MIN and MAX. Not supported, each a
// parse error: a subquery as the FROM source, ORDER BY together with GROUP
// BY or aggregates, TOP together with OFFSET LIMIT, user-defined functions,
// and a parameter in a FROM path.
//
// # Rules
//
//   - The parser never panics on any input. It stops at the first error and
//     returns it as an *Error with a line and column, formatted like
//     go/parser's errors. Its internal bailout panic is recovered inside the
//     exported functions.
//   - Nesting is capped (MaxNesting, MaxExprDepth) so no input can exhaust
//     the stack, in the parser or later in the evaluator; subqueries nest
//     within the same limits. ExecOptions.WorkLimit bounds the cost of cross
//     products, which no syntactic limit can.
//   - Names are resolved when parsing: an unknown alias, an unknown function,
//     a wrong argument count, an aggregate outside a select list, or a
//     grouped select list using a column that is neither grouped nor
//     aggregated is a parse error, not a runtime one.
//   - Evaluation follows Cosmos DB semantics: a missing property is
//     undefined, type mismatches give undefined rather than errors, and AND,
//     OR and NOT use three-valued logic. Only boolean true passes a filter.
//     Undefined members are left out of projected objects, and an undefined
//     SELECT VALUE is no row at all (it does not count for TOP or OFFSET).
//   - Every result row has a place in a total order (see Execute and
//     cursor.go), so paging is keyset-based and survives writes and expiry
//     between pages. Across types the order is undefined < null < false <
//     true < numbers < strings < arrays < objects; ORDER BY, MIN, MAX,
//     GROUP BY and DISTINCT all use it.
//   - A Query is immutable after Parse. Execute keeps its state in the call,
//     so one Query may run on many goroutines at once.
//   - The evaluator lives in this package, not in a query/eval sub-package,
//     because Condition.Match needs it and the parser needs the function
//     registry; a sub-package importing the tree would make a cycle.
package query
