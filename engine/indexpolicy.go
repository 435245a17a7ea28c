package engine

import (
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
)

// arrayElem is the path segment that stands for "any element of an array", as
// "[]" does in Cosmos DB index paths (/tags/[]/?).
const arrayElem = "[]"

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
	if ip == nil || ip.none {
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

// parsePathPattern parses an index path such as /*, /a/?, /a/[]/b/* or /"a b"/?.
func parsePathPattern(s string) (pathPattern, error) {
	bad := lethe.Errorf(lethe.CodeBadRequest, "The indexing path '%s' could not be accepted: it must start with '/' and end with '/?' or '/*'.", truncate(s, 100))
	if !strings.HasPrefix(s, "/") {
		return pathPattern{}, bad
	}
	var p pathPattern
	switch {
	case s == "/*":
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
