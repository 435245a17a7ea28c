package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestBadInput sends malformed requests raw and proves that every one gets a
// 4xx status with a Cosmos JSON error body {"code","message"} and a request
// charge, that none of them changes anything (every container's full read feed
// and the database and container lists are byte-for-byte the same afterwards),
// and that the server process is still alive and serving at the end.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "bad")
	// c: TTL on (-1) so that ttl values are validated; off: TTL off; h: hierarchical.
	cc := mustContainer(t, db, pkContainer("c", i32(-1)))
	off := mustContainer(t, db, pkContainer("off", nil))
	mustContainer(t, db, azcosmos.ContainerProperties{
		ID:                     "h",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/a", "/b"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2},
	})
	for _, cont := range []*azcosmos.ContainerClient{cc, off} {
		if _, err := cont.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"existing","pk":"p","v":0,"ttl":60}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	if r := s.do(t, "POST", docsPath("bad", "h"), hdr("x-ms-documentdb-partitionkey", `["x","y"]`), []byte(`{"id":"existing","a":"x","b":"y"}`)); r.Status != http.StatusCreated {
		t.Fatalf("create in h: %d %s", r.Status, r.Body)
	}

	// snapshot captures everything a bad request could have changed.
	snapshot := func() map[string]string {
		return s.snapshot(t, "/dbs", "/dbs/bad/colls", docsPath("bad", "c"), docsPath("bad", "off"), docsPath("bad", "h"))
	}
	before := snapshot()

	pkp := hdr("x-ms-documentdb-partitionkey", `["p"]`)
	withPK := func(pk string, kv ...string) map[string]string {
		h := hdr(kv...)
		h["x-ms-documentdb-partitionkey"] = pk
		return h
	}
	create := docsPath("bad", "c")
	existing := docPath("bad", "c", "existing")
	big := func(n int) []byte {
		return []byte(`{"id":"big","pk":"p","pad":"` + strings.Repeat("x", n) + `"}`)
	}
	type tc struct {
		name, method, path string
		headers            map[string]string
		body               []byte
		status             int
	}
	cases := []tc{
		// Malformed or non-object JSON, on create, upsert and replace.
		{"malformed JSON create", "POST", create, pkp, []byte(`{"id":"x","pk":"p"`), 400},
		{"malformed JSON upsert", "POST", create, withPK(`["p"]`, "x-ms-documentdb-is-upsert", "true"), []byte(`{"id":"existing","pk":"p",}`), 400},
		{"malformed JSON replace", "PUT", existing, pkp, []byte(`{"id":"existing","pk":"p","v":1`), 400},
		{"trailing garbage", "POST", create, pkp, []byte(`{"id":"x","pk":"p"} {}`), 400},
		{"invalid UTF-8", "POST", create, pkp, []byte("{\"id\":\"x\xff\",\"pk\":\"p\"}"), 400},
		{"array body", "POST", create, pkp, []byte(`[{"id":"x","pk":"p"}]`), 400},
		{"string body", "POST", create, pkp, []byte(`"x"`), 400},
		{"number body", "POST", create, pkp, []byte(`42`), 400},
		{"null body", "POST", create, pkp, []byte(`null`), 400},
		{"empty body", "POST", create, pkp, nil, 400},
		{"array body replace", "PUT", existing, pkp, []byte(`[1]`), 400},
		{"duplicate keys with a different id", "PUT", existing, pkp, []byte(`{"id":"existing","pk":"p","id":"other"}`), 400},
		// Ids.
		{"id missing", "POST", create, pkp, []byte(`{"pk":"p"}`), 400},
		{"id number", "POST", create, pkp, []byte(`{"id":5,"pk":"p"}`), 400},
		{"id null", "POST", create, pkp, []byte(`{"id":null,"pk":"p"}`), 400},
		{"id object", "POST", create, pkp, []byte(`{"id":{"a":1},"pk":"p"}`), 400},
		{"id empty", "POST", create, pkp, []byte(`{"id":"","pk":"p"}`), 400},
		{"id too long", "POST", create, pkp, []byte(`{"id":"` + strings.Repeat("i", 1024) + `","pk":"p"}`), 400},
		{"replace body id differs from path", "PUT", existing, pkp, []byte(`{"id":"other","pk":"p"}`), 400},
		// ttl while the container has TTL on.
		{"ttl string", "POST", create, pkp, []byte(`{"id":"t","pk":"p","ttl":"5"}`), 400},
		{"ttl zero", "POST", create, pkp, []byte(`{"id":"t","pk":"p","ttl":0}`), 400},
		{"ttl null", "POST", create, pkp, []byte(`{"id":"t","pk":"p","ttl":null}`), 400},
		{"ttl -2", "POST", create, pkp, []byte(`{"id":"t","pk":"p","ttl":-2}`), 400},
		{"ttl fraction", "POST", create, pkp, []byte(`{"id":"t","pk":"p","ttl":1.5}`), 400},
		{"ttl above int32", "POST", create, pkp, []byte(`{"id":"t","pk":"p","ttl":2147483648}`), 400},
		{"ttl bool", "POST", create, pkp, []byte(`{"id":"t","pk":"p","ttl":true}`), 400},
		{"ttl object", "POST", create, pkp, []byte(`{"id":"t","pk":"p","ttl":{}}`), 400},
		{"ttl zero on replace", "PUT", existing, pkp, []byte(`{"id":"existing","pk":"p","ttl":0}`), 400},
		{"ttl null on upsert", "POST", create, withPK(`["p"]`, "x-ms-documentdb-is-upsert", "true"), []byte(`{"id":"existing","pk":"p","ttl":null}`), 400},
		// Sizes.
		{"document over 2 MB", "POST", create, pkp, big(2 << 20), 413},
		{"body over the request limit", "POST", create, pkp, big(3 << 20), 413},
		{"replace over 2 MB", "PUT", existing, pkp, []byte(`{"id":"existing","pk":"p","pad":"` + strings.Repeat("x", 2<<20) + `"}`), 413},
		// Partition key headers.
		{"pk header not JSON", "POST", create, hdr("x-ms-documentdb-partitionkey", `p`), []byte(`{"id":"k","pk":"p"}`), 400},
		{"pk header unterminated", "POST", create, hdr("x-ms-documentdb-partitionkey", `["p`), []byte(`{"id":"k","pk":"p"}`), 400},
		{"pk header not an array", "POST", create, hdr("x-ms-documentdb-partitionkey", `"p"`), []byte(`{"id":"k","pk":"p"}`), 400},
		{"pk header nested array", "POST", create, hdr("x-ms-documentdb-partitionkey", `[["p"]]`), []byte(`{"id":"k","pk":"p"}`), 400},
		{"pk header object", "POST", create, hdr("x-ms-documentdb-partitionkey", `[{"a":1}]`), []byte(`{"id":"k","pk":"p"}`), 400},
		{"pk header two values for one path", "POST", create, hdr("x-ms-documentdb-partitionkey", `["p","q"]`), []byte(`{"id":"k","pk":"p"}`), 400},
		{"pk header does not match the document", "POST", create, hdr("x-ms-documentdb-partitionkey", `["q"]`), []byte(`{"id":"k","pk":"p"}`), 400},
		{"pk header number for a string value", "POST", create, hdr("x-ms-documentdb-partitionkey", `[5]`), []byte(`{"id":"k","pk":"5"}`), 400},
		{"pk header does not match on replace", "PUT", existing, hdr("x-ms-documentdb-partitionkey", `["q"]`), []byte(`{"id":"existing","pk":"p"}`), 400},
		{"pk header does not match on upsert", "POST", create, withPK(`["q"]`, "x-ms-documentdb-is-upsert", "true"), []byte(`{"id":"existing","pk":"p"}`), 400},
		{"pk value object in document", "POST", create, nil, []byte(`{"id":"k","pk":{"a":1}}`), 400},
		{"pk value array in document", "POST", create, nil, []byte(`{"id":"k","pk":[1]}`), 400},
		{"pk header not JSON on read", "GET", existing, hdr("x-ms-documentdb-partitionkey", `p`), nil, 400},
		{"pk header missing on read", "GET", existing, nil, nil, 400},
		{"pk header missing on delete", "DELETE", existing, nil, nil, 400},
		{"pk header wrong arity on delete", "DELETE", existing, hdr("x-ms-documentdb-partitionkey", `["p","q"]`), nil, 400},
		{"hierarchical pk with one value", "POST", docsPath("bad", "h"), hdr("x-ms-documentdb-partitionkey", `["x"]`), []byte(`{"id":"k","a":"x","b":"y"}`), 400},
		{"hierarchical pk with three values", "POST", docsPath("bad", "h"), hdr("x-ms-documentdb-partitionkey", `["x","y","z"]`), []byte(`{"id":"k","a":"x","b":"y"}`), 400},
		{"hierarchical pk in the wrong order", "POST", docsPath("bad", "h"), hdr("x-ms-documentdb-partitionkey", `["y","x"]`), []byte(`{"id":"k","a":"x","b":"y"}`), 400},
		{"hierarchical pk read with one value", "GET", docPath("bad", "h", "existing"), hdr("x-ms-documentdb-partitionkey", `["x"]`), nil, 400},
		{"hierarchical pk delete with one value", "DELETE", docPath("bad", "h", "existing"), hdr("x-ms-documentdb-partitionkey", `["x"]`), nil, 400},
		// Routes and methods.
		{"unknown top-level route", "GET", "/nothing/here", nil, nil, 404},
		{"unknown resource type", "GET", "/dbs/bad/users", nil, nil, 400},
		{"stored procedures", "POST", "/dbs/bad/colls/c/sprocs", nil, []byte(`{"id":"s","body":"function(){}"}`), 400},
		{"attachments", "GET", existing + "/attachments", pkp, nil, 400},
		{"too deep", "GET", existing + "/attachments/a/b", pkp, nil, 400},
		{"DELETE /dbs", "DELETE", "/dbs", nil, nil, 405},
		{"PUT /dbs/bad", "PUT", "/dbs/bad", nil, []byte(`{"id":"bad"}`), 405},
		{"PATCH container", "PATCH", "/dbs/bad/colls/c", nil, []byte(`[]`), 405},
		{"POST to a document", "POST", existing, pkp, []byte(`{"id":"existing","pk":"p"}`), 405},
		{"PUT to the feed", "PUT", create, pkp, []byte(`{"id":"existing","pk":"p"}`), 405},
		{"DELETE the feed", "DELETE", create, pkp, nil, 405},
		{"DELETE /", "DELETE", "/", nil, nil, 405},
		{"PUT pkranges", "PUT", "/dbs/bad/colls/c/pkranges", nil, nil, 405},
		// Feed headers.
		{"max item count not a number", "GET", create, hdr("x-ms-max-item-count", "abc"), nil, 400},
		{"max item count negative", "GET", create, hdr("x-ms-max-item-count", "-5"), nil, 400},
		{"max item count fraction", "GET", create, hdr("x-ms-max-item-count", "1.5"), nil, 400},
		{"continuation garbage", "GET", create, hdr("x-ms-continuation", "%%%"), nil, 400},
		{"continuation base64 of nothing useful", "GET", create, hdr("x-ms-continuation", base64.RawURLEncoding.EncodeToString([]byte("hello"))), nil, 400},
		{"continuation for another container", "GET", create, hdr("x-ms-continuation", base64.RawURLEncoding.EncodeToString([]byte(`{"rid":"AAAAAA==","seq":1}`))), nil, 400},
		{"feed pk header not JSON", "GET", create, hdr("x-ms-documentdb-partitionkey", `[p]`), nil, 400},
		// Databases and containers.
		{"database without id", "POST", "/dbs", nil, []byte(`{}`), 400},
		{"database id with slash", "POST", "/dbs", nil, []byte(`{"id":"a/b"}`), 400},
		{"database id number", "POST", "/dbs", nil, []byte(`{"id":1}`), 400},
		{"database body not JSON", "POST", "/dbs", nil, []byte(`{`), 400},
		{"container without partition key paths", "POST", "/dbs/bad/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":[],"kind":"Hash"}}`), 400},
		{"container pk path without slash", "POST", "/dbs/bad/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":["pk"],"kind":"Hash"}}`), 400},
		{"container Hash with two paths", "POST", "/dbs/bad/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":["/a","/b"],"kind":"Hash"}}`), 400},
		{"container bad kind", "POST", "/dbs/bad/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":["/a"],"kind":"Nope"}}`), 400},
		{"container defaultTtl string", "POST", "/dbs/bad/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":["/a"]},"defaultTtl":"60"}`), 400},
		{"container defaultTtl zero", "POST", "/dbs/bad/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":["/a"]},"defaultTtl":0}`), 400},
		{"container bad indexing mode", "POST", "/dbs/bad/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":["/a"]},"indexingPolicy":{"indexingMode":"eager"}}`), 400},
		{"container in a missing database", "POST", "/dbs/missing/colls", nil, []byte(`{"id":"n","partitionKey":{"paths":["/a"]}}`), 404},
		{"container replace changes id", "PUT", "/dbs/bad/colls/c", nil, []byte(`{"id":"other","partitionKey":{"paths":["/pk"]}}`), 400},
		{"container replace defaultTtl -2", "PUT", "/dbs/bad/colls/c", nil, []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":-2}`), 400},
		{"container replace not JSON", "PUT", "/dbs/bad/colls/c", nil, []byte(`{"id":`), 400},
		// Batches.
		{"batch body not JSON", "POST", create, withPK(`["p"]`, "x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True"), []byte(`[{`), 400},
		{"batch with an invalid document", "POST", create, withPK(`["p"]`, "x-ms-cosmos-is-batch-request", "True", "x-ms-cosmos-batch-atomic", "True"),
			[]byte(`[{"operationType":"Replace","id":"existing","resourceBody":{"id":"existing","pk":"p","v":1}},{"operationType":"Create","resourceBody":{"id":"x","pk":"p","ttl":0}}]`), 207},
	}
	for _, c := range cases {
		r := s.do(t, c.method, c.path, c.headers, c.body)
		if c.status == 207 {
			// A failed batch is 207 with per-operation statuses, not an error body.
			if r.Status != 207 || !strings.Contains(string(r.Body), `"statusCode":400`) || !strings.Contains(string(r.Body), `"statusCode":424`) {
				t.Errorf("%s: %d %s; want 207 with 400 and 424", c.name, r.Status, truncateForLog(r.Body))
			}
			continue
		}
		r.wantError(t, c.name, c.status)
	}

	// A path that is not valid percent-encoding (the Go client refuses to send
	// one, so write the request by hand). net/http itself answers it, with a
	// plain-text 400, before any handler runs: no SDK can produce such a path,
	// so only the status is checked here.
	r := rawHTTP(t, s, "GET /dbs/%zz HTTP/1.1\r\nHost: x\r\nx-ms-date: "+nowDate()+"\r\nAuthorization: x\r\nConnection: close\r\n\r\n")
	r.wantStatus(t, "invalid percent-encoding", http.StatusBadRequest)
	// An encoded slash stays inside its segment: the id "a/b" names no
	// document (404), it is not a deeper path (400).
	s.do(t, "GET", "/dbs/bad/colls/c/docs/a%2Fb", pkp, nil).wantError(t, "id with an encoded slash", http.StatusNotFound)

	if after := snapshot(); !reflect.DeepEqual(before, after) {
		for k := range before {
			if before[k] != after[k] {
				t.Errorf("bad requests changed %s:\nbefore %s\n after %s", k, truncateForLog([]byte(before[k])), truncateForLog([]byte(after[k])))
			}
		}
	}

	// While TTL is off, ttl is ordinary data: the same values are accepted.
	for _, v := range []string{`"5"`, `0`, `null`, `-2`, `1.5`, `true`, `{}`} {
		r := s.do(t, "POST", docsPath("bad", "off"), pkp, []byte(`{"id":"ttl-`+url.PathEscape(v)+`","pk":"p","ttl":`+v+`}`))
		r.wantStatus(t, "ttl "+v+" while TTL is off", http.StatusCreated)
	}
	// Just under the limit is fine.
	s.do(t, "POST", create, pkp, big(2<<20-1024)).wantStatus(t, "document just under 2 MB", http.StatusCreated)

	// Still alive and serving.
	if !s.alive() {
		t.Fatalf("lethe exited during the bad-input tests\n%s", s.stderr)
	}
	if st := readStatus(t, cc, azcosmos.NewPartitionKeyString("p"), "existing"); st != http.StatusOK {
		t.Errorf("read after the bad-input tests: %d", st)
	}
}

func nowDate() string { return timeNowUTC().Format(http.TimeFormat) }

// rawHTTP writes a request verbatim on a new connection and reads the response.
func rawHTTP(t *testing.T, s *server, request string) rawResponse {
	t.Helper()
	u, _ := url.Parse(s.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b.Bytes()}
}
