package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// This file holds the sequential specification that
// TestPostgresGatewaysLinearizable checks its histories against: one
// document, read, upserted, created, replaced and deleted, with etags for
// optimistic concurrency. The model is per document; porcupine checks each
// document's operations on their own (a history is linearizable if and only
// if each object's is).

// docKey names one document: its partition key value and its id (ids repeat
// across partition key values, and those are different documents).
type docKey struct{ PK, ID string }

func (k docKey) String() string { return k.PK + "/" + k.ID }

// docOpKind is what an operation does to a document.
type docOpKind uint8

const (
	docRead    docOpKind = iota // ReadItem
	docUpsert                   // UpsertItem, unconditional
	docCreate                   // CreateItem: 409 when the document exists
	docReplace                  // ReplaceItem, with If-Match when IfMatch is set
	docDelete                   // DeleteItem, with If-Match when IfMatch is set
)

func (k docOpKind) String() string {
	return [...]string{"read", "upsert", "create", "replace", "delete"}[k]
}

// writes reports whether the operation, when it succeeds, writes a value.
func (k docOpKind) writes() bool { return k == docUpsert || k == docCreate || k == docReplace }

// docInput is an operation as the client issued it.
type docInput struct {
	Doc  docKey
	Kind docOpKind
	// Value is what upsert, create and replace write; every write of a run
	// writes a value no other write does, so a value names its write.
	Value int64
	// IfMatch is the etag replace or delete sent as If-Match, "" for none.
	IfMatch string
}

// docStatus is how an operation ended.
type docStatus uint8

const (
	statusOK                 docStatus = iota // 200, 201 or 204
	statusNotFound                            // 404
	statusConflict                            // 409 (create)
	statusPreconditionFailed                  // 412 (If-Match)
	// statusUnknown: no definite answer (a transport error, a timeout, a
	// 5xx; or a definite answer to a retry after an attempt without one).
	// The operation may or may not have taken effect. Such an operation is
	// recorded as never returning (Return = math.MaxInt64), so the checker
	// may place it anywhere after its call, including after every other
	// operation, where it is as good as never having happened.
	statusUnknown
)

func (s docStatus) String() string {
	return [...]string{"ok", "404", "409", "412", "unknown"}[s]
}

// docOutput is what the client observed.
type docOutput struct {
	Status docStatus
	// Value and ETag: on a successful read, the document's value and etag;
	// on a successful write, the etag the server returned for the version it
	// wrote.
	Value int64
	ETag  string
}

// docState is the model's state of one document.
type docState struct {
	Exists bool
	Value  int64
	// ETag is the current version's etag, or "" while it is unknown: the
	// version was written by an operation with an unknown outcome and has
	// not been read since. The first read of it learns the etag.
	ETag string
}

// documentModel is the sequential specification of one document: a read
// returns the current value and etag (404 when there is none); a write that
// succeeds installs its value and the etag it returned, which must differ
// from the etag it replaced (reusedETags checks the stronger property, that
// no two writes of a document return the same etag); create fails with 409
// iff the document exists; replace and delete fail with 404 iff it does not
// (If-Match or not, as Cosmos DB does) and otherwise with 412 iff they carry
// an If-Match that is not the current etag.
var documentModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byDoc := map[docKey][]porcupine.Operation{}
		var order []docKey
		for _, op := range history {
			k := op.Input.(docInput).Doc
			if _, ok := byDoc[k]; !ok {
				order = append(order, k)
			}
			byDoc[k] = append(byDoc[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, byDoc[k])
		}
		return out
	},
	Init: func() interface{} { return docState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return stepDocument(state.(docState), input.(docInput), output.(docOutput))
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(docInput), output.(docOutput)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s", in.Kind, in.Doc)
		if in.Kind.writes() {
			fmt.Fprintf(&b, " v=%d", in.Value)
		}
		if in.IfMatch != "" {
			fmt.Fprintf(&b, " if-match %s", in.IfMatch)
		}
		fmt.Fprintf(&b, " -> %s", out.Status)
		switch {
		case out.Status == statusOK && in.Kind == docRead:
			fmt.Fprintf(&b, " v=%d etag %s", out.Value, out.ETag)
		case out.Status == statusOK && in.Kind.writes():
			fmt.Fprintf(&b, " etag %s", out.ETag)
		}
		return b.String()
	},
	DescribeState: func(state interface{}) string {
		st := state.(docState)
		switch {
		case !st.Exists:
			return "absent"
		case st.ETag == "":
			return fmt.Sprintf("v=%d etag unknown", st.Value)
		default:
			return fmt.Sprintf("v=%d etag %s", st.Value, st.ETag)
		}
	},
}

