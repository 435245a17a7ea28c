package gateway

import (
	"fmt"
	"github.com/lethe-db/lethe/console"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/lethe-db/lethe"
)

// ServeHTTP authenticates and routes one request. A panic anywhere below is
// recovered into a 500 with a JSON body: no request can take the server down.
// With metrics on, it serves GET /metrics before authentication and records
// every other request, whatever its outcome (metrics.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.Metrics != nil && isScrape(r) {
		s.serveMetrics(w, r)
		return
	}
	// The web console's pages need no key (their API calls are signed); a
	// browser that opens the account root gets the console.
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, console.Prefix):
		s.console.ServeHTTP(w, r)
		return
	case p == strings.TrimSuffix(console.Prefix, "/") || p == "/" && console.WantsPage(r):
		http.Redirect(w, r, console.Prefix, http.StatusFound)
		return
	}
	rq := &request{r: r, activity: r.Header.Get("x-ms-activity-id")}
	if rq.activity == "" {
		rq.activity = newActivityID()
	}
	rq.minimal = strings.Contains(strings.ToLower(r.Header.Get("Prefer")), "return=minimal")
	if s.opts.Metrics != nil {
		rq.rec.ResponseWriter = w
		w = &rq.rec
		defer s.observe(rq, time.Now())
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.writeError(w, rq, fmt.Errorf("panic serving %s %s: %v\n%s", r.Method, r.URL.Path, v, debug.Stack()))
		}
	}()
	segs, err := pathSegments(r.URL.EscapedPath())
	if err != nil {
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "The request path is invalid: %s", err.Error()))
		return
	}
	rq.segs = segs
	if s.opts.Metrics != nil {
		rq.op = operationOf(r.Method, segs, r.Header)
	}
	if len(segs) > 0 && segs[0] == adminSegment {
		s.serveAdmin(w, rq) // authenticates in its own way
		return
	}
	resType, resLink := resourceOf(segs)
	if err := checkMasterKey(r, resType, resLink, s.opts.Key, s.opts.Now()); err != nil {
		s.writeError(w, rq, err)
		return
	}
	s.route(w, rq)
}

// route dispatches on the decoded path segments:
//
//	/                                    account
//	/dbs[/{db}]                          databases
//	/dbs/{db}/colls[/{coll}]             containers
//	/dbs/{db}/colls/{coll}/pkranges      partition key ranges
//	/dbs/{db}/colls/{coll}/docs[/{id}]   documents
//	/offers[/{id}]                       offers (throughput)
func (s *Server) route(w http.ResponseWriter, rq *request) {
	seg := rq.segs
	t := &s.routes
	switch {
	case len(seg) == 0:
		s.method(w, rq, t.account)
	case seg[0] == "dbs" && len(seg) <= 2:
		if len(seg) == 1 {
			s.method(w, rq, t.databases)
		} else {
			s.method(w, rq, t.database)
		}
	case seg[0] == "dbs" && seg[2] == "colls" && len(seg) <= 4:
		rq.altPath = "dbs/" + seg[1]
		if len(seg) == 3 {
			s.method(w, rq, t.containers)
		} else {
			rq.altPath += "/colls/" + seg[3]
			s.method(w, rq, t.container)
		}
	case seg[0] == "dbs" && seg[2] == "colls" && len(seg) == 5 && seg[4] == "pkranges":
		rq.altPath = "dbs/" + seg[1] + "/colls/" + seg[3]
		s.method(w, rq, t.pkranges)
	case seg[0] == "dbs" && seg[2] == "colls" && seg[4] == "docs" && len(seg) <= 6:
		rq.altPath = "dbs/" + seg[1] + "/colls/" + seg[3]
		adm, ok := s.admit(w, rq)
		if !ok {
			return
		}
		if len(seg) == 5 {
			s.method(w, rq, t.docs)
		} else {
			s.method(w, rq, t.doc)
		}
		adm.Charge(rq.charge)
	case seg[0] == "offers" && len(seg) <= 2:
		s.method(w, rq, t.offers)
	case seg[0] == "dbs" && len(seg) >= 3:
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "Lethe does not support the resource type '%s' yet.", resourceTypeOf(seg)))
	default:
		s.writeError(w, rq, lethe.Errorf(lethe.CodeNotFound, "The path '%s' does not name a resource.", truncateInput(rq.r.URL.Path, 200)))
	}
}

// routeTable holds each resource's handlers by HTTP method, built once by
// New: built per request, the tables and their method values were five
// allocations of every document request.
type routeTable struct {
	account, databases, database, containers, container, pkranges, docs, doc, offers map[string]handler
}

func (s *Server) buildRoutes() {
	s.routes = routeTable{
		account:    map[string]handler{"GET": s.getAccount},
		databases:  map[string]handler{"GET": s.listDatabases, "POST": s.postDatabases},
		database:   map[string]handler{"GET": s.getDatabase, "DELETE": s.deleteDatabase},
		containers: map[string]handler{"GET": s.listContainers, "POST": s.postContainers},
		container:  map[string]handler{"GET": s.getContainer, "PUT": s.putContainer, "DELETE": s.deleteContainer},
		pkranges:   map[string]handler{"GET": s.getPartitionKeyRanges},
		docs:       map[string]handler{"GET": s.readFeed, "POST": s.postDocuments},
		doc:        map[string]handler{"GET": s.getDocument, "PUT": s.putDocument, "PATCH": s.patchDocument, "DELETE": s.deleteDocument},
		offers:     map[string]handler{"GET": s.offers, "POST": s.offers, "PUT": s.offers},
	}
}

func resourceTypeOf(seg []string) string {
	if len(seg)%2 == 1 {
		return seg[len(seg)-1]
	}
	return seg[len(seg)-2]
}

type handler func(http.ResponseWriter, *request)

func (s *Server) method(w http.ResponseWriter, rq *request, hs map[string]handler) {
	if h, ok := hs[rq.r.Method]; ok {
		h(w, rq)
		return
	}
	s.writeError(w, rq, lethe.Errorf(lethe.CodeMethodNotAllowed, "The method %s is not allowed on this resource.", rq.r.Method))
}
