package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// sdkErrorMessage fails the test unless err is an SDK response error with
// status whose Cosmos error body {"code","message"} has code, and returns the
// message. (The SDK does not read a top-level "code": its ErrorCode is the
// status text.)
func sdkErrorMessage(t testing.TB, what string, err error, status int, code string) string {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Errorf("%s: %v; want a response error with status %d", what, err, status)
		return ""
	}
	if re.StatusCode != status {
		t.Errorf("%s: status %d; want %d", what, re.StatusCode, status)
	}
	b, _ := io.ReadAll(re.RawResponse.Body) // azcore keeps the body readable
	var e struct{ Code, Message string }
	if err := json.Unmarshal(b, &e); err != nil || e.Code != code {
		t.Errorf("%s: error body %q is not {\"code\":%q,\"message\"}", what, truncateForLog(b), code)
	}
	return e.Message
}

// wantMessage fails the test unless msg is want exactly or, when want starts
// with '^', matches it as a regular expression.
func wantMessage(t testing.TB, what, msg, want string) {
	t.Helper()
	if strings.HasPrefix(want, "^") {
		if !regexp.MustCompile(want).MatchString(msg) {
			t.Errorf("%s: message %q; want it to match %s", what, msg, want)
		}
		return
	}
	if msg != want {
		t.Errorf("%s: message\n got %q\nwant %q", what, msg, want)
	}
}

const notJSON = "The request body is not valid JSON: "

