package gateway

import (
	"net/http"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/ru"
)

// createRequest reads what a database or container create sends: the
// throughput it provisions, from x-ms-offer-throughput (manual) or
// x-ms-cosmos-offer-autopilot-settings (autoscale), nil for neither, checked
// before the body is read; and the body.
func createRequest(rq *request) (*engine.Throughput, []byte, error) {
	tp, err := engine.ParseThroughput(rq.header("x-ms-offer-throughput"), rq.header("x-ms-cosmos-offer-autopilot-settings"))
	if err != nil {
		return nil, nil, err
	}
	body, err := rq.body()
	return tp, body, err
}

// admit asks the container's budget whether a document request may start,
// before any work. A refused request is answered here with 429 (substatus
// 3200, x-ms-retry-after-ms) and ok false. Query-plan requests do no work
// and are never throttled (the JavaScript SDK must get its plan).
func (s *Server) admit(w http.ResponseWriter, rq *request) (adm engine.Admission, ok bool) {
	if rq.r.Method == http.MethodPost {
		// Canonical key: Header.Get would allocate to canonicalise it.
		if v := rq.r.Header["X-Ms-Cosmos-Is-Query-Plan-Request"]; len(v) > 0 && strings.EqualFold(v[0], "true") {
			return adm, true
		}
	}
	adm, err := s.opts.Engine.Admit(rq.r.Context(), rq.segs[1], rq.segs[3])
	if err != nil {
		s.writeError(w, rq, err)
		return adm, false
	}
	return adm, true
}

// offers serves the provisioned throughput of databases and containers:
//
//	GET  /offers        the feed of every offer
//	POST /offers        a query over them (the SDKs find a resource's offer so)
//	GET  /offers/{id}   one offer (304 with a matching If-None-Match)
//	PUT  /offers/{id}   replace its throughput, within its kind (If-Match honoured)
func (s *Server) offers(w http.ResponseWriter, rq *request) {
	rq.charge = ru.Metadata
	ctx := rq.r.Context()
	switch {
	case len(rq.segs) == 1 && rq.r.Method == http.MethodPost:
		if !isQuery(rq) {
			s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "Offers are created with their database or container; POST /offers only accepts queries (Content-Type application/query+json)."))
			return
		}
		list, err := s.opts.Engine.ListOffers(ctx)
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		s.queryResources(w, rq, list, "Offers")
	case len(rq.segs) == 1 && rq.r.Method == http.MethodGet:
		list, err := s.opts.Engine.ListOffers(ctx)
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		rq.writeFeed(w, "", "Offers", bodies(list))
	case len(rq.segs) == 2 && rq.r.Method == http.MethodGet:
		res, err := s.opts.Engine.ReadOffer(ctx, rq.segs[1])
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		if inm := rq.header("If-None-Match"); inm != "" && inm == res.ETag {
			setHeader(w.Header(), "Etag", res.ETag)
			s.writeError(w, rq, &lethe.Error{Code: lethe.CodeNotModified})
			return
		}
		rq.minimal = false
		rq.writeResource(w, http.StatusOK, res.ETag, res.Body)
	case len(rq.segs) == 2 && rq.r.Method == http.MethodPut:
		body, err := rq.body()
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		res, err := s.opts.Engine.ReplaceOffer(ctx, rq.segs[1], body, rq.header("If-Match"))
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		rq.minimal = false // offers always come back: the SDKs read the new throughput
		rq.writeResource(w, http.StatusOK, res.ETag, res.Body)
	default:
		s.writeError(w, rq, lethe.Errorf(lethe.CodeMethodNotAllowed, "The method %s is not allowed on this resource.", rq.r.Method))
	}
}
