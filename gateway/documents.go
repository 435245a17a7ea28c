package gateway

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
)

// docRef decodes the document a request names.
func (s *Server) docRef(rq *request) (engine.DocRef, error) {
	pk, err := rq.partitionKey()
	if err != nil {
		return engine.DocRef{}, err
	}
	ref := engine.DocRef{DB: rq.segs[1], Coll: rq.segs[3], PK: pk}
	if len(rq.segs) > 5 {
		ref.ID = rq.segs[5]
	}
	return ref, nil
}

// refAndBody decodes the document a write names and reads its body.
func (s *Server) refAndBody(rq *request) (engine.DocRef, []byte, error) {
	ref, err := s.docRef(rq)
	if err != nil {
		return ref, nil, err
	}
	body, err := rq.body()
	return ref, body, err
}

func (rq *request) conditions() engine.Conditions {
	return engine.Conditions{IfMatch: rq.header("If-Match"), IfNoneMatch: rq.header("If-None-Match")}
}

// sessionFor records the session token and content path of a document
// response: one "<range id>:-1#<lsn>" entry for each partition key range the
// request read or wrote (the first range when none is known). Lethe's log
// sequence number is one for the whole server, so every entry carries it.
func (s *Server) sessionFor(rq *request, containerRID string, ranges ...string) {
	var num [20]byte
	lsn := strconv.AppendUint(num[:0], s.opts.Engine.LSN(), 10)
	var b strings.Builder
	size := 0
	for _, r := range ranges {
		size += len(r) + len(":-1#,") + len(lsn)
	}
	b.Grow(max(size, len("0:-1#")+len(lsn))) // the token's one allocation
	for _, r := range ranges {
		if r == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r)
		b.WriteString(":-1#")
		b.Write(lsn)
	}
	if b.Len() == 0 {
		b.WriteString("0:-1#")
		b.Write(lsn)
	}
	rq.session = b.String()
	rq.ridPath = containerRID
}

// postDocuments serves POST .../docs: create, upsert, transactional batch, or query.
func (s *Server) postDocuments(w http.ResponseWriter, rq *request) {
	switch {
	case isQuery(rq):
		s.queryDocuments(w, rq)
		return
	case rq.flag("x-ms-cosmos-is-batch-request"):
		s.batch(w, rq)
		return
	}
	ref, body, err := s.refAndBody(rq)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	var res engine.WriteResult
	if rq.flag("x-ms-documentdb-is-upsert") {
		res, err = s.opts.Engine.UpsertDocument(rq.r.Context(), ref, body, rq.conditions())
	} else {
		res, err = s.opts.Engine.CreateDocument(rq.r.Context(), ref, body)
	}
	s.writeWrite(w, rq, res, err)
}

func (s *Server) writeWrite(w http.ResponseWriter, rq *request, res engine.WriteResult, err error) {
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = res.Charge
	s.sessionFor(rq, res.ContainerRID, res.RangeID)
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	rq.writeResource(w, status, res.ETag, res.Body)
}

func (s *Server) getDocument(w http.ResponseWriter, rq *request) {
	ref, err := s.docRef(rq)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	res, err := s.opts.Engine.ReadDocument(rq.r.Context(), ref, rq.conditions())
	if lethe.IsCode(err, lethe.CodeNotModified) {
		w.Header().Set("etag", res.ETag)
		rq.charge = res.Charge
		s.sessionFor(rq, res.ContainerRID, res.RangeID)
	}
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = res.Charge
	s.sessionFor(rq, res.ContainerRID, res.RangeID)
	rq.minimal = false // reads always return the document
	rq.writeResource(w, http.StatusOK, res.ETag, res.Body)
}

func (s *Server) putDocument(w http.ResponseWriter, rq *request) {
	ref, body, err := s.refAndBody(rq)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	res, err := s.opts.Engine.ReplaceDocument(rq.r.Context(), ref, body, rq.conditions())
	s.writeWrite(w, rq, res, err)
}

func (s *Server) patchDocument(w http.ResponseWriter, rq *request) {
	ref, body, err := s.refAndBody(rq)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	p, err := engine.ParsePatch(body)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	res, err := s.opts.Engine.PatchDocument(rq.r.Context(), ref, p, rq.conditions())
	s.writeWrite(w, rq, res, err)
}

