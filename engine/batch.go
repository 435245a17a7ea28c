package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ru"
)

// BatchOp is one operation of a transactional batch.
type BatchOp struct {
	// Type is Create, Upsert, Read, Replace, Delete or Patch (case-insensitive).
	Type string
	// ID names the document for Read, Replace, Delete and Patch.
	ID string
	// Body is the document (Create, Upsert, Replace) or the patch request (Patch).
	Body []byte
	// IfMatch and IfNoneMatch are the operation's preconditions.
	IfMatch, IfNoneMatch string
}

// BatchOutcome is a successful operation's kind of result.
type BatchOutcome int

// Outcomes of batch operations, mapped to statuses by the gateway.
const (
	OutcomeOK        BatchOutcome = iota // 200
	OutcomeCreated                       // 201
	OutcomeNoContent                     // 204
)

// BatchResult is one operation's result.
type BatchResult struct {
	// Err is the operation's failure; nil on success. When the batch fails, every
	// operation other than the failing one has a FailedDependency error.
	Err     error
	Outcome BatchOutcome
	Resource
}

var errBatchAborted = errors.New("engine: batch aborted")

// checkBatchSize refuses a batch of no operations or of more than
// maxBatchOps.
func checkBatchSize(n int) error {
	if n == 0 {
		return lethe.Errorf(lethe.CodeBadRequest, "The batch request did not contain any operations.")
	}
	if n > maxBatchOps {
		return lethe.Errorf(lethe.CodeBadRequest, "The batch request has %d operations; the limit is %d.", n, maxBatchOps)
	}
	return nil
}

// parse checks an operation before it touches storage and returns its parsed
// patch (nil for operations other than Patch). Returns BadRequest.
func (op BatchOp) parse() (*Patch, error) {
	switch strings.ToLower(op.Type) {
	case "create", "upsert", "replace":
		if len(op.Body) == 0 {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The %s operation has no resourceBody.", op.Type)
		}
	case "patch":
		return ParsePatch(op.Body)
	case "read", "delete":
	default:
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The operationType '%s' is invalid.", op.Type)
	}
	return nil, nil
}

