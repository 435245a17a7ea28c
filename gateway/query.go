package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
)

// querySpec is a query request body.
type querySpec struct {
	Query      string            `json:"query"`
	Parameters []json.RawMessage `json:"parameters"`
}

func (rq *request) querySpec() (querySpec, error) {
	var q querySpec
	body, err := rq.body()
	if err != nil {
		return q, err
	}
	if err := json.Unmarshal(body, &q); err != nil || q.Query == "" {
		return q, lethe.Errorf(lethe.CodeBadRequest, "The query request body must be a JSON object with a non-empty 'query' string.")
	}
	return q, nil
}

// queryPlan is the plan for the SELECT * queries served today: no ORDER BY,
// aggregates, DISTINCT or OFFSET/LIMIT, over the single range covering every
// partition key. The JavaScript SDK asks for it alongside each query.
const queryPlan = `{"partitionedQueryExecutionInfoVersion":2,"queryInfo":{"distinctType":"None","top":null,"offset":null,"limit":null,"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},"rewrittenQuery":"","hasSelectValue":false,"hasNonStreamingOrderBy":false,"dCountInfo":null},"queryRanges":[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]}`

// queryDocuments serves POST .../docs with Content-Type application/query+json:
// either a query-plan request or one page of the query.
func (s *Server) queryDocuments(w http.ResponseWriter, rq *request) {
	q, err := rq.querySpec()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	if _, err := engine.ParseQuery(q.Query); err != nil {
		s.writeError(w, rq, err)
		return
	}
	if rq.flag("x-ms-cosmos-is-query-plan-request") {
		rq.charge = 1
		rq.writeRaw(w, http.StatusOK, []byte(queryPlan))
		return
	}
	if len(q.Parameters) > 0 {
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "Lethe does not support query parameters yet; they come with the query engine."))
		return
	}
	pk, err := rq.partitionKey()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	if pk == nil && !rq.flag("x-ms-documentdb-query-enablecrosspartition") && rq.header("x-ms-documentdb-partitionkeyrangeid") == "" {
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception."))
		return
	}
	n, err := rq.maxItemCount()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	page, err := s.opts.Engine.QueryDocuments(rq.r.Context(), rq.segs[1], rq.segs[3], engine.QueryOptions{
		Text: q.Query, PK: pk, MaxItems: n, Continuation: rq.header("x-ms-continuation"),
	})
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = page.Charge
	s.sessionFor(rq, page.ContainerRID)
	if page.Continuation != "" {
		w.Header().Set("x-ms-continuation", page.Continuation)
	}
	w.Header().Set("x-ms-documentdb-query-metrics", "totalExecutionTimeInMs=0.00;retrievedDocumentCount="+itoa(len(page.Docs))+";outputDocumentCount="+itoa(len(page.Docs)))
	rq.writeFeed(w, page.ContainerRID, "Documents", page.Docs)
}
