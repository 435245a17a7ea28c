package engine

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/query"
)

// arrayElem is the path segment that stands for "any element of an array", as
// "[]" does in Cosmos DB index paths (/tags/[]/?), and as it does in the
// paths of the query planner's element hints.
const arrayElem = query.ElementSegment

// pathPattern is one included or excluded path of an indexing policy:
// segments, then "?" (exactly the value at that path) or "*" (that path and
// everything under it).
type pathPattern struct {
	segs  []string
	exact bool // terminal "?"
}

// precision ranks patterns: the most precise match decides whether a path is
// indexed, as in Cosmos DB.
func (p pathPattern) precision() int {
	n := 2 * len(p.segs)
	if p.exact {
		n++
	}
	return n
}

func (p pathPattern) matches(path []string) bool {
	if p.exact && len(path) != len(p.segs) || len(path) < len(p.segs) {
		return false
	}
	for i, s := range p.segs {
		if path[i] != s {
			return false
		}
	}
	return true
}

// indexPolicy decides which scalar leaves of a document are indexed.
type indexPolicy struct {
	none     bool
	included []pathPattern
	excluded []pathPattern
}

// indexed reports whether the scalar value at path gets an index entry.
func (ip *indexPolicy) indexed(path []string) bool {
	if ip == nil || ip.none || len(path) > 0 && unindexedRootKey(path[0]) {
		return false
	}
	best, on := -1, false
	for _, p := range ip.included {
		if p.matches(path) && p.precision() > best {
			best, on = p.precision(), true
		}
	}
	for _, p := range ip.excluded {
		if p.matches(path) && p.precision() >= best {
			best, on = p.precision(), false
		}
	}
	return on
}

// unindexedRootKey reports whether a document's top-level member k is left
// out of the index whatever the policy says: the system properties that
// stand for the document's links and version (_self, _attachments, _etag),
// which the engine stamps on every document and queries rarely filter on.
// The planner must know it too, or a query on them would find no entries
// and return nothing.
func unindexedRootKey(k string) bool {
	return k == "_self" || k == "_attachments" || k == "_etag"
}

// parsePathPattern parses an index path such as /*, /a/?, /a/[]/b/* or /"a b"/?.
// A lone "/" is the root path as older SDKs spell it (the path syntax before
// the 2015-06-03 API): the whole document, exactly like /*.
func parsePathPattern(s string) (pathPattern, error) {
	bad := lethe.Errorf(lethe.CodeBadRequest, "The indexing path '%s' could not be accepted: it must start with '/' and end with '/?' or '/*'.", truncate(s, 100))
	if !strings.HasPrefix(s, "/") {
		return pathPattern{}, bad
	}
	var p pathPattern
	switch {
	case s == "/*", s == "/":
		return p, nil
	case s == "/?":
		return pathPattern{}, bad
	case strings.HasSuffix(s, "/?"):
		p.exact = true
	case strings.HasSuffix(s, "/*"):
	default:
		return pathPattern{}, bad
	}
	body := s[:len(s)-2]
	if body == "" {
		return pathPattern{}, bad
	}
	segs, err := splitIndexPath(body)
	if err != nil {
		return pathPattern{}, bad
	}
	p.segs = segs
	return p, nil
}

// splitIndexPath splits /a/"b c"/[] into segments, allowing the array marker.
func splitIndexPath(p string) ([]string, error) {
	var out []string
	rest := p
	for rest != "" {
		if rest[0] != '/' {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "bad path")
		}
		rest = rest[1:]
		var seg string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, lethe.Errorf(lethe.CodeBadRequest, "bad path")
			}
			seg, rest = rest[1:end+1], rest[end+2:]
		} else if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i:]
		} else {
			seg, rest = rest, ""
		}
		if seg == "" || (seg != arrayElem && strings.ContainsAny(seg, "*?[]")) {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "bad path")
		}
		out = append(out, seg)
	}
	return out, nil
}