// stepDocument is documentModel's step: whether out is a possible outcome of
// in on a document in state st, and the state after it.
func stepDocument(st docState, in docInput, out docOutput) (bool, docState) {
	if out.Status == statusUnknown {
		return true, applyUnobserved(st, in)
	}
	// ifMatchHolds: the precondition, if any, is met. An unknown etag meets
	// no If-Match: a client only sends an etag it was given, and the read
	// that gave it the current version's etag made it known.
	ifMatchHolds := in.IfMatch == "" || in.IfMatch == st.ETag
	written := docState{Exists: true, Value: in.Value, ETag: out.ETag}
	switch in.Kind {
	case docRead:
		switch out.Status {
		case statusNotFound:
			return !st.Exists, st
		case statusOK:
			if !st.Exists || out.Value != st.Value {
				return false, st
			}
			if st.ETag == "" { // the first read of a version of unknown etag
				return out.ETag != "", docState{Exists: true, Value: st.Value, ETag: out.ETag}
			}
			return out.ETag == st.ETag, st
		}
	case docUpsert:
		if out.Status == statusOK {
			return out.ETag != "" && out.ETag != st.ETag, written
		}
	case docCreate:
		switch out.Status {
		case statusOK:
			return !st.Exists && out.ETag != "", written
		case statusConflict:
			return st.Exists, st
		}
	case docReplace, docDelete:
		switch out.Status {
		case statusNotFound:
			return !st.Exists, st
		case statusPreconditionFailed:
			return st.Exists && !ifMatchHolds, st
		case statusOK:
			if !st.Exists || !ifMatchHolds {
				return false, st
			}
			if in.Kind == docDelete {
				return true, docState{}
			}
			return out.ETag != "" && out.ETag != st.ETag, written
		}
	}
	return false, st
}

// applyUnobserved is the state after an operation whose outcome the client
// never learned, placed here in the order: it did what it would have done.
// (Placed last, it is as if it never ran.) A version it writes has an
// unknown etag.
func applyUnobserved(st docState, in docInput) docState {
	ifMatchHolds := in.IfMatch == "" || in.IfMatch == st.ETag
	written := docState{Exists: true, Value: in.Value}
	switch in.Kind {
	case docUpsert:
		return written
	case docCreate:
		if !st.Exists {
			return written
		}
	case docReplace:
		if st.Exists && ifMatchHolds {
			return written
		}
	case docDelete:
		if st.Exists && ifMatchHolds {
			return docState{}
		}
	}
	return st
}

// reusedETags checks what the per-step model cannot: that every successful
// write of a document returned an etag no other write of it returned, and
// that a read returning one of those etags returned that write's value. It
// returns a description of each violation.
func reusedETags(history []porcupine.Operation) []string {
	type written struct {
		value int64
		op    porcupine.Operation
	}
	byETag := map[docKey]map[string]written{}
	var problems []string
	for _, op := range history {
		in, out := op.Input.(docInput), op.Output.(docOutput)
		if !in.Kind.writes() || out.Status != statusOK {
			continue
		}
		m := byETag[in.Doc]
		if m == nil {
			m = map[string]written{}
			byETag[in.Doc] = m
		}
		if prev, dup := m[out.ETag]; dup {
			problems = append(problems, fmt.Sprintf("%s: two writes returned etag %s: %s and %s", in.Doc, out.ETag,
				documentModel.DescribeOperation(prev.op.Input, prev.op.Output), documentModel.DescribeOperation(in, out)))
			continue
		}
		m[out.ETag] = written{in.Value, op}
	}
	for _, op := range history {
		in, out := op.Input.(docInput), op.Output.(docOutput)
		if in.Kind != docRead || out.Status != statusOK {
			continue
		}
		if w, ok := byETag[in.Doc][out.ETag]; ok && w.value != out.Value {
			problems = append(problems, fmt.Sprintf("%s: a read returned v=%d with the etag of the write of v=%d", in.Doc, out.Value, w.value))
		}
	}
	return problems
}