// TestAmbiguousJSON proves that JSON which cannot mean one thing (a member
// name twice at any depth, a number beyond a double) is refused with 400
// BadRequest and a message saying what and where, in every body the server
// parses: items through the official Go SDK (which sends item bytes as given,
// and patch values, batch bodies and query parameters through json.Marshal,
// which keeps duplicates), and raw signed requests for the forms it cannot
// send (the JavaScript SDK's bare patch array, container, database and offer
// bodies). Afterwards every feed is byte-for-byte unchanged and the offer
// keeps its throughput and etag.
func TestAmbiguousJSON(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "sj")
	cc := mustContainer(t, db, pkContainer("c", nil))
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := cc.CreateItem(ctx, pk, []byte(`{"id":"existing","pk":"p","v":0}`), nil); err != nil {
		t.Fatal(err)
	}
	tp := azcosmos.NewManualThroughputProperties(400)
	if _, err := db.CreateContainer(ctx, pkContainer("o", nil), &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	offerID, offerBefore := containerOffer(t, s, c, "sj", "o")

	snapshot := func() map[string]string {
		return s.snapshot(t, "/dbs", "/dbs/sj/colls", docsPath("sj", "c"), collPath("sj", "c"))
	}
	before := snapshot()

	t.Run("items through the Go SDK", func(t *testing.T) {
		long := strings.Repeat("7", 400)
		for _, tc := range []struct {
			op, body, want string
		}{
			{"create", `{"id":"dup","pk":"p","id":"other"}`, notJSON + "duplicate property name 'id' at offset 21."},
			{"create", `{"id":"n","pk":"p","v":-` + long + `}`, notJSON + "the number '-" + long[:63] + "...' at offset 23 does not fit a 64-bit floating-point value."},
			{"upsert", `{"id":"existing","pk":"p","v":1,"x":{"k":1,"k":2}}`, notJSON + "duplicate property name 'k' at offset 43."},
			{"upsert", `{"id":"new","pk":"p","a":[{"b":[{"c":1,"c":1}]}]}`, notJSON + "duplicate property name 'c' at offset 39."},
			{"replace", `{"id":"existing","pk":"p","v":1e400}`, notJSON + "the number '1e400' at offset 30 does not fit a 64-bit floating-point value."},
			{"replace", `{"id":"existing","pk":"p","v":1,"v":2}`, notJSON + "duplicate property name 'v' at offset 32."},
		} {
			var err error
			switch tc.op {
			case "create":
				_, err = cc.CreateItem(ctx, pk, []byte(tc.body), nil)
			case "upsert":
				_, err = cc.UpsertItem(ctx, pk, []byte(tc.body), nil)
			case "replace":
				_, err = cc.ReplaceItem(ctx, pk, "existing", []byte(tc.body), nil)
			}
			what := tc.op + " " + tc.body[:min(len(tc.body), 60)]
			wantMessage(t, what, sdkErrorMessage(t, what, err, http.StatusBadRequest, "BadRequest"), tc.want)
		}
		for _, id := range []string{"dup", "other", "n", "new"} {
			if st := readStatus(t, cc, pk, id); st != http.StatusNotFound {
				t.Errorf("read %s after refused writes: %d; want 404", id, st)
			}
		}
	})

	t.Run("patch, batch and query parameters through the Go SDK", func(t *testing.T) {
		var ops azcosmos.PatchOperations
		ops.AppendSet("/x", json.RawMessage(`{"k":1,"k":2}`))
		_, err := cc.PatchItem(ctx, pk, "existing", ops, nil)
		wantMessage(t, "patch", sdkErrorMessage(t, "patch", err, http.StatusBadRequest, "BadRequest"), `^`+notJSON+`duplicate property name 'k' at offset \d+\.$`)
		var big azcosmos.PatchOperations
		big.AppendReplace("/v", json.RawMessage(`1e309`))
		_, err = cc.PatchItem(ctx, pk, "existing", big, nil)
		wantMessage(t, "patch replace", sdkErrorMessage(t, "patch replace", err, http.StatusBadRequest, "BadRequest"), `^`+notJSON+`the number '1e309' at offset \d+ does not fit a 64-bit floating-point value\.$`)

		b := cc.NewTransactionalBatch(pk)
		b.CreateItem([]byte(`{"id":"b1","pk":"p"}`), nil)
		b.UpsertItem([]byte(`{"id":"b2","pk":"p","id":"b3"}`), nil)
		_, err = cc.ExecuteTransactionalBatch(ctx, b, nil)
		wantMessage(t, "batch", sdkErrorMessage(t, "batch", err, http.StatusBadRequest, "BadRequest"), `^`+notJSON+`duplicate property name 'id' at offset \d+\.$`)
		for _, id := range []string{"b1", "b2", "b3"} {
			if st := readStatus(t, cc, pk, id); st != http.StatusNotFound {
				t.Errorf("read %s after a refused batch: %d; want 404", id, st)
			}
		}

		for value, want := range map[string]string{
			`{"a":1,"a":2}`:          `^` + notJSON + `duplicate property name 'a' at offset \d+\.$`,
			strings.Repeat("9", 400): `^` + notJSON + `the number '9{64}\.\.\.' at offset \d+ does not fit a 64-bit floating-point value\.$`,
		} {
			pager := cc.NewQueryItemsPager("SELECT * FROM c WHERE c.v = @v", pk, &azcosmos.QueryOptions{
				QueryParameters: []azcosmos.QueryParameter{{Name: "@v", Value: json.RawMessage(value)}},
			})
			_, err := pager.NextPage(ctx)
			wantMessage(t, "query parameter "+value[:min(len(value), 20)], sdkErrorMessage(t, "query", err, http.StatusBadRequest, "BadRequest"), want)
		}
	})

	t.Run("raw bodies", func(t *testing.T) {
		pkp := hdr("x-ms-documentdb-partitionkey", `["p"]`)
		query := func() map[string]string {
			return hdr("x-ms-documentdb-partitionkey", `["p"]`, "Content-Type", "application/query+json", "x-ms-documentdb-isquery", "True")
		}
		batch := hdr("x-ms-documentdb-partitionkey", `["p"]`, "x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True")
		for _, tc := range []struct {
			name, method, path string
			headers            map[string]string
			body, want         string
		}{
			// The JavaScript SDK's patch: a bare array of operations.
			{"patch array, duplicate op", "PATCH", docPath("sj", "c", "existing"), pkp,
				`[{"op":"set","path":"/v","value":1,"op":"remove"}]`, notJSON + "duplicate property name 'op' at offset 35."},
			{"patch array, value too big", "PATCH", docPath("sj", "c", "existing"), pkp,
				`[{"op":"set","path":"/v","value":-1e999}]`, notJSON + "the number '-1e999' at offset 33 does not fit a 64-bit floating-point value."},
			{"patch object, operations twice", "PATCH", docPath("sj", "c", "existing"), pkp,
				`{"operations":[{"op":"set","path":"/v","value":1}],"operations":[]}`, notJSON + "duplicate property name 'operations' at offset 51."},
			{"query text twice", "POST", docsPath("sj", "c"), query(),
				`{"query":"SELECT * FROM c","query":"SELECT VALUE 1"}`, notJSON + "duplicate property name 'query' at offset 27."},
			{"query parameter value twice", "POST", docsPath("sj", "c"), query(),
				`{"query":"SELECT * FROM c WHERE c.v = @v","parameters":[{"name":"@v","value":0,"value":1}]}`, notJSON + "duplicate property name 'value' at offset 79."},
			{"query parameter too big", "POST", docsPath("sj", "c"), query(),
				`{"query":"SELECT * FROM c WHERE c.v = @v","parameters":[{"name":"@v","value":1e400}]}`, notJSON + "the number '1e400' at offset 77 does not fit a 64-bit floating-point value."},
			{"batch resourceBody", "POST", docsPath("sj", "c"), batch,
				`[{"operationType":"Create","resourceBody":{"id":"b4","pk":"p"}},{"operationType":"Create","resourceBody":{"id":"b5","pk":"p","pk":"q"}}]`, notJSON + "duplicate property name 'pk' at offset 125."},
			{"batch operationType twice", "POST", docsPath("sj", "c"), batch,
				`[{"operationType":"Create","operationType":"Delete","id":"existing","resourceBody":{"id":"existing","pk":"p"}}]`, notJSON + "duplicate property name 'operationType' at offset 27."},
			{"database id twice", "POST", "/dbs", nil,
				`{"id":"d1","id":"d2"}`, notJSON + "duplicate property name 'id' at offset 11."},
			{"container create, paths twice", "POST", "/dbs/sj/colls", nil,
				`{"id":"c2","partitionKey":{"paths":["/pk"],"paths":["/x"]}}`, notJSON + "duplicate property name 'paths' at offset 43."},
			{"container create, number too big", "POST", "/dbs/sj/colls", nil,
				`{"id":"c2","partitionKey":{"paths":["/pk"]},"defaultTtl":1e400}`, notJSON + "the number '1e400' at offset 57 does not fit a 64-bit floating-point value."},
			{"container replace, defaultTtl twice", "PUT", collPath("sj", "c"), nil,
				`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":60,"defaultTtl":-1}`, notJSON + "duplicate property name 'defaultTtl' at offset 59."},
			{"container replace, nested twice", "PUT", collPath("sj", "c"), nil,
				`{"id":"c","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"consistent","indexingMode":"none"}}`, notJSON + "duplicate property name 'indexingMode' at offset 89."},
			{"offer throughput twice", "PUT", "/offers/" + offerID, nil,
				`{"content":{"offerThroughput":500,"offerThroughput":600}}`, notJSON + "duplicate property name 'offerThroughput' at offset 34."},
			{"offer throughput too big", "PUT", "/offers/" + offerID, nil,
				`{"content":{"offerThroughput":1e999}}`, notJSON + "the number '1e999' at offset 30 does not fit a 64-bit floating-point value."},
		} {
			r := s.do(t, tc.method, tc.path, tc.headers, []byte(tc.body))
			msg := r.wantError(t, tc.name, http.StatusBadRequest)
			if code := r.json(t)["code"]; code != "BadRequest" {
				t.Errorf("%s: code %v; want BadRequest", tc.name, code)
			}
			wantMessage(t, tc.name, msg, tc.want)
		}
		for _, p := range []string{collPath("sj", "c2"), "/dbs/d1", "/dbs/d2"} {
			s.do(t, "GET", p, nil, nil).wantError(t, "read "+p+" after a refused create", http.StatusNotFound)
		}
		for _, id := range []string{"b4", "b5"} {
			if st := readStatus(t, cc, pk, id); st != http.StatusNotFound {
				t.Errorf("read %s after a refused batch: %d; want 404", id, st)
			}
		}
	})

	if after := snapshot(); !reflect.DeepEqual(before, after) {
		for k := range before {
			if before[k] != after[k] {
				t.Errorf("refused requests changed %s:\nbefore %s\n after %s", k, truncateForLog([]byte(before[k])), truncateForLog([]byte(after[k])))
			}
		}
	}
	r, err := cc.ReadItem(ctx, pk, "existing", nil)
	if err != nil || string(decodeObjectField(t, r.Value, "v")) != "0" {
		t.Errorf("existing after refused writes: %v %s", err, r.Value)
	}
	if _, offerAfter := containerOffer(t, s, c, "sj", "o"); offerAfter != offerBefore {
		t.Errorf("refused offer replaces changed the offer:\nbefore %s\n after %s", offerBefore, offerAfter)
	}
	// Numbers that only lose precision or underflow are accepted and kept as
	// written (1e-400 reads as 0 in Cosmos DB and in encoding/json).
	body := []byte(`{"id":"fine","pk":"p","a":0.1,"b":9223372036854775808,"c":1e-400,"d":1.7976931348623157e308}`)
	if _, err := cc.CreateItem(ctx, pk, body, nil); err != nil {
		t.Fatalf("create with lossy but finite numbers: %v", err)
	}
	r, err = cc.ReadItem(ctx, pk, "fine", nil)
	if err != nil || !strings.Contains(string(r.Value), `"a":0.1,"b":9223372036854775808,"c":1e-400,"d":1.7976931348623157e308`) {
		t.Errorf("lossy numbers not kept as written: %v %s", err, r.Value)
	}
	var decoded map[string]any
	if err := json.Unmarshal(r.Value, &decoded); err != nil || decoded["c"] != 0.0 {
		t.Errorf("the document does not decode with encoding/json: %v %v", err, decoded)
	}
}