// ExecuteBatch runs the operations atomically against one partition key value:
// either all succeed and commit together, or none does. It returns one result
// per operation and whether the batch committed. Every operation sees the same
// instant. Returns BadRequest for a malformed batch and NotFound (container).
func (e *Engine) ExecuteBatch(ctx context.Context, dbID, collID string, pk lethe.PartitionKey, ops []BatchOp) ([]BatchResult, bool, error) {
	defer e.begin()()
	if pk == nil {
		return nil, false, pkRequired()
	}
	if err := checkBatchSize(len(ops)); err != nil {
		return nil, false, err
	}
	if err := e.admitBatch(ctx, ops); err != nil {
		return nil, false, err
	}
	// Parse everything before touching storage.
	patches := make([]*Patch, len(ops))
	for i, op := range ops {
		p, err := op.parse()
		if err != nil {
			return nil, false, lethe.Errorf(lethe.CodeBadRequest, "Batch operation %d: %s", i, lethe.ErrorMessage(err))
		}
		patches[i] = p
	}
	results := make([]BatchResult, len(ops))
	committed := false
	err := e.update(ctx, dbID, collID, func(tx kv.Tx, s *scope) error {
		failed := -1
		for i, op := range ops {
			res, err := e.batchOp(tx, s, pk, op, patches[i])
			results[i] = res
			if err != nil {
				results[i].Err = err
				failed = i
				break
			}
		}
		if failed < 0 {
			committed = true
			return nil
		}
		for i := range results {
			if i != failed {
				results[i] = BatchResult{Err: lethe.Errorf(lethe.CodeFailedDependency, "Operation was not performed because another operation in the batch failed.")}
			}
		}
		return errBatchAborted
	})
	if errors.Is(err, errBatchAborted) {
		return results, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return results, committed, nil
}

// admitBatch refuses a batch that adds data (any operation but reads and
// deletes) when the disk or the storage quota allows none.
func (e *Engine) admitBatch(ctx context.Context, ops []BatchOp) error {
	for _, op := range ops {
		if t := strings.ToLower(op.Type); t != "read" && t != "delete" {
			return e.admitGrowth(ctx)
		}
	}
	return nil
}

func (e *Engine) batchOp(tx kv.Tx, s *scope, pk lethe.PartitionKey, op BatchOp, patch *Patch) (BatchResult, error) {
	ref := DocRef{DB: s.c.DB, Coll: s.c.ID, ID: op.ID, PK: pk}
	switch strings.ToLower(op.Type) {
	case "create", "upsert", "replace":
		o, err := parseDocBody(op.Body)
		if err != nil {
			return BatchResult{}, err
		}
		var rec *docRecord
		created := false
		switch strings.ToLower(op.Type) {
		case "create":
			rec, err = s.createTx(e, tx, o, pk, false)
			created = true
		case "upsert":
			rec, created, err = s.upsertTx(e, tx, o, pk, op.IfMatch)
		default:
			id := op.ID
			if id == "" {
				if v, ok := o.Get("id"); ok {
					id, _ = v.(string)
				}
			}
			rec, err = s.replaceTx(e, tx, id, o, pk, op.IfMatch)
		}
		if err != nil {
			return BatchResult{}, err
		}
		out := BatchResult{Outcome: OutcomeOK, Resource: s.resource(rec, s.writeCharge(len(rec.json)))}
		if created {
			out.Outcome = OutcomeCreated
		}
		return out, nil
	case "read":
		suffix, err := s.refSuffix(ref)
		if err != nil {
			return BatchResult{}, err
		}
		rec, err := s.readTx(tx, suffix)
		if err != nil {
			return BatchResult{}, err
		}
		out := BatchResult{Outcome: OutcomeOK, Resource: s.resource(rec, ru.Read(len(rec.json)))}
		out.Body = append([]byte(nil), rec.json...)
		if op.IfNoneMatch != "" && (op.IfNoneMatch == "*" || op.IfNoneMatch == out.ETag) {
			return BatchResult{}, &lethe.Error{Code: lethe.CodeNotModified, Message: "Not modified."}
		}
		return out, nil
	case "delete":
		suffix, err := s.refSuffix(ref)
		if err != nil {
			return BatchResult{}, err
		}
		rec, err := s.deleteTx(e, tx, suffix, op.IfMatch)
		if err != nil {
			return BatchResult{}, err
		}
		out := BatchResult{Outcome: OutcomeNoContent, Resource: s.resource(rec, s.writeCharge(len(rec.json)))}
		out.Body = nil
		return out, nil
	default: // patch
		suffix, err := s.refSuffix(ref)
		if err != nil {
			return BatchResult{}, err
		}
		rec, err := s.patchTx(e, tx, suffix, ref, patch, op.IfMatch)
		if err != nil {
			return BatchResult{}, err
		}
		return BatchResult{Outcome: OutcomeOK, Resource: s.resource(rec, s.writeCharge(len(rec.json)))}, nil
	}
}

// BulkOp is one operation of a bulk (non-atomic) batch: a batch operation
// with its own partition key.
type BulkOp struct {
	BatchOp
	PK lethe.PartitionKey
}

// ExecuteBulk runs the operations of a non-atomic batch (what the SDKs' bulk
// executors send, one request per partition key range) independently, each
// in its own transaction: a failed operation changes nothing and the others
// still run, unless continueOnError is false, when the operations after the
// first failure are not run (FailedDependency). sc confines them to a
// partition key range: an operation whose key lies outside it fails with
// Gone (substatus 1002), so that the client routes it again. An operation's
// domain error (BadRequest, Conflict, NotFound, PreconditionFailed, Gone, ...)
// is its result; any other error (storage, a cancelled request) fails the
// whole request, as for every other operation. Returns BadRequest (a
// malformed request), NotFound (container), Gone (range).
func (e *Engine) ExecuteBulk(ctx context.Context, dbID, collID string, sc Scope, ops []BulkOp, continueOnError bool) ([]BatchResult, error) {
	defer e.begin()()
	if err := checkBatchSize(len(ops)); err != nil {
		return nil, err
	}
	plain := make([]BatchOp, len(ops))
	for i, op := range ops {
		plain[i] = op.BatchOp
	}
	if err := e.admitBatch(ctx, plain); err != nil {
		return nil, err
	}
	var inRange *docFilter
	err := e.store.View(ctx, func(r kv.Reader) error {
		s, err := e.scope(r, dbID, collID, 0)
		if err != nil {
			return err
		}
		inRange, _, err = s.filter(nil, false, sc)
		return err
	})
	if err != nil {
		return nil, err
	}
	results := make([]BatchResult, len(ops))
	failed := false
	for i, op := range ops {
		if failed && !continueOnError {
			results[i] = BatchResult{Err: lethe.Errorf(lethe.CodeFailedDependency, "Operation was not performed because an earlier operation of the batch failed.")}
			continue
		}
		res, err := e.bulkOp(ctx, dbID, collID, op, inRange)
		if err != nil {
			return nil, err
		}
		results[i] = res
		failed = failed || res.Err != nil
	}
	return results, nil
}

// bulkOp runs one operation of a bulk batch in its own transaction. A
// domain error is the operation's result; any other error is returned.
func (e *Engine) bulkOp(ctx context.Context, dbID, collID string, op BulkOp, inRange *docFilter) (BatchResult, error) {
	if op.PK == nil {
		return BatchResult{Err: pkRequired()}, nil
	}
	patch, err := op.parse()
	if err != nil {
		return BatchResult{Err: err}, nil
	}
	var res BatchResult
	err = e.update(ctx, dbID, collID, func(tx kv.Tx, s *scope) error {
		pk, err := normalizePK(op.PK, s.c.PKPaths)
		if err != nil {
			return err
		}
		if !inRange.matchPK(pk) {
			return &lethe.Error{Code: lethe.CodeGone, SubStatus: 1002, Message: "The operation's partition key is not in the partition key range the request was sent to: refresh the partition key ranges."}
		}
		res, err = e.batchOp(tx, s, pk, op.BatchOp, patch)
		return err
	})
	if err != nil {
		if lethe.ErrorCode(err) == lethe.CodeInternal {
			return BatchResult{}, err
		}
		return BatchResult{Err: err}, nil
	}
	return res, nil
}