func (s *Server) deleteDocument(w http.ResponseWriter, rq *request) {
	ref, err := s.docRef(rq)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	res, err := s.opts.Engine.DeleteDocument(rq.r.Context(), ref, rq.conditions())
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = res.Charge
	s.sessionFor(rq, res.ContainerRID, res.RangeID)
	writeNoContent(w, rq)
}

// readFeed serves GET .../docs: a page of the container's live documents.
func (s *Server) readFeed(w http.ResponseWriter, rq *request) {
	if aim := rq.header("A-IM"); aim != "" {
		s.changeFeed(w, rq, aim)
		return
	}
	pk, err := rq.partitionKey()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	n, err := rq.maxItemCount()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	page, err := s.opts.Engine.ReadFeed(rq.r.Context(), rq.segs[1], rq.segs[3], engine.FeedOptions{
		PK: pk, MaxItems: n, Continuation: rq.header("x-ms-continuation"), Scope: rq.rangeScope(),
	})
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = page.Charge
	s.sessionFor(rq, page.ContainerRID, page.RangeIDs...)
	if page.Continuation != "" {
		w.Header().Set("x-ms-continuation", page.Continuation)
	}
	rq.writeFeed(w, page.ContainerRID, "Documents", page.Docs)
}

// changeFeedWireFormat is the all versions and deletes mode's wire format
// (x-ms-cosmos-changefeed-wire-format-version).
const changeFeedWireFormat = "2021-09-15"

// changeFeed serves GET .../docs with an A-IM header: the change feed
// (docs/changefeed.md). The SDKs spell the mode's name in either case.
func (s *Server) changeFeed(w http.ResponseWriter, rq *request, aim string) {
	opts := engine.ChangeFeedOptions{Scope: rq.rangeScope()}
	switch strings.ToLower(strings.TrimSpace(aim)) {
	case "incremental feed":
	case "full-fidelity feed":
		// The SDKs send the one wire format there is; a client that sends
		// none gets it too.
		if v := rq.header("x-ms-cosmos-changefeed-wire-format-version"); v != "" && v != changeFeedWireFormat {
			s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "The change feed wire format version %q is not supported: use %s.", truncateInput(v, 50), changeFeedWireFormat))
			return
		}
		opts.AllVersions = true
	default:
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "The A-IM header %q is not a change feed mode: use 'Incremental feed' or 'Full-Fidelity Feed'.", truncateInput(aim, 50)))
		return
	}
	var err error
	if opts.PK, err = rq.partitionKey(); err != nil {
		s.writeError(w, rq, err)
		return
	}
	if opts.MaxItems, err = rq.maxItemCount(); err != nil {
		s.writeError(w, rq, err)
		return
	}
	// The continuation wins over a start time: the JavaScript SDK sends
	// If-Modified-Since with every page.
	switch inm := rq.header("If-None-Match"); {
	case inm == "*":
		opts.Start = engine.FromNow
	case inm != "":
		opts.Continuation = inm
	case rq.header("If-Modified-Since") != "":
		t, ok := parseRequestDate(rq.header("If-Modified-Since"))
		if !ok {
			s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "The If-Modified-Since header %q is not an RFC 1123 date (like 'Mon, 02 Jan 2006 15:04:05 GMT').", truncateInput(rq.header("If-Modified-Since"), 100)))
			return
		}
		opts.Start, opts.Since = engine.FromTime, t
	}
	page, err := s.opts.Engine.ReadChangeFeed(rq.r.Context(), rq.segs[1], rq.segs[3], opts)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = page.Charge
	s.sessionFor(rq, page.ContainerRID, page.RangeIDs...)
	// The etag is the next read's position, on a 304 too: the JavaScript
	// SDK keeps its continuation from it.
	w.Header().Set("etag", page.ETag)
	if len(page.Docs) == 0 {
		s.writeError(w, rq, &lethe.Error{Code: lethe.CodeNotModified})
		return
	}
	rq.writeFeed(w, page.ContainerRID, "Documents", page.Docs)
}
