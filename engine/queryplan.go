package engine

import (
	"context"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
)

// trivialPlan is the plan of a query with nothing for the client to do but
// concatenate what each range returns.
const trivialPlan = `{"partitionedQueryExecutionInfoVersion":2,"queryInfo":{"distinctType":"None","top":null,"offset":null,"limit":null,"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},"rewrittenQuery":"","hasSelectValue":false,"hasNonStreamingOrderBy":false,"dCountInfo":null},"queryRanges":[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]}`

// QueryPlan answers a query-plan request (the JavaScript SDK sends one with
// every query): the query's partitionedQueryExecutionInfo, which tells the
// client how to run it one partition key range at a time and combine the
// results. Returns BadRequest (syntax, unsupported), NotFound (container).
func (e *Engine) QueryPlan(ctx context.Context, dbID, collID string, opts QueryOptions) ([]byte, error) {
	q, err := parseStatement(opts.Text)
	if err != nil {
		return nil, err
	}
	err = e.store.View(ctx, func(r kv.Reader) error {
		_, _, err := getContainer(r, dbID, collID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return queryPlanOf(q), nil
}

func queryPlanOf(*query.Query) []byte { return []byte(trivialPlan) }

// crossPartitionRefused is the error for a query Cosmos DB's gateway cannot
// serve across partitions: it carries the plan, so that SDKs with a query
// pipeline run the query themselves (they recognise the error by its
// additionalErrorInfo and substatus 1004).
func crossPartitionRefused(q *query.Query) error {
	return &lethe.Error{
		Code:      lethe.CodeBadRequest,
		SubStatus: 1004,
		Message: "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message. " +
			"(A query with ORDER BY, GROUP BY, an aggregate, DISTINCT, TOP or OFFSET LIMIT needs a partition key, a partition key range, or an SDK that runs query plans; Lethe evaluates it on the server when started with --serve-all-cross-partition-queries.)",
		AdditionalInfo: string(queryPlanOf(q)),
	}
}

// needsPlan reports whether a query must be refused as Cosmos DB's gateway
// refuses it: it is not confined to one partition key value (no partition
// key, no range, and no WHERE conjunct pinning every partition key path) and
// its rows from several partitions cannot simply be concatenated.
func (s *scope) needsPlan(q *query.Query, opts QueryOptions) bool {
	if opts.PK != nil || !opts.Scope.any() || !q.NeedsQueryPlan() {
		return false
	}
	return !s.pinsPartitionKey(q, opts.Params)
}

// pinsPartitionKey reports whether the query's WHERE requires one value at
// every partition key path, so that it reads one logical partition.
func (s *scope) pinsPartitionKey(q *query.Query, params map[string]jsonv.Value) bool {
	h := q.Hints(params)
	for _, p := range s.c.PKPaths {
		segs, err := splitPath(p)
		if err != nil {
			return false
		}
		if _, ok := h.PinnedPath(segs); !ok {
			return false
		}
	}
	return len(s.c.PKPaths) > 0
}
