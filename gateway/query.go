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

// badQueryBody is the answer to a query request whose body is JSON but not
// a query: {"query": "...", "parameters": [{"name": "@p", "value": ...}]}.
func badQueryBody() error {
	return lethe.Errorf(lethe.CodeBadRequest, "The query request body must be a JSON object with a non-empty 'query' string.")
}

// member returns the value of the object's member named like name, ignoring
// case as Cosmos DB's gateway (a .NET JSON reader) and encoding/json do: the
// last such member wins. Absent members report false.
func member(o *jsonv.Object, name string) (jsonv.Value, bool) {
	var v jsonv.Value
	found := false
	for i := range o.Len() {
		if strings.EqualFold(o.Key(i), name) {
			v, found = o.Val(i), true
		}
	}
	return v, found
}

// parseQuerySpec decodes a query request body in one pass: its text and its
// parameters by name (without the '@'). A parameter without a value is
// undefined: it is absent from params, and references to it are undefined.
func parseQuerySpec(body []byte) (text string, params map[string]jsonv.Value, err error) {
	v, err := jsonv.Parse(body)
	if err != nil {
		return "", nil, engine.CheckJSON(body) // the same error CheckJSON gives any body
	}
	o, ok := v.(*jsonv.Object)
	if !ok {
		return "", nil, badQueryBody()
	}
	if q, ok := member(o, "query"); ok {
		if text, ok = q.(string); !ok && q != nil {
			return "", nil, badQueryBody()
		}
	}
	if strings.TrimSpace(text) == "" {
		return "", nil, badQueryBody()
	}
	ps, _ := member(o, "parameters")
	list, ok := ps.([]jsonv.Value)
	if !ok && ps != nil {
		return "", nil, badQueryBody()
	}
	for _, pv := range list {
		var name string
		var val jsonv.Value
		var hasVal bool
		switch p := pv.(type) {
		case *jsonv.Object:
			n, _ := member(p, "name")
			if name, ok = n.(string); !ok && n != nil {
				return "", nil, badQueryBody()
			}
			val, hasVal = member(p, "value")
		case nil:
		default:
			return "", nil, badQueryBody()
		}
		bare, ok := strings.CutPrefix(name, "@")
		if !ok || bare == "" {
			return "", nil, lethe.Errorf(lethe.CodeBadRequest, "The query parameter name '%s' is invalid: it must start with '@'.", truncateInput(name, 100))
		}
		if params == nil {
			params = map[string]jsonv.Value{}
		}
		if hasVal {
			params[bare] = val
		}
	}
	return text, params, nil
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
	if opts.Text, opts.Params, err = parseQuerySpec(body); err != nil {
		return opts, err
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
