// Package query is Lethe's Cosmos DB for NoSQL query language: a hand-written
// scanner (token.go, scanner.go), a syntax tree (ast.go), a recursive-descent
// parser (parser.go) and an evaluator over jsonv values (eval.go,
// operator.go, like.go, builtin*.go). The layout follows go/token,
// go/scanner, go/ast and go/parser.
//
// Today it serves conditional patch: ParseCondition parses a precondition
// such as "FROM c WHERE c.status = 'active'" and Condition.Match tests it
// against a document. The expression language is complete; SELECT
// statements will build on the same tree, parser and evaluator.
//
// # Rules
//
//   - The parser never panics on any input. It stops at the first error and
//     returns it as an *Error with a line and column, formatted like
//     go/parser's errors. Its internal bailout panic is recovered inside the
//     exported functions.
//   - Nesting is capped (MaxNesting, MaxExprDepth) so no input can exhaust
//     the stack, in the parser or later in the evaluator.
//   - Names are resolved when parsing: an unknown alias, an unknown function
//     or a wrong argument count is a parse error, not a runtime one.
//   - Evaluation follows Cosmos DB semantics: a missing property is
//     undefined, type mismatches give undefined rather than errors, and AND,
//     OR and NOT use three-valued logic. Only boolean true passes a filter.
//   - The evaluator lives in this package, not in a query/eval sub-package,
//     because Condition.Match needs it and the parser needs the function
//     registry; a sub-package importing the tree would make a cycle.
package query