// TestLinearizabilityModel: the model that TestPostgresGatewaysLinearizable
// relies on accepts hand-written legal histories and rejects illegal ones (a
// stale read, two If-Match replaces winning with one etag, a read of a
// deleted document, ...), so that a pass of that test means something.
func TestLinearizabilityModel(t *testing.T) {
	t.Parallel()
	a := docKey{"p0", "x"}
	b := docKey{"p1", "x"} // same id, other partition key: another document
	never := int64(math.MaxInt64)
	op := func(client int, call, ret int64, in docInput, out docOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	read := func(k docKey) docInput { return docInput{Doc: k, Kind: docRead} }
	write := func(kind docOpKind, k docKey, v int64, ifMatch string) docInput {
		return docInput{Doc: k, Kind: kind, Value: v, IfMatch: ifMatch}
	}
	okWith := func(etag string) docOutput { return docOutput{Status: statusOK, ETag: etag} }
	readOK := func(v int64, etag string) docOutput { return docOutput{Status: statusOK, Value: v, ETag: etag} }
	status := func(s docStatus) docOutput { return docOutput{Status: s} }

	cases := []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"a create, reads, a conditional replace racing a read, a conditional delete, a 404 replace", []porcupine.Operation{
			op(0, 0, 10, read(a), status(statusNotFound)),
			op(0, 20, 30, write(docCreate, a, 1, ""), okWith("e1")),
			op(1, 40, 50, write(docCreate, a, 2, ""), status(statusConflict)),
			op(1, 60, 70, read(a), readOK(1, "e1")),
			op(0, 80, 120, write(docReplace, a, 3, "e1"), okWith("e3")),
			op(1, 90, 100, read(a), readOK(3, "e3")), // within the replace: it took effect before
			op(2, 95, 110, read(a), readOK(3, "e3")),
			op(1, 130, 140, write(docReplace, a, 4, "e1"), status(statusPreconditionFailed)),
			op(1, 150, 160, write(docDelete, a, 0, "e3"), status(statusOK)),
			op(0, 170, 180, write(docReplace, a, 5, "e3"), status(statusNotFound)),
			op(0, 190, 200, write(docDelete, a, 0, ""), status(statusNotFound)),
		}, true},
		{"two documents with one id in two partitions are independent", []porcupine.Operation{
			op(0, 0, 10, write(docUpsert, a, 1, ""), okWith("e1")),
			op(1, 20, 30, read(b), status(statusNotFound)),
			op(1, 40, 50, write(docCreate, b, 2, ""), okWith("e2")),
			op(0, 60, 70, read(a), readOK(1, "e1")),
		}, true},
		{"a read sees a write with no answer, learning its etag, which a replace then uses", []porcupine.Operation{
			op(0, 0, never, write(docUpsert, a, 1, ""), status(statusUnknown)),
			op(1, 10, 20, read(a), status(statusNotFound)),
			op(1, 30, 40, read(a), readOK(1, "e1")),
			op(1, 50, 60, write(docReplace, a, 2, "e1"), okWith("e2")),
			op(2, 70, 80, read(a), readOK(2, "e2")),
		}, true},
		{"a write with no answer that never took effect", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(1, 20, never, write(docDelete, a, 0, "e1"), status(statusUnknown)),
			op(2, 30, 40, read(a), readOK(1, "e1")),
			op(2, 50, 60, write(docReplace, a, 2, "e1"), okWith("e2")),
			op(3, 70, 80, read(a), readOK(2, "e2")),
		}, true},
		{"a stale read after a write returned", []porcupine.Operation{
			op(0, 0, 10, write(docUpsert, a, 1, ""), okWith("e1")),
			op(0, 20, 30, write(docUpsert, a, 2, ""), okWith("e2")),
			op(1, 40, 50, read(a), readOK(1, "e1")),
		}, false},
		{"two concurrent If-Match replaces with one etag both succeed", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(1, 20, 50, write(docReplace, a, 2, "e1"), okWith("e2")),
			op(2, 25, 55, write(docReplace, a, 3, "e1"), okWith("e3")),
		}, false},
		{"two concurrent If-Match deletes with one etag both succeed", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(1, 20, 50, write(docDelete, a, 0, "e1"), status(statusOK)),
			op(2, 25, 55, write(docDelete, a, 0, "e1"), status(statusOK)),
		}, false},
		{"a read of a deleted document returns a value", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(0, 20, 30, write(docDelete, a, 0, ""), status(statusOK)),
			op(1, 40, 50, read(a), readOK(1, "e1")),
		}, false},
		{"a read returns the current value with another etag", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(1, 20, 30, read(a), readOK(1, "e9")),
		}, false},
		{"a 412 for the current etag", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(1, 20, 30, write(docReplace, a, 2, "e1"), status(statusPreconditionFailed)),
		}, false},
		{"a 412, not 404, for If-Match on a deleted document", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(0, 20, 30, write(docDelete, a, 0, ""), status(statusOK)),
			op(0, 40, 50, write(docReplace, a, 2, "e1"), status(statusPreconditionFailed)),
		}, false},
		{"two creates succeed", []porcupine.Operation{
			op(0, 0, 30, write(docCreate, a, 1, ""), okWith("e1")),
			op(1, 10, 40, write(docCreate, a, 2, ""), okWith("e2")),
		}, false},
		{"a write keeps the etag it replaced", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(0, 20, 30, write(docUpsert, a, 2, ""), okWith("e1")),
		}, false},
		{"a read sees another document's write", []porcupine.Operation{
			op(0, 0, 10, write(docCreate, b, 1, ""), okWith("e1")),
			op(1, 20, 30, read(a), readOK(1, "e1")),
		}, false},
		{"a write with no answer is seen, then unseen", []porcupine.Operation{
			op(0, 0, never, write(docUpsert, a, 1, ""), status(statusUnknown)),
			op(1, 10, 20, read(a), readOK(1, "e1")),
			op(1, 30, 40, read(a), status(statusNotFound)),
		}, false},
		{"a version of unknown etag read with two etags", []porcupine.Operation{
			op(0, 0, never, write(docUpsert, a, 1, ""), status(statusUnknown)),
			op(1, 10, 20, read(a), readOK(1, "e1")),
			op(1, 30, 40, read(a), readOK(1, "e2")),
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, info := porcupine.CheckOperationsVerbose(documentModel, c.history, 0)
			if want := map[bool]porcupine.CheckResult{true: porcupine.Ok, false: porcupine.Illegal}[c.legal]; res != want {
				t.Fatalf("checker says %s; want %s", res, want)
			}
			// The visualization TestPostgresGatewaysLinearizable writes on
			// a failure works with this model.
			if err := porcupine.VisualizePath(documentModel, info, filepath.Join(t.TempDir(), "history.html")); err != nil {
				t.Fatalf("visualize: %v", err)
			}
		})
	}

	t.Run("reused etags", func(t *testing.T) {
		history := []porcupine.Operation{
			op(0, 0, 10, write(docCreate, a, 1, ""), okWith("e1")),
			op(0, 20, 30, write(docUpsert, a, 2, ""), okWith("e2")),
			op(0, 40, 50, write(docUpsert, a, 3, ""), okWith("e1")),
			op(1, 60, 70, write(docCreate, b, 4, ""), okWith("e1")), // another document: fine
		}
		if got := reusedETags(history); len(got) != 1 || !strings.Contains(got[0], "two writes returned etag e1") {
			t.Errorf("reusedETags = %q; want the one reuse of e1 on %s", got, a)
		}
		history = []porcupine.Operation{
			op(0, 0, never, write(docUpsert, a, 1, ""), status(statusUnknown)),
			op(0, 10, 20, write(docUpsert, a, 2, ""), okWith("e2")),
			op(1, 30, 40, read(a), readOK(1, "e2")),
		}
		if got := reusedETags(history); len(got) != 1 || !strings.Contains(got[0], "read returned v=1 with the etag of the write of v=2") {
			t.Errorf("reusedETags = %q; want the read of v=1 with v=2's etag", got)
		}
		if got := reusedETags(history[:2]); len(got) != 0 {
			t.Errorf("reusedETags of a clean history = %q", got)
		}
	})
}
