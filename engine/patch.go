package engine

import (
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
)

// maxPatchOps is Cosmos DB's limit on operations in one patch request.
const maxPatchOps = 10

// patchOp is one decoded patch operation.
type patchOp struct {
	op    string // add, set, replace, remove, incr, move
	path  []string
	from  []string // move only
	value jsonv.Value
	raw   string // the path as sent, for messages
}

// Patch is a parsed patch request: operations and an optional condition.
type Patch struct {
	ops  []patchOp
	cond *query.Condition
}

func patchError(format string, args ...any) error {
	return lethe.Errorf(lethe.CodeBadRequest, format, args...)
}

// ParsePatch parses a patch request body: {"condition"?: "FROM c WHERE ...",
// "operations": [...]} (the Go SDK's form) or a bare array of operations (the
// JavaScript SDK's). Returns BadRequest for anything malformed.
func ParsePatch(body []byte) (*Patch, error) {
	v, err := jsonv.Parse(body)
	if err != nil {
		return nil, badBody(err)
	}
	var opsV jsonv.Value
	p := &Patch{}
	switch t := v.(type) {
	case []jsonv.Value:
		opsV = t
	case *jsonv.Object:
		opsV, _ = t.Get("operations")
		if c, ok := t.Get("condition"); ok && c != nil {
			cs, ok := c.(string)
			if !ok {
				return nil, patchError("The patch condition must be a string.")
			}
			cond, err := query.ParseCondition(cs)
			if err != nil {
				return nil, patchError("The patch condition is invalid: %s", err.Error())
			}
			p.cond = cond
		}
	default:
		return nil, patchError("The patch request body must be an object with 'operations' or an array of operations.")
	}
	list, ok := opsV.([]jsonv.Value)
	if !ok || len(list) == 0 {
		return nil, patchError("The patch request must contain at least one operation in 'operations'.")
	}
	if len(list) > maxPatchOps {
		return nil, patchError("The number of patch operations (%d) exceeds the limit of %d.", len(list), maxPatchOps)
	}
	for i, item := range list {
		o, ok := item.(*jsonv.Object)
		if !ok {
			return nil, patchError("Patch operation %d must be an object.", i)
		}
		opV, _ := o.Get("op")
		op, _ := opV.(string)
		op = strings.ToLower(op)
		pathV, _ := o.Get("path")
		rawPath, _ := pathV.(string)
		path, err := parsePointer(rawPath)
		if err != nil {
			return nil, patchError("Patch operation %d has an invalid path '%s': %s", i, truncate(rawPath, 100), err.Error())
		}
		po := patchOp{op: op, path: path, raw: rawPath}
		value, hasValue := o.Get("value")
		switch op {
		case "add", "set", "replace":
			if !hasValue {
				return nil, patchError("Patch operation %d (%s) requires a value.", i, op)
			}
			po.value = value
		case "incr":
			if _, ok := value.(jsonv.Number); !ok {
				return nil, patchError("Patch operation %d (incr) requires a numeric value.", i)
			}
			po.value = value
		case "remove":
		case "move":
			fromV, _ := o.Get("from")
			rawFrom, _ := fromV.(string)
			from, err := parsePointer(rawFrom)
			if err != nil {
				return nil, patchError("Patch operation %d (move) has an invalid from '%s': %s", i, truncate(rawFrom, 100), err.Error())
			}
			if strings.HasPrefix(rawPath+"/", rawFrom+"/") {
				return nil, patchError("Patch operation %d (move) cannot move '%s' into itself.", i, rawFrom)
			}
			po.from = from
		default:
			return nil, patchError("Patch operation %d has an invalid op '%v'; use add, set, replace, remove, incr or move.", i, opV)
		}
		if path[0] == "id" || path[0] == "_rid" || path[0] == "_self" || path[0] == "_etag" || path[0] == "_ts" || path[0] == "_attachments" {
			return nil, patchError("Patch operation %d cannot modify the system property '/%s'.", i, path[0])
		}
		p.ops = append(p.ops, po)
	}
	return p, nil
}

