package bench

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Ceiling is a storage-free server that answers every request the benchmark's
// workloads make with a canned response: the account (GET /), database and
// container creates, reads and deletes, partition key ranges (200, then 304),
// document creates, reads, replaces, upserts and deletes (a canned document
// with system properties), and queries (a canned page of 10 documents).
//
// It checks nothing (no signature, no body, no partition key) and does as
// little work as it can: header values are built once and shared, the request
// body is never parsed. Driving it with the same client and the same workload
// as a real server therefore measures what the SDK, HTTP and JSON cost on
// this machine alone: no server can be faster than the ceiling here, and a
// real server's figures are reported as a ratio to it.
//
//	c := bench.NewCeiling(&bench.CeilingOptions{DocSize: 1024})
//	go c.Serve(ln)
//	defer c.Shutdown(ctx)
type Ceiling struct {
	http *http.Server

	// Response bodies and header values, built once by NewCeiling and never
	// written to again: handlers share them between requests.
	doc, page, db, coll, pkranges, plan          []byte
	docLen, pageLen, dbLen, collLen, pkLen, pLen []string

	// work is how many rounds of burn each request spends before it is
	// answered (CeilingOptions.Work); sink keeps the compiler from
	// discarding them.
	work int
	sink atomic.Uint64
}

// CeilingOptions configure a Ceiling. Zero fields take their defaults.
type CeilingOptions struct {
	// DocSize is the size in bytes of the user part of the canned document
	// (before system properties), to match the workload's documents. The
	// default is 1024.
	DocSize int

	// Work is CPU time each request spends before its answer, measured on
	// this machine when the ceiling starts. Zero, the default, is the
	// ceiling itself. A ceiling with work answers the question the
	// benchmark's ratios raise: how much of the ratio does a microsecond
	// of the server's CPU per request cost on this machine, with this
	// client? A real server can then be compared with a ceiling doing as
	// much work as it does.
	Work time.Duration
}

// Canned identifiers, shaped like Lethe's: a database RID of 4 bytes, a
// container RID of 8, a document RID of 16 (see shared/PROTOCOL.md).
const (
	ceilingDBRID   = "AQAAAA=="
	ceilingCollRID = "AQAAAAEAAIA="
	ceilingDocRID  = "AQAAAAEAAIABAAAAAAAAAA=="
	ceilingETag    = `"00000000-0000-0000-0000-000000000001"`
	ceilingTS      = "1700000000"
)

// Shared header values. A handler assigns these slices to the response's
// header map directly (canonical keys, no copying); net/http only reads them.
var (
	hdrJSON       = []string{"application/json"}
	hdrCharge     = []string{"1"}
	hdrSession    = []string{"0:-1#1"}
	hdrETag       = []string{ceilingETag}
	hdrCollRID    = []string{ceilingCollRID}
	hdrZero       = []string{"0"}
	hdrItemCount  = []string{"10"}
	hdrQueryStats = []string{"totalExecutionTimeInMs=0.00;retrievedDocumentCount=10;outputDocumentCount=10"}
	hdrContinue   = []string{"ceiling-next-page"}
	hdrActivity   = []string{"00000000-0000-0000-0000-000000000000"}
	hdrPKETag     = []string{`"pkranges-1"`}
)

