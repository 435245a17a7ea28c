package gateway

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/ru"
)

// querySpec is a query request body: {"query": "...", "parameters": [{"name": "@p", "value": ...}]}.
type querySpec struct {
	Query      string `json:"query"`
	Parameters []struct {
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
	} `json:"parameters"`
}

// headerServeAll asks the server to evaluate a cross-partition query that
// Cosmos DB's gateway would refuse (it needs a client-side query pipeline):
// a Lethe extension for clients without one.
const headerServeAll = "x-lethe-serve-cross-partition"

// queryOptions decodes a query request: body, parameters, page size and continuation.
func (rq *request) queryOptions() (engine.QueryOptions, error) {
	var opts engine.QueryOptions
	body, err := rq.body()
	if err != nil {
		return opts, err
	}
	if err := engine.CheckJSON(body); err != nil {
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
	// The Go SDK asks with x-ms-cosmos-populateindexmetrics (and gets base64
	// JSON); the JavaScript SDK 4.x asks with x-ms-cosmos-populateindexmetrics-V2
	// and decodes the answer with decodeURIComponent + JSON.parse (its
	// FeedResponse.indexMetrics), so it needs the V2 format (writeQueryPage).
	opts.IndexMetrics = rq.flag("x-ms-cosmos-populateindexmetrics") || rq.flag(headerIndexMetricsV2)
	// Lethe's own clients that run no query pipeline (the web console) ask
	// for the whole query to be evaluated here, as --serve-all-cross-partition-queries does.
	opts.ServeAll = rq.flag(headerServeAll)
	return opts, nil
}

// queryDocuments serves POST .../docs with Content-Type application/query+json:
// either a query-plan request or one page of the query.
func (s *Server) queryDocuments(w http.ResponseWriter, rq *request) {
	opts, err := rq.queryOptions()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	if rq.flag("x-ms-cosmos-is-query-plan-request") {
		plan, err := s.opts.Engine.QueryPlan(rq.r.Context(), rq.segs[1], rq.segs[3], opts)
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		rq.charge = ru.Metadata
		rq.writeRaw(w, http.StatusOK, plan)
		return
	}
	if opts.PK, err = rq.partitionKey(); err != nil {
		s.writeError(w, rq, err)
		return
	}
	opts.Scope = rq.rangeScope()
	if opts.PK == nil && !rq.flag("x-ms-documentdb-query-enablecrosspartition") && opts.Scope.RangeID == "" {
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception."))
		return
	}
	page, err := s.opts.Engine.QueryDocuments(rq.r.Context(), rq.segs[1], rq.segs[3], opts)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	s.sessionFor(rq, page.ContainerRID, page.RangeIDs...)
	s.writeQueryPage(w, rq, page, page.ContainerRID, "Documents")
}

func (s *Server) writeQueryPage(w http.ResponseWriter, rq *request, page engine.QueryPage, rid, list string) {
	rq.charge = page.Charge
	if page.IndexMetrics != "" {
		v := page.IndexMetrics
		if rq.flag(headerIndexMetricsV2) {
			v = indexMetricsV2(v)
		}
		w.Header().Set("x-ms-cosmos-index-utilization", v)
	}
	if page.Continuation != "" {
		w.Header().Set("x-ms-continuation", page.Continuation)
	}
	w.Header().Set("x-ms-documentdb-query-metrics", "totalExecutionTimeInMs=0.00;retrievedDocumentCount="+strconv.Itoa(page.Examined)+";outputDocumentCount="+strconv.Itoa(len(page.Rows)))
	rq.writeFeed(w, rid, list, page.Rows)
}

// queryResources serves a query over a resource feed (databases, containers, offers).
func (s *Server) queryResources(w http.ResponseWriter, rq *request, items []engine.Resource, list string) {
	opts, err := rq.queryOptions()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	page, err := s.opts.Engine.QueryResources(rq.r.Context(), bodies(items), opts)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	s.writeQueryPage(w, rq, page, "", list)
}

// headerIndexMetricsV2 is how clients ask for index metrics in the V2 format.
const headerIndexMetricsV2 = "x-ms-cosmos-populateindexmetrics-V2"

// indexMetricsV2 converts the engine's index utilization report (base64 of the
// V1 JSON {"UtilizedSingleIndexes": [...], "PotentialSingleIndexes": [...],
// ...}) to the V2 format the service sends to clients that ask with
// x-ms-cosmos-populateindexmetrics-V2: percent-encoded JSON
// {"UtilizedIndexes": {"SingleIndexes": [{"IndexSpec", "IndexImpactScore"}],
// "CompositeIndexes": []}, "PotentialIndexes": {...}}. A report it cannot read
// is passed through unchanged.
func indexMetricsV2(v1 string) string {
	raw, err := base64.StdEncoding.DecodeString(v1)
	if err != nil {
		return v1
	}
	type single struct {
		IndexSpec        string `json:"IndexSpec"`
		IndexImpactScore string `json:"IndexImpactScore,omitempty"`
	}
	type composite struct {
		IndexSpecs       []string `json:"IndexSpecs"`
		IndexImpactScore string   `json:"IndexImpactScore,omitempty"`
	}
	var in struct {
		UtilizedSingle     []single    `json:"UtilizedSingleIndexes"`
		PotentialSingle    []single    `json:"PotentialSingleIndexes"`
		UtilizedComposite  []composite `json:"UtilizedCompositeIndexes"`
		PotentialComposite []composite `json:"PotentialCompositeIndexes"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return v1
	}
	type group struct {
		SingleIndexes    []single    `json:"SingleIndexes"`
		CompositeIndexes []composite `json:"CompositeIndexes"`
	}
	nonNil := func(g group) group {
		if g.SingleIndexes == nil {
			g.SingleIndexes = []single{}
		}
		if g.CompositeIndexes == nil {
			g.CompositeIndexes = []composite{}
		}
		return g
	}
	out, _ := json.Marshal(struct {
		Utilized  group `json:"UtilizedIndexes"`
		Potential group `json:"PotentialIndexes"`
	}{nonNil(group{in.UtilizedSingle, in.UtilizedComposite}), nonNil(group{in.PotentialSingle, in.PotentialComposite})})
	return encodeURIComponent(string(out))
}

// encodeURIComponent percent-encodes s as JavaScript's encodeURIComponent does,
// so that decodeURIComponent (and any URL decoder: no '+' for spaces) restores it.
func encodeURIComponent(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