// decodeObjectField returns the raw JSON of one member of a JSON object.
func decodeObjectField(t testing.TB, b []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %q: %v", truncateForLog(b), err)
	}
	return m[name]
}

// containerOffer finds a container's offer through the raw offers API and
// returns its id and body.
func containerOffer(t testing.TB, s *server, c *azcosmos.Client, db, coll string) (string, string) {
	t.Helper()
	cc, err := c.NewContainer(db, coll)
	if err != nil {
		t.Fatal(err)
	}
	props, err := cc.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := s.do(t, http.MethodPost, "/offers", hdr("Content-Type", "application/query+json"),
		mustMarshal(t, map[string]any{"query": "SELECT * FROM c WHERE c.offerResourceId = @rid", "parameters": []any{map[string]any{"name": "@rid", "value": props.ContainerProperties.ResourceID}}}))
	q.wantStatus(t, "offers query", http.StatusOK)
	var feed struct{ Offers []json.RawMessage }
	if err := json.Unmarshal(q.Body, &feed); err != nil || len(feed.Offers) != 1 {
		t.Fatalf("offers of %s/%s: %v %s", db, coll, err, q.Body)
	}
	id := string(decodeObjectField(t, feed.Offers[0], "id"))
	one := s.do(t, http.MethodGet, "/offers/"+strings.Trim(id, `"`), nil, nil)
	one.wantStatus(t, "read offer", http.StatusOK)
	return strings.Trim(id, `"`), string(one.Body)
}