// compileIndexPolicy validates a container's indexingPolicy object (already
// filled with defaults) and returns its compiled form and the path lists.
func compileIndexPolicy(ip *jsonv.Object, mode string) (*indexPolicy, []string, []string, error) {
	out := &indexPolicy{none: mode == "none"}
	var inc, exc []string
	for _, list := range []struct {
		name string
		dst  *[]pathPattern
		raw  *[]string
	}{{"includedPaths", &out.included, &inc}, {"excludedPaths", &out.excluded, &exc}} {
		v, _ := ip.Get(list.name)
		items, ok := v.([]jsonv.Value)
		if v != nil && !ok {
			return nil, nil, nil, lethe.Errorf(lethe.CodeBadRequest, "The indexing policy's '%s' must be an array.", list.name)
		}
		for _, it := range items {
			o, ok := it.(*jsonv.Object)
			if !ok {
				return nil, nil, nil, lethe.Errorf(lethe.CodeBadRequest, "Each entry of '%s' must be an object with a 'path'.", list.name)
			}
			pv, _ := o.Get("path")
			ps, ok := pv.(string)
			if !ok {
				return nil, nil, nil, lethe.Errorf(lethe.CodeBadRequest, "Each entry of '%s' must have a string 'path'.", list.name)
			}
			pat, err := parsePathPattern(ps)
			if err != nil {
				return nil, nil, nil, err
			}
			if err := normalizeIndexes(o, ps); err != nil {
				return nil, nil, nil, err
			}
			*list.dst = append(*list.dst, pat)
			*list.raw = append(*list.raw, ps)
		}
	}
	return out, inc, exc, nil
}

// policyFromPaths rebuilds a compiled policy from the stored path lists.
func policyFromPaths(mode string, inc, exc []string) *indexPolicy {
	out := &indexPolicy{none: mode == "none"}
	for _, s := range inc {
		if p, err := parsePathPattern(s); err == nil {
			out.included = append(out.included, p)
		}
	}
	for _, s := range exc {
		if p, err := parsePathPattern(s); err == nil {
			out.excluded = append(out.excluded, p)
		}
	}
	return out
}

// Legacy index specifications. Older SDKs (the Node documentdb SDK, .NET v2)
// send each path with an "indexes" array of {kind, dataType, precision}:
// Hash, Range or Spatial indexes per data type. Cosmos DB has range-indexed
// every string and number at full precision since 2019 and ignores these
// arrays: it validates them and reads them back empty ("indexes": []).

// indexKinds maps each legacy index kind, in any case, to the data types it
// may index.
var indexKinds = map[string][]string{
	"hash":    {"string", "number"},
	"range":   {"string", "number"},
	"spatial": {"point", "polygon", "linestring", "multipolygon"},
}

// normalizeIndexes validates the legacy "indexes" array of one included or
// excluded path entry and empties it, as Cosmos DB reads it back. An entry
// without one is left as it is.
func normalizeIndexes(entry *jsonv.Object, path string) error {
	v, ok := entry.Get("indexes")
	if !ok || v == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return lethe.Errorf(lethe.CodeBadRequest, "The index specification of path '%s' is invalid: %s", truncate(path, 100), fmt.Sprintf(format, args...))
	}
	list, ok := v.([]jsonv.Value)
	if !ok {
		return bad("'indexes' must be an array.")
	}
	for _, it := range list {
		ix, ok := it.(*jsonv.Object)
		if !ok {
			return bad("each index must be an object with 'kind' and 'dataType'.")
		}
		kindV, _ := ix.Get("kind")
		kind, _ := kindV.(string)
		types, ok := indexKinds[strings.ToLower(kind)]
		if !ok {
			return bad("the index kind %s is unknown; use 'Range', 'Hash' or 'Spatial'.", truncate(string(jsonv.Marshal(kindV)), 50))
		}
		dv, _ := ix.Get("dataType")
		dt, _ := dv.(string)
		if !slices.Contains(types, strings.ToLower(dt)) {
			return bad("the data type %s cannot have a %s index.", truncate(string(jsonv.Marshal(dv)), 50), kind)
		}
		if why := checkPrecision(ix, strings.ToLower(kind)); why != "" {
			return bad("%s", why)
		}
	}
	entry.Set("indexes", []jsonv.Value{})
	return nil
}

// checkPrecision validates a legacy index's precision: absent or null, -1
// (maximum), 1 to 8 for a hash index, 1 to 100 for a range index; a spatial
// index has none. It returns why the precision is refused, "" if it is not.
func checkPrecision(ix *jsonv.Object, kind string) string {
	pv, ok := ix.Get("precision")
	if !ok || pv == nil {
		return ""
	}
	if kind == "spatial" {
		return "a spatial index has no precision."
	}
	n, isNum := pv.(jsonv.Number)
	f, err := strconv.ParseFloat(string(n), 64)
	limit := map[string]float64{"hash": 8, "range": 100}[kind]
	if !isNum || err != nil || f != math.Trunc(f) || (f != -1 && (f < 1 || f > limit)) {
		return fmt.Sprintf("the precision %s is out of range for a %s index; use -1 (maximum) or 1 to %v.", truncate(string(jsonv.Marshal(pv)), 50), kind, limit)
	}
	return ""
}
