package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
)

// partitionedPlan is a query-plan response, Cosmos DB's
// partitionedQueryExecutionInfo: what the client does with the rows of each
// partition key range (query.QueryInfo), and the ranges the query reads.
type partitionedPlan struct {
	Version     int              `json:"partitionedQueryExecutionInfoVersion"`
	QueryInfo   *query.QueryInfo `json:"queryInfo"`
	QueryRanges []queryRange     `json:"queryRanges"`
}

// queryRange is an effective partition key range of a plan, as hex strings:
// "" is the lowest key and "FF" above the highest.
type queryRange struct {
	Min            string `json:"min"`
	Max            string `json:"max"`
	IsMinInclusive bool   `json:"isMinInclusive"`
	IsMaxInclusive bool   `json:"isMaxInclusive"`
}

// QueryPlan answers a query-plan request (the JavaScript SDK sends one with
// every query, and runs it when the query itself is refused as needing a
// plan): the query's partitionedQueryExecutionInfo, which tells the client
// how to run it one partition key range at a time and combine the results.
// Returns BadRequest (syntax, unsupported, a shape no client can combine
// across ranges, a missing TOP, OFFSET or LIMIT parameter), NotFound
// (container).
func (e *Engine) QueryPlan(ctx context.Context, dbID, collID string, opts QueryOptions) ([]byte, error) {
	defer e.begin()()
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
	return queryPlanOf(q, opts.Params)
}

// queryPlanOf returns the plan of q as JSON, or the BadRequest that says why
// no client can run q one range at a time.
func queryPlanOf(q *query.Query, params map[string]jsonv.Value) ([]byte, error) {
	info, err := q.PartitionedInfo(params)
	if err != nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The query cannot run across partition key ranges: %s", err.Error())
	}
	b, err := json.Marshal(partitionedPlan{Version: 2, QueryInfo: info, QueryRanges: planRanges(q)})
	if err != nil {
		return nil, fmt.Errorf("encode query plan: %w", err)
	}
	return b, nil
}

// planRanges returns the effective partition key ranges a plan's query
// reads: every key (a plan is only needed when the query is not confined to
// one partition key value), except for a query without FROM, which reads no
// documents and gives the same rows in every range, so the client must run it
// in one: the point "", in the first range.
func planRanges(q *query.Query) []queryRange {
	if !q.ReadsDocuments() {
		return []queryRange{{Min: "", Max: "", IsMinInclusive: true, IsMaxInclusive: true}}
	}
	return []queryRange{{Min: "", Max: "FF", IsMinInclusive: true, IsMaxInclusive: false}}
}

// crossPartitionRefused is the error for a query Cosmos DB's gateway cannot
// serve across partitions: it carries the plan, so that SDKs with a query
// pipeline run the query themselves (they recognise the error by its
// additionalErrorInfo and substatus 1004). A query no client can run one
// range at a time gets the plan request's error, which says why.
func crossPartitionRefused(q *query.Query, params map[string]jsonv.Value) error {
	plan, err := queryPlanOf(q, params)
	if err != nil {
		return err
	}
	return &lethe.Error{
		Code:      lethe.CodeBadRequest,
		SubStatus: 1004,
		Message: "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message. " +
			"(A query with ORDER BY, GROUP BY, an aggregate, DISTINCT, TOP or OFFSET LIMIT needs a partition key, a partition key range, or an SDK that runs query plans; Lethe evaluates it on the server when started with --serve-all-cross-partition-queries.)",
		AdditionalInfo: string(plan),
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
