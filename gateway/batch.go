package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
)

// batchOpJSON is one operation as both SDKs send it.
type batchOpJSON struct {
	OperationType string          `json:"operationType"`
	ID            string          `json:"id"`
	ResourceBody  json.RawMessage `json:"resourceBody"`
	IfMatch       string          `json:"ifMatch"`
	IfNoneMatch   string          `json:"ifNoneMatch"`
	PartitionKey  string          `json:"partitionKey"` // JS: the key as a JSON string
}

type batchResultJSON struct {
	StatusCode    int             `json:"statusCode"`
	SubStatusCode int             `json:"subStatusCode,omitempty"`
	Message       string          `json:"message,omitempty"`
	RequestCharge float64         `json:"requestCharge"`
	ETag          string          `json:"eTag,omitempty"`
	ResourceBody  json.RawMessage `json:"resourceBody,omitempty"`
}

// batch serves a batch of document operations (x-ms-cosmos-is-batch-request):
// a transactional batch (x-ms-cosmos-batch-atomic: true, one partition key:
// 200 with every result when it committed, 207 when it did not, where the
// failing operation has its own status and the others 424), or a bulk batch
// (atomic false: the SDKs' bulk executors send one per partition key range,
// each operation with its own key, each run on its own: 207 when any failed).
func (s *Server) batch(w http.ResponseWriter, rq *request) {
	atomic := !strings.EqualFold(strings.TrimSpace(rq.header("x-ms-cosmos-batch-atomic")), "false")
	pk, err := rq.partitionKey()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	if pk == nil && atomic {
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "A transactional batch requires the x-ms-documentdb-partitionkey header."))
		return
	}
	body, err := rq.body()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	if err := engine.CheckJSON(body); err != nil { // each resourceBody included
		s.writeError(w, rq, err)
		return
	}
	var raw []batchOpJSON
	if err := json.Unmarshal(body, &raw); err != nil {
		s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "The batch request body must be a JSON array of operations: %s", err.Error()))
		return
	}
	ops := make([]engine.BulkOp, len(raw))
	for i, op := range raw {
		ops[i] = engine.BulkOp{BatchOp: engine.BatchOp{Type: op.OperationType, ID: op.ID, Body: op.ResourceBody, IfMatch: op.IfMatch, IfNoneMatch: op.IfNoneMatch}, PK: pk}
		if op.PartitionKey == "" {
			continue
		}
		opk, err := parsePartitionKeyHeader(op.PartitionKey)
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		if atomic && !opk.Equal(pk) {
			s.writeError(w, rq, lethe.Errorf(lethe.CodeBadRequest, "Batch operation %d has partition key %s; every operation of a batch must use the request's key %s.", i, opk, pk))
			return
		}
		ops[i].PK = opk
	}
	var results []engine.BatchResult
	committed := true
	if atomic {
		batchOps := make([]engine.BatchOp, len(ops))
		for i := range ops {
			batchOps[i] = ops[i].BatchOp
		}
		results, committed, err = s.opts.Engine.ExecuteBatch(rq.r.Context(), rq.segs[1], rq.segs[3], pk, batchOps)
	} else {
		continueOnError := !strings.EqualFold(strings.TrimSpace(rq.header("x-ms-cosmos-batch-continue-on-error")), "false")
		results, err = s.opts.Engine.ExecuteBulk(rq.r.Context(), rq.segs[1], rq.segs[3], rq.rangeScope(), ops, continueOnError)
		for _, r := range results {
			committed = committed && r.Err == nil
		}
	}
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	out := make([]batchResultJSON, len(results))
	total := 0.0
	containerRID := ""
	var ranges []string
	for i, r := range results {
		if r.ContainerRID != "" {
			containerRID = r.ContainerRID
			if !slices.Contains(ranges, r.RangeID) {
				ranges = append(ranges, r.RangeID)
			}
		}
		if r.Err != nil {
			out[i] = batchResultJSON{StatusCode: statusFor(r.Err), RequestCharge: 0}
			var e *lethe.Error
			if errors.As(r.Err, &e) {
				out[i].SubStatusCode, out[i].Message = e.SubStatus, e.Message
			}
			continue
		}
		st := http.StatusOK
		switch r.Outcome {
		case engine.OutcomeCreated:
			st = http.StatusCreated
		case engine.OutcomeNoContent:
			st = http.StatusNoContent
		}
		out[i] = batchResultJSON{StatusCode: st, RequestCharge: r.Charge, ETag: r.ETag, ResourceBody: r.Body}
		// Prefer: return=minimal (the Go SDK's default for batches without a
		// read) drops the bodies of writes, as Cosmos DB does; reads keep theirs.
		if rq.minimal && !strings.EqualFold(raw[i].OperationType, "read") {
			out[i].ResourceBody = nil
		}
		total += r.Charge
	}
	rq.charge = max(total, 1)
	s.sessionFor(rq, containerRID, ranges...)
	status := http.StatusOK
	if !committed {
		status = http.StatusMultiStatus
	}
	rq.writeJSON(w, status, out)
}
