package engine

import (
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
)

// splitPath splits a partition key path such as /a/b or /"a b"/c into segments.
func splitPath(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") || len(p) < 2 {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key path '%s' is invalid: it must start with '/' and name a property.", truncate(p, 100))
	}
	var segs []string
	rest := p[1:]
	for {
		var seg string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key path '%s' has an unterminated quote.", truncate(p, 100))
			}
			seg, rest = rest[1:end+1], rest[end+2:]
			if rest != "" && !strings.HasPrefix(rest, "/") {
				return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key path '%s' is invalid.", truncate(p, 100))
			}
		} else if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i:]
		} else {
			seg, rest = rest, ""
		}
		if seg == "" || strings.ContainsAny(seg, "*?[]") {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key path '%s' is invalid.", truncate(p, 100))
		}
		segs = append(segs, seg)
		if rest == "" {
			return segs, nil
		}
		rest = rest[1:]
	}
}

// extractPK reads a document's partition key value at the container's paths.
// A missing value is Undefined. Objects and arrays cannot be key values.
func extractPK(o *jsonv.Object, paths []string) (lethe.PartitionKey, error) {
	pk := make(lethe.PartitionKey, len(paths))
	for i, p := range paths {
		segs, err := splitPath(p)
		if err != nil {
			return nil, err
		}
		var cur jsonv.Value = o
		found := true
		for _, s := range segs {
			obj, ok := cur.(*jsonv.Object)
			if !ok {
				found = false
				break
			}
			if cur, ok = obj.Get(s); !ok {
				found = false
				break
			}
		}
		if !found {
			pk[i] = lethe.Undefined{}
			continue
		}
		switch v := cur.(type) {
		case nil, bool, string:
			pk[i] = v
		case jsonv.Number:
			pk[i] = v.Float64()
		default:
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The partition key value at path '%s' must be a string, number, boolean or null, not %s.", p, jsonv.TypeName(cur))
		}
	}
	return pk, nil
}

// normalizePK checks a partition key from a request header against the
// container's definition. An empty key ("[]") stands for an undefined value.
func normalizePK(pk lethe.PartitionKey, paths []string) (lethe.PartitionKey, error) {
	if len(pk) == 0 {
		pk = make(lethe.PartitionKey, len(paths))
		for i := range pk {
			pk[i] = lethe.Undefined{}
		}
		return pk, nil
	}
	if len(pk) != len(paths) {
		return nil, pkMismatch()
	}
	return pk, nil
}

func pkMismatch() error {
	return lethe.Errorf(lethe.CodeBadRequest, "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document.")
}

func pkRequired() error {
	return lethe.Errorf(lethe.CodeBadRequest, "PartitionKey value must be supplied for this operation.")
}