// parsePointer parses a JSON Pointer (RFC 6901) such as /a/b/0.
func parsePointer(s string) ([]string, error) {
	if s == "" || s[0] != '/' || s == "/" {
		return nil, patchError("a path must start with '/' and name a property")
	}
	parts := strings.Split(s[1:], "/")
	for i, p := range parts {
		if p == "" {
			return nil, patchError("empty segment")
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// apply runs the operations on a copy of doc, in order.
func (p *Patch) apply(doc *jsonv.Object) (*jsonv.Object, error) {
	out := jsonv.Clone(doc).(*jsonv.Object)
	for _, op := range p.ops {
		var err error
		switch op.op {
		case "add":
			err = setAt(out, op.path, jsonv.Clone(op.value), true, false)
		case "set":
			err = setAt(out, op.path, jsonv.Clone(op.value), false, false)
		case "replace":
			err = setAt(out, op.path, jsonv.Clone(op.value), false, true)
		case "remove":
			_, err = removeAt(out, op.path)
		case "incr":
			err = incrAt(out, op.path, op.value.(jsonv.Number))
		case "move":
			var v jsonv.Value
			if v, err = removeAt(out, op.from); err == nil {
				err = setAt(out, op.path, v, false, false)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parentOf walks to the container of the last path segment.
func parentOf(doc *jsonv.Object, path []string) (jsonv.Value, error) {
	var cur jsonv.Value = doc
	for _, seg := range path[:len(path)-1] {
		switch c := cur.(type) {
		case *jsonv.Object:
			v, ok := c.Get(seg)
			if !ok {
				return nil, pathMissing(path)
			}
			cur = v
		case []jsonv.Value:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, pathMissing(path)
			}
			cur = c[i]
		default:
			return nil, pathMissing(path)
		}
	}
	return cur, nil
}

func pathMissing(path []string) error {
	return patchError("The patch path '/%s' does not exist in the document.", strings.Join(path, "/"))
}

// setAt implements add (insert into arrays), set (overwrite array elements) and
// replace (the target must exist).
func setAt(doc *jsonv.Object, path []string, v jsonv.Value, insert, mustExist bool) error {
	parent, err := parentOf(doc, path)
	if err != nil {
		return err
	}
	last := path[len(path)-1]
	switch c := parent.(type) {
	case *jsonv.Object:
		if _, ok := c.Get(last); mustExist && !ok {
			return pathMissing(path)
		}
		c.Set(last, v)
		return nil
	case []jsonv.Value:
		// add inserts at 0..len ("-" appends); set overwrites 0..len-1 and appends
		// at len; replace overwrites 0..len-1 only.
		n := len(c)
		i, err := strconv.Atoi(last)
		if last == "-" {
			i, err = n, nil
		}
		if err != nil || i < 0 || i > n || (mustExist && i == n) {
			return patchError("The patch path '/%s' is not a valid array index.", strings.Join(path, "/"))
		}
		var out []jsonv.Value
		if insert || i == n {
			out = make([]jsonv.Value, 0, n+1)
			out = append(append(append(out, c[:i]...), v), c[i:]...)
		} else {
			out = append([]jsonv.Value(nil), c...)
			out[i] = v
		}
		return replaceChild(doc, path[:len(path)-1], out)
	}
	return pathMissing(path)
}

// removeAt removes and returns the value at path, which must exist.
func removeAt(doc *jsonv.Object, path []string) (jsonv.Value, error) {
	parent, err := parentOf(doc, path)
	if err != nil {
		return nil, err
	}
	last := path[len(path)-1]
	switch c := parent.(type) {
	case *jsonv.Object:
		v, ok := c.Get(last)
		if !ok {
			return nil, pathMissing(path)
		}
		c.Delete(last)
		return v, nil
	case []jsonv.Value:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return nil, pathMissing(path)
		}
		v := c[i]
		out := append(append([]jsonv.Value(nil), c[:i]...), c[i+1:]...)
		return v, replaceChild(doc, path[:len(path)-1], out)
	}
	return nil, pathMissing(path)
}

// replaceChild stores a new array at path (arrays are values, not references).
func replaceChild(doc *jsonv.Object, path []string, v jsonv.Value) error {
	if len(path) == 0 {
		return patchError("The document root cannot be replaced by an array.")
	}
	return setAt(doc, path, v, false, true)
}

func incrAt(doc *jsonv.Object, path []string, by jsonv.Number) error {
	parent, err := parentOf(doc, path)
	if err != nil {
		return err
	}
	last := path[len(path)-1]
	var cur jsonv.Value
	exists := false
	switch c := parent.(type) {
	case *jsonv.Object:
		cur, exists = c.Get(last)
	case []jsonv.Value:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return pathMissing(path)
		}
		cur, exists = c[i], true
	default:
		return pathMissing(path)
	}
	if !exists {
		return setAt(doc, path, by, false, false)
	}
	n, ok := cur.(jsonv.Number)
	if !ok {
		return patchError("The patch path '/%s' holds a %s; incr needs a number.", strings.Join(path, "/"), jsonv.TypeName(cur))
	}
	var sum jsonv.Number
	a, errA := strconv.ParseInt(string(n), 10, 64)
	b, errB := strconv.ParseInt(string(by), 10, 64)
	if errA == nil && errB == nil && !((b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b)) {
		sum = jsonv.Number(strconv.FormatInt(a+b, 10))
	} else {
		f := n.Float64() + by.Float64()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return patchError("The incr at '/%s' overflows.", strings.Join(path, "/"))
		}
		sum = jsonv.NumberFromFloat(f)
	}
	return setAt(doc, path, sum, false, true)
}

func (s *scope) patchTx(e *Engine, tx kv.Tx, suffix []byte, ref DocRef, p *Patch, ifMatch string) (*docRecord, error) {
	live, err := s.liveFor(tx, suffix, ifMatch)
	if err != nil {
		return nil, err
	}
	cur, err := jsonv.ParseStoredObject(live.json)
	if err != nil {
		return nil, err
	}
	if p.cond != nil {
		ok, err := p.cond.MatchAt(cur, s.at)
		if err != nil {
			return nil, patchError("The patch condition could not be evaluated: %s", err.Error())
		}
		if !ok {
			return nil, preconditionFailed()
		}
	}
	next, err := p.apply(cur)
	if err != nil {
		return nil, err
	}
	prep, err := s.prepare(next, ref.PK)
	if err != nil {
		if lethe.ErrorMessage(err) == lethe.ErrorMessage(pkMismatch()) {
			return nil, patchError("Patch cannot change the partition key of a document.")
		}
		return nil, err
	}
	if prep.id != ref.ID {
		return nil, patchError("Patch cannot change the id of a document.")
	}
	prep.prevObj = cur // apply left it as stored: it cloned it
	return s.write(e, tx, prep, live, true)
}

// PatchDocument applies a patch to a live document. Returns NotFound when it is
// absent or expired, PreconditionFailed when If-Match or the condition fails,
// BadRequest for operations that do not apply.
func (e *Engine) PatchDocument(ctx context.Context, ref DocRef, p *Patch, cond Conditions) (WriteResult, error) {
	defer e.begin()()
	return e.writeDocument(ctx, ref, true, func(tx kv.Tx, s *scope) (*docRecord, bool, error) {
		suffix, err := s.refSuffix(ref)
		if err != nil {
			return nil, false, err
		}
		rec, err := s.patchTx(e, tx, suffix, ref, p, cond.IfMatch)
		return rec, false, err
	})
}
