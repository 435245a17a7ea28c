package engine

import (
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
)

// Resource is one resource as served: its JSON body (system properties included)
// and the values the gateway puts in headers.
type Resource struct {
	// Body is the resource's JSON, exactly as returned to clients.
	Body []byte
	// ETag is the quoted _etag.
	ETag string
	// RID is the resource's _rid.
	RID string
	// Charge is the request charge in request units.
	Charge float64
	// ContainerRID is the owning container's _rid for documents; empty otherwise.
	ContainerRID string
	// RangeID is the partition key range holding a document, for its session
	// token; empty for other resources.
	RangeID string
}

// systemProperties are the top-level names the server owns; values a client sends
// for them are replaced.
var systemProperties = []string{"_rid", "_self", "_etag", "_ts", "_attachments"}

// maxNameBytes bounds database and container ids; document ids have their own bound.
const (
	maxNameBytes = 255
	maxIDBytes   = 1023
	maxDocBytes  = 2 << 20 // 2 MB, Cosmos DB's document size limit
	maxBatchOps  = 100
	defaultPage  = 100
	maxPage      = 1000
	maxPageBytes = 4 << 20
)

// validateResourceName applies Cosmos DB's rules to a database or container id.
func validateResourceName(kind string, v jsonv.Value, present bool) (string, error) {
	if !present {
		return "", lethe.Errorf(lethe.CodeBadRequest, "The input content is invalid because the required properties - 'id; ' - are missing")
	}
	s, ok := v.(string)
	if !ok {
		return "", lethe.Errorf(lethe.CodeBadRequest, "The %s id must be a string.", kind)
	}
	if s == "" || len(s) > maxNameBytes || strings.HasSuffix(s, " ") || strings.ContainsAny(s, `/\?#`) {
		return "", lethe.Errorf(lethe.CodeBadRequest, "The %s id '%s' is invalid: it must be 1 to %d characters, must not end with a space, and must not contain '/', '\\', '?' or '#'.", kind, truncate(s, 100), maxNameBytes)
	}
	return s, nil
}

// validateDocumentID applies Cosmos DB's rules to a document id: a non-empty
// string of at most 1023 bytes. Any character is allowed, '/', '\', '#', '?',
// '%', control characters and trailing spaces included, as Cosmos DB's compute
// gateway allows them: requests carry the id percent-encoded in one path
// segment, which the gateway decodes on its own (its older routing gateway
// refused some of these).
func validateDocumentID(v jsonv.Value, present bool) (string, error) {
	if !present {
		return "", lethe.Errorf(lethe.CodeBadRequest, "The input content is invalid because the required properties - 'id; ' - are missing")
	}
	s, ok := v.(string)
	if !ok {
		return "", lethe.Errorf(lethe.CodeBadRequest, "The input content is invalid because the property 'id' must be a string, found %s.", jsonv.TypeName(v))
	}
	if s == "" {
		return "", lethe.Errorf(lethe.CodeBadRequest, "The input name '' is invalid. Ensure to provide a unique non-empty string less than '%d' characters.", maxIDBytes+1)
	}
	if len(s) > maxIDBytes {
		return "", lethe.Errorf(lethe.CodeBadRequest, "The input name is invalid: the id is %d bytes long; the limit is %d.", len(s), maxIDBytes)
	}
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// stampSystem removes client-sent system properties from o and appends the
// server's, in Cosmos DB's order.
func stampSystem(o *jsonv.Object, rid, self, etag string, ts int64, extra ...string) {
	for _, k := range systemProperties {
		o.Delete(k)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		o.Delete(extra[i])
	}
	o.Set("_rid", rid)
	o.Set("_self", self)
	o.Set("_etag", etag)
	for i := 0; i+1 < len(extra); i += 2 {
		o.Set(extra[i], extra[i+1])
	}
	o.Set("_ts", jsonv.Number(strconv.FormatInt(ts, 10)))
}

func notFound() error {
	return lethe.Errorf(lethe.CodeNotFound, "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found")
}

// badBody is the BadRequest for a body jsonv refuses: malformed, or JSON that
// cannot mean one thing (a duplicate name, a number beyond a double), with
// what is wrong and where.
func badBody(err error) error {
	return lethe.Errorf(lethe.CodeBadRequest, "The request body is not valid JSON: %s.", err.Error())
}

// CheckJSON returns BadRequest, with badBody's message, unless body is one
// JSON value that jsonv.Parse accepts: no syntax error, no duplicate member
// name at any depth, no number beyond a double's range. Bodies decoded with
// encoding/json go through it first, so its lenient decoding (the last of
// duplicate members wins, an overflowing number is an error without a
// position) never sees them.
func CheckJSON(body []byte) error {
	if _, err := jsonv.Parse(body); err != nil {
		return badBody(err)
	}
	return nil
}

func isNotFound(err error) bool {
	return lethe.ErrorCode(err) == lethe.CodeNotFound
}