// NewCeiling returns a ceiling server. Serve it with Serve.
func NewCeiling(o *CeilingOptions) *Ceiling {
	var opts CeilingOptions
	if o != nil {
		opts = *o
	}
	if opts.DocSize <= 0 {
		opts.DocSize = DefaultDocSize
	}
	c := &Ceiling{}
	if opts.Work > 0 {
		c.work = max(1, int(float64(opts.Work)/float64(burnRoundTime())))
	}
	sys := `,"_rid":"` + ceilingDocRID + `","_self":"dbs/` + ceilingDBRID + `/colls/` + ceilingCollRID + `/docs/` + ceilingDocRID +
		`/","_etag":` + strconv.Quote(ceilingETag) + `,"_attachments":"attachments/","_ts":` + ceilingTS + `}`
	user := appendDocument(nil, 0, 1, 0, 0, opts.DocSize)
	c.doc = append(user[:len(user)-1:len(user)-1], sys...)
	c.page = append([]byte(`{"_rid":"`+ceilingCollRID+`","Documents":[`), c.doc...)
	for range 9 {
		c.page = append(c.page, ',')
		c.page = append(c.page, c.doc...)
	}
	c.page = append(c.page, `],"_count":10}`...)
	c.db = []byte(`{"id":"db","_rid":"` + ceilingDBRID + `","_self":"dbs/` + ceilingDBRID + `/","_etag":` + strconv.Quote(ceilingETag) +
		`,"_colls":"colls/","_users":"users/","_ts":` + ceilingTS + `}`)
	c.coll = []byte(`{"id":"coll","partitionKey":{"kind":"Hash","paths":["/pk"],"version":2},` +
		`"indexingPolicy":{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]},` +
		`"_rid":"` + ceilingCollRID + `","_self":"dbs/` + ceilingDBRID + `/colls/` + ceilingCollRID + `/","_etag":` + strconv.Quote(ceilingETag) +
		`,"_docs":"docs/","_sprocs":"sprocs/","_triggers":"triggers/","_udfs":"udfs/","_conflicts":"conflicts/","_ts":` + ceilingTS + `}`)
	c.pkranges = []byte(`{"_rid":"` + ceilingCollRID + `","PartitionKeyRanges":[{"_rid":"` + ceilingCollRID + `","id":"0","_etag":` +
		strconv.Quote(hdrPKETag[0]) + `,"minInclusive":"","maxExclusive":"FF","ridPrefix":0,"_self":"dbs/` + ceilingDBRID + `/colls/` +
		ceilingCollRID + `/pkranges/` + ceilingCollRID + `/","throughputFraction":1,"status":"online","parents":[],"_ts":0,"lsn":0}],"_count":1}`)
	c.plan = []byte(`{"partitionedQueryExecutionInfoVersion":2,"queryInfo":{"distinctType":"None","top":null,"offset":null,"limit":null,"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},"rewrittenQuery":"","hasSelectValue":false,"hasNonStreamingOrderBy":false,"dCountInfo":null},"queryRanges":[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]}`)
	length := func(b []byte) []string { return []string{strconv.Itoa(len(b))} }
	c.docLen, c.pageLen, c.dbLen, c.collLen, c.pkLen, c.pLen = length(c.doc), length(c.page), length(c.db), length(c.coll), length(c.pkranges), length(c.plan)
	c.http = &http.Server{
		Handler:           c,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	return c
}

// Serve accepts plain HTTP connections on ln until Shutdown.
func (c *Ceiling) Serve(ln net.Listener) error {
	err := c.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits for in-flight requests to
// finish, or for ctx to end.
func (c *Ceiling) Shutdown(ctx context.Context) error { return c.http.Shutdown(ctx) }

// ServeHTTP answers one request with its canned response. Routes, by the
// number of path segments:
//
//	0  /                                  account
//	1  /dbs, /offers                      database create (201) or list; offers (empty)
//	2  /dbs/{db}                          database read, delete
//	3  /dbs/{db}/colls                    container create (201) or list
//	4  /dbs/{db}/colls/{c}                container read, replace, delete
//	5  /dbs/{db}/colls/{c}/pkranges       partition key ranges: 200, then 304
//	5  /dbs/{db}/colls/{c}/docs           create (201), upsert (200), query (a page of 10)
//	6  /dbs/{db}/colls/{c}/docs/{id}      read, replace, patch (200), delete (204)
func (c *Ceiling) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.work > 0 {
		c.sink.Add(burn(c.work))
	}
	h := w.Header()
	if a := r.Header["X-Ms-Activity-Id"]; len(a) > 0 {
		h["X-Ms-Activity-Id"] = a
	} else {
		h["X-Ms-Activity-Id"] = hdrActivity
	}
	h["X-Ms-Request-Charge"] = hdrCharge
	path := strings.Trim(r.URL.Path, "/")
	n := 0
	if path != "" {
		n = strings.Count(path, "/") + 1
	}
	if n >= 4 {
		// dbs/{db}/colls/{c}: JavaScript keys its session tokens by these.
		h["X-Ms-Alt-Content-Path"] = []string{collPath(path)}
		h["X-Ms-Content-Path"] = hdrCollRID
	}
	switch {
	case n == 0:
		c.account(w, r)
	case n == 1 && path == "offers":
		c.write(w, http.StatusOK, []byte(`{"_rid":"","Offers":[],"_count":0}`), nil)
	case n == 1 && r.Method == http.MethodPost && !isQueryRequest(r):
		c.write(w, http.StatusCreated, c.db, c.dbLen)
	case n == 1:
		c.write(w, http.StatusOK, []byte(`{"_rid":"","Databases":[],"_count":0}`), nil)
	case (n == 2 || n == 4) && r.Method == http.MethodDelete:
		noContent(w)
	case n == 2:
		c.write(w, http.StatusOK, c.db, c.dbLen)
	case n == 3 && r.Method == http.MethodPost && !isQueryRequest(r):
		c.write(w, http.StatusCreated, c.coll, c.collLen)
	case n == 3:
		c.write(w, http.StatusOK, []byte(`{"_rid":"`+ceilingDBRID+`","DocumentCollections":[],"_count":0}`), nil)
	case n == 4:
		c.write(w, http.StatusOK, c.coll, c.collLen)
	case n == 5 && strings.HasSuffix(path, "/pkranges"):
		h["Etag"] = hdrPKETag
		if r.Header.Get("If-None-Match") == hdrPKETag[0] {
			h["Content-Length"] = hdrZero
			w.WriteHeader(http.StatusNotModified)
			return
		}
		c.write(w, http.StatusOK, c.pkranges, c.pkLen)
	case n == 5 && isQueryRequest(r):
		c.query(w, r)
	case n == 5 && r.Method == http.MethodPost:
		status := http.StatusCreated
		if len(r.Header["X-Ms-Documentdb-Is-Upsert"]) > 0 {
			status = http.StatusOK // the workloads upsert existing documents
		}
		c.item(w, r, status)
	case n == 6 && r.Method == http.MethodGet:
		h["X-Ms-Session-Token"] = hdrSession
		h["Etag"] = hdrETag
		c.write(w, http.StatusOK, c.doc, c.docLen)
	case n == 6 && r.Method == http.MethodDelete:
		h["X-Ms-Session-Token"] = hdrSession
		noContent(w)
	case n == 6:
		c.item(w, r, http.StatusOK)
	default:
		c.write(w, http.StatusNotFound, []byte(`{"code":"NotFound","message":"The ceiling server does not serve this path."}`), nil)
	}
}

// account answers GET /, advertising the request's own address as the only
// region (see gateway/account.go).
func (c *Ceiling) account(w http.ResponseWriter, r *http.Request) {
	loc := `[{"name":"South Central US","databaseAccountEndpoint":` + strconv.Quote("http://"+r.Host+"/") + `}]`
	body := `{"id":"ceiling","_rid":"ceiling.localhost","_self":"","_dbs":"//dbs/","media":"//media/","addresses":"//addresses/",` +
		`"writableLocations":` + loc + `,"readableLocations":` + loc + `,"enableMultipleWriteLocations":false,` +
		`"userConsistencyPolicy":{"defaultConsistencyLevel":"Session"},"queryEngineConfiguration":"{}",` +
		`"systemReplicationPolicy":{"minReplicaSetSize":1,"maxReplicasetSize":1},"readPolicy":{"primaryReadCoefficient":1,"secondaryReadCoefficient":1},` +
		`"userReplicationPolicy":{"minReplicaSetSize":1,"maxReplicasetSize":1}}`
	c.write(w, http.StatusOK, []byte(body), nil)
}

// item answers a document write: the canned document, or no body when the
// client asked for Prefer: return=minimal (the Go SDK's default).
func (c *Ceiling) item(w http.ResponseWriter, r *http.Request, status int) {
	h := w.Header()
	h["X-Ms-Session-Token"] = hdrSession
	h["Etag"] = hdrETag
	if strings.Contains(r.Header.Get("Prefer"), "return=minimal") {
		h["Content-Length"] = hdrZero
		w.WriteHeader(status)
		return
	}
	c.write(w, status, c.doc, c.docLen)
}

// query answers a query with a page of 10 canned documents: the last page of
// a cross-partition query, or the first of several for a single partition
// (as a real server answers the benchmark's queries).
func (c *Ceiling) query(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if len(r.Header["X-Ms-Cosmos-Is-Query-Plan-Request"]) > 0 {
		c.write(w, http.StatusOK, c.plan, c.pLen)
		return
	}
	h["X-Ms-Session-Token"] = hdrSession
	h["X-Ms-Item-Count"] = hdrItemCount
	h["X-Ms-Documentdb-Query-Metrics"] = hdrQueryStats
	if len(r.Header["X-Ms-Documentdb-Partitionkey"]) > 0 {
		h["X-Ms-Continuation"] = hdrContinue
	}
	c.write(w, http.StatusOK, c.page, c.pageLen)
}

// write sends a JSON body; length is its precomputed Content-Length, or nil.
func (c *Ceiling) write(w http.ResponseWriter, status int, body []byte, length []string) {
	h := w.Header()
	h["Content-Type"] = hdrJSON
	if length == nil {
		length = []string{strconv.Itoa(len(body))}
	}
	h["Content-Length"] = length
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// burn spends CPU: rounds of a multiplicative hash, about burnRoundTime
// each, with no memory traffic and nothing the compiler can fold away.
func burn(rounds int) uint64 {
	x := uint64(rounds)
	for range rounds {
		for range 64 {
			x = x*0x9E3779B97F4A7C15 + 1
			x ^= x >> 29
		}
	}
	return x
}

// burnRoundTime is how much CPU one round of burn takes here: the fastest
// of a few timed runs, since a run the scheduler interrupted measures more
// wall time than CPU time.
func burnRoundTime() time.Duration {
	const rounds = 20000
	best := time.Duration(1<<63 - 1)
	for range 5 {
		start := time.Now()
		burnSink.Add(burn(rounds))
		best = min(best, time.Since(start))
	}
	return max(best/rounds, 1)
}

// burnSink receives burnRoundTime's results.
var burnSink atomic.Uint64

func noContent(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

func isQueryRequest(r *http.Request) bool {
	ct := r.Header["Content-Type"]
	return len(ct) > 0 && strings.HasPrefix(ct[0], "application/query+json")
}

// collPath returns "dbs/{db}/colls/{c}", the first four segments of path.
func collPath(path string) string {
	i := 0
	for range 4 {
		j := strings.IndexByte(path[i:], '/')
		if j < 0 {
			return path
		}
		i += j + 1
	}
	return path[:i-1]
}
