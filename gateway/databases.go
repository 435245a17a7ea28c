package gateway

import (
	"net/http"

	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/ru"
)

func isQuery(rq *request) bool {
	ct := rq.header("Content-Type")
	return len(ct) >= 22 && ct[:22] == "application/query+json"
}

func (s *Server) postDatabases(w http.ResponseWriter, rq *request) {
	if isQuery(rq) {
		list, err := s.opts.Engine.ListDatabases(rq.r.Context())
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		s.queryResources(w, rq, list, "Databases")
		return
	}
	tp, body, err := createRequest(rq)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	res, err := s.opts.Engine.CreateDatabaseWithThroughput(rq.r.Context(), body, tp)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = res.Charge
	rq.writeResource(w, http.StatusCreated, res.ETag, res.Body)
}

func (s *Server) listDatabases(w http.ResponseWriter, rq *request) {
	list, err := s.opts.Engine.ListDatabases(rq.r.Context())
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = ru.Metadata
	rq.writeFeed(w, "", "Databases", bodies(list))
}

func (s *Server) getDatabase(w http.ResponseWriter, rq *request) {
	res, err := s.opts.Engine.ReadDatabase(rq.r.Context(), rq.segs[1])
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = res.Charge
	rq.writeResource(w, http.StatusOK, res.ETag, res.Body)
}

func (s *Server) deleteDatabase(w http.ResponseWriter, rq *request) {
	if err := s.opts.Engine.DeleteDatabase(rq.r.Context(), rq.segs[1]); err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = ru.Metadata
	writeNoContent(w, rq)
}

func writeNoContent(w http.ResponseWriter, rq *request) {
	rq.setCommonHeaders(w.Header())
	w.WriteHeader(http.StatusNoContent)
}

func bodies(list []engine.Resource) [][]byte {
	out := make([][]byte, len(list))
	for i, r := range list {
		out[i] = r.Body
	}
	return out
}
