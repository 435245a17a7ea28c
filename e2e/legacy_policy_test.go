package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestLegacyIndexingPolicy sends, over raw signed HTTP, the indexing policy
// older official SDKs (the Node documentdb SDK, .NET v2) send: the root path
// spelled "/", "indexes" arrays of Hash, Range and Spatial indexes with data
// types and precisions, indexingMode "Consistent", an excluded path with
// indexes. The container is created, its policy reads back as Cosmos DB
// normalizes it (mode lower case, every "indexes" array empty, the _etag
// exclusion added), and indexed queries on it return exactly the expected
// rows through the index. An invalid index specification is a 400 that
// creates nothing.
func TestLegacyIndexingPolicy(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	s.do(t, "POST", "/dbs", nil, []byte(`{"id":"legacy"}`)).wantStatus(t, "create database", http.StatusCreated)

	policy := `{"indexingMode":"Consistent","automatic":true,
		"includedPaths":[{"path":"/","indexes":[
			{"kind":"Hash","dataType":"String","precision":3},
			{"kind":"Range","dataType":"Number","precision":-1},
			{"kind":"Spatial","dataType":"Point"}]}],
		"excludedPaths":[{"path":"/blob/*","indexes":[{"kind":"Hash","dataType":"String","precision":3}]}]}`
	body := `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"indexingPolicy":` + policy + `}`
	created := s.do(t, "POST", "/dbs/legacy/colls", nil, []byte(body))
	created.wantStatus(t, "create the container with a legacy policy", http.StatusCreated)

	read := s.do(t, "GET", collPath("legacy", "c"), nil, nil)
	read.wantStatus(t, "read the container", http.StatusOK)
	for what, r := range map[string]rawResponse{"create": created, "read": read} {
		got, _ := json.Marshal(r.json(t)["indexingPolicy"])
		want := `{"automatic":true,"excludedPaths":[{"indexes":[],"path":"/blob/*"},{"path":"/\"_etag\"/?"}],` +
			`"includedPaths":[{"indexes":[],"path":"/"}],"indexingMode":"consistent"}`
		if string(got) != want {
			t.Errorf("%s: indexingPolicy\n%s\nwant\n%s", what, got, want)
		}
	}

	for i := range 30 {
		doc := fmt.Sprintf(`{"id":"d%02d","pk":"p%d","n":%d,"s":"s%d","geo":{"type":"Point","coordinates":[%d,1]},"blob":{"x":%d}}`, i, i%3, i, i%5, i, i)
		s.do(t, "POST", docsPath("legacy", "c"), hdr("x-ms-documentdb-partitionkey", pkHeader(fmt.Sprintf("p%d", i%3))), []byte(doc)).
			wantStatus(t, "create document", http.StatusCreated)
	}
	for _, q := range []struct {
		query string
		want  []string
		spec  string // the index the query must use
	}{
		{"SELECT VALUE c.id FROM c WHERE c.n = 7", []string{"d07"}, "/n/?"},
		{"SELECT VALUE c.id FROM c WHERE c.n >= 27", []string{"d27", "d28", "d29"}, "/n/?"},
		{"SELECT VALUE c.id FROM c WHERE c.s = 's4' AND c.n < 15", []string{"d04", "d09", "d14"}, ""},
		{"SELECT VALUE c.id FROM c WHERE STARTSWITH(c.s, 's3')", []string{"d03", "d08", "d13", "d18", "d23", "d28"}, "/s/?"},
		{"SELECT VALUE c.id FROM c WHERE c.geo.coordinates[0] = 2", []string{"d02"}, ""},
		{"SELECT VALUE c.id FROM c WHERE c.blob.x = 5", []string{"d05"}, ""}, // excluded: scanned, still exact
	} {
		r := s.rawQuery(t, "legacy", "c", q.query, hdr("x-ms-documentdb-query-enablecrosspartition", "true", "x-ms-cosmos-populateindexmetrics", "true"))
		r.wantStatus(t, q.query, http.StatusOK)
		var page struct{ Documents []string }
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatalf("%s: %v", q.query, err)
		}
		slices.Sort(page.Documents)
		if !slices.Equal(page.Documents, q.want) {
			t.Errorf("%s: rows %v; want %v", q.query, page.Documents, q.want)
		}
		specs := utilizedIndexes(t, r.Header.Get("x-ms-cosmos-index-utilization"))
		switch {
		case q.spec != "" && !slices.Contains(specs, q.spec):
			t.Errorf("%s: utilized indexes %v; want %s", q.query, specs, q.spec)
		case strings.Contains(q.query, "blob") && len(specs) != 0:
			t.Errorf("%s: the excluded path was served by indexes %v", q.query, specs)
		}
	}

	// The policy read back is accepted as it is (a client replacing the
	// container sends it again).
	s.do(t, "PUT", collPath("legacy", "c"), nil, read.Body).wantStatus(t, "replace with the policy read back", http.StatusOK)

	for _, bad := range []struct{ indexes, want string }{
		{`[{"kind":"BTree","dataType":"String"}]`, "index kind"},
		{`[{"kind":"Hash","dataType":"String","precision":12}]`, "precision 12"},
		{`[{"kind":"Spatial","dataType":"Number"}]`, "cannot have a Spatial index"},
		{`"Hash"`, "must be an array"},
	} {
		body := `{"id":"bad","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"includedPaths":[{"path":"/*","indexes":` + bad.indexes + `}]}}`
		msg := s.do(t, "POST", "/dbs/legacy/colls", nil, []byte(body)).wantError(t, "create with indexes "+bad.indexes, http.StatusBadRequest)
		if !strings.Contains(msg, bad.want) {
			t.Errorf("indexes %s: message %q; want it to contain %q", bad.indexes, msg, bad.want)
		}
	}
	s.do(t, "GET", collPath("legacy", "bad"), nil, nil).wantStatus(t, "read the refused container", http.StatusNotFound)
}
