package gateway

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/jsonv"
)

// querySpec is a query request body: {"query": "...", "parameters": [{"name": "@p", "value": ...}]}.
type querySpec struct {
	Query      string `json:"query"`
	Parameters []struct {
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
	} `json:"parameters"`
}

// queryOptions decodes a query request: body, parameters, page size and continuation.
func (rq *request) queryOptions() (engine.QueryOptions, error) {
	var opts engine.QueryOptions
	body, err := rq.body()
	if err != nil {
		return opts, err
	}
	var q querySpec
	if err := json.Unmarshal(body, &q); err != nil || strings.TrimSpace(q.Query) == "" {
		return opts, lethe.Errorf(lethe.CodeBadRequest, "The query request body must be a JSON object with a non-empty 'query' string.")
	}
	opts.Text = q.Query
	for _, p := range q.Parameters {
		name, ok := strings.CutPrefix(p.Name, "@")
		if !ok || name == "" {
			return opts, lethe.Errorf(lethe.CodeBadRequest, "The query parameter name '%s' is invalid: it must start with '@'.", truncateInput(p.Name, 100))
		}
		if opts.Params == nil {
			opts.Params = map[string]jsonv.Value{}
		}
		if len(p.Value) == 0 {
			continue // an undefined value: references to it are undefined
		}
		v, err := jsonv.Parse(p.Value)
		if err != nil {
			return opts, lethe.Errorf(lethe.CodeBadRequest, "The value of query parameter '%s' is not valid JSON.", truncateInput(p.Name, 100))
		}
		opts.Params[name] = v
	}
	if opts.MaxItems, err = rq.maxItemCount(); err != nil {
		return opts, err
	}
	opts.Continuation = rq.header("x-ms-continuation")
	opts.IndexMetrics = rq.flag("x-ms-cosmos-populateindexmetrics")
	return opts, nil
}

// queryPlan is the plan answered to the JavaScript SDK's plan requests. Lethe
// evaluates every query completely on the server (ORDER BY, aggregates,
// GROUP BY, DISTINCT, OFFSET/LIMIT across all partitions), so the plan tells
// the SDK there is nothing to do on its side: one range, no rewriting.
const queryPlan = `{"partitionedQueryExecutionInfoVersion":2,"queryInfo":{"distinctType":"None","top":null,"offset":null,"limit":null,"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},"rewrittenQuery":"","hasSelectValue":false,"hasNonStreamingOrderBy":false,"dCountInfo":null},"queryRanges":[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]}`

// queryDocuments serves POST .../docs with Content-Type application/query+json:
// either a query-plan request or one page of the query.
func (s *Server) queryDocuments(w http.ResponseWriter, rq *request) {
	opts, err := rq.queryOptions()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	if rq.flag("x-ms-cosmos-is-query-plan-request") {
		if err := engine.CheckQuery(opts.Text); err != nil {
			s.writeError(w, rq, err)
			return
		}
		rq.charge = 1
		rq.writeRaw(w, http.StatusOK, []byte(queryPlan))
		return
	}
	if opts.PK, err = rq.partitionKey(); err != nil {
		s.writeError(w, rq, err)
		return
	}
	if opts.PK == nil && !rq.flag("x-ms-documentdb-query-enablecrosspartition") && rq.header("x-ms-documentdb-partitionkeyrangeid") == "" {
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception."))
		return
	}
	page, err := s.opts.Engine.QueryDocuments(rq.r.Context(), rq.segs[1], rq.segs[3], opts)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	s.sessionFor(rq, page.ContainerRID)
	s.writeQueryPage(w, rq, page, page.ContainerRID, "Documents")
}

func (s *Server) writeQueryPage(w http.ResponseWriter, rq *request, page engine.QueryPage, rid, list string) {
	rq.charge = page.Charge
	if page.IndexMetrics != "" {
		w.Header().Set("x-ms-cosmos-index-utilization", page.IndexMetrics)
	}
	if page.Continuation != "" {
		w.Header().Set("x-ms-continuation", page.Continuation)
	}
	w.Header().Set("x-ms-documentdb-query-metrics", "totalExecutionTimeInMs=0.00;retrievedDocumentCount="+itoa(page.Examined)+";outputDocumentCount="+itoa(len(page.Rows)))
	rq.writeFeed(w, rid, list, page.Rows)
}

// queryResources serves a query over a resource feed (databases, containers, offers).
func (s *Server) queryResources(w http.ResponseWriter, rq *request, items []engine.Resource, list string) {
	opts, err := rq.queryOptions()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	page, err := s.opts.Engine.QueryResources(rq.r.Context(), items, opts)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	s.writeQueryPage(w, rq, page, "", list)
}