// TestContainerDefaultTTLNull proves that an explicit "defaultTtl": null is
// refused with 400 and the defaultTtl message, on create and on replace, as
// Cosmos DB refuses it, and changes nothing; and that leaving the property
// out (what the Go SDK sends for a nil DefaultTimeToLive) turns TTL off.
func TestContainerDefaultTTLNull(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "nullttl")
	const want = "The input defaultTtl 'null' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."

	r := s.do(t, "POST", "/dbs/nullttl/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":null}`))
	wantMessage(t, "create with defaultTtl null", r.wantError(t, "create with defaultTtl null", http.StatusBadRequest), want)
	if code := r.json(t)["code"]; code != "BadRequest" {
		t.Errorf("create with defaultTtl null: code %v", code)
	}
	s.do(t, "GET", collPath("nullttl", "n"), nil, nil).wantError(t, "read after a refused create", http.StatusNotFound)

	cc := mustContainer(t, db, pkContainer("c", i32(60)))
	props, err := cc.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	etag := props.ETag
	r = s.do(t, "PUT", collPath("nullttl", "c"), nil, []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":null}`))
	wantMessage(t, "replace with defaultTtl null", r.wantError(t, "replace with defaultTtl null", http.StatusBadRequest), want)
	props, err = cc.Read(ctx, nil)
	if err != nil || props.ContainerProperties.DefaultTimeToLive == nil || *props.ContainerProperties.DefaultTimeToLive != 60 || props.ETag != etag {
		t.Fatalf("after a refused replace: %v, defaultTtl %v, etag %s (was %s)", err, props.ContainerProperties.DefaultTimeToLive, props.ETag, etag)
	}

	// The SDK leaves a nil DefaultTimeToLive out, which turns TTL off.
	cp := *props.ContainerProperties
	cp.DefaultTimeToLive = nil
	if _, err := cc.Replace(ctx, cp, nil); err != nil {
		t.Fatalf("replace without defaultTtl: %v", err)
	}
	props, err = cc.Read(ctx, nil)
	if err != nil || props.ContainerProperties.DefaultTimeToLive != nil {
		t.Fatalf("after replace without defaultTtl: %v, defaultTtl %v", err, props.ContainerProperties.DefaultTimeToLive)
	}
	raw := s.do(t, "GET", collPath("nullttl", "c"), nil, nil)
	if strings.Contains(string(raw.Body), "defaultTtl") {
		t.Errorf("container body still has defaultTtl: %s", raw.Body)
	}
}
