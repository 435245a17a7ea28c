package e2e

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestCRUD drives databases, containers, partition key ranges and items through
// the official Go SDK (raw requests where the SDK has no API), against one
// in-memory server. Each subtest uses its own database.
func TestCRUD(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)

	t.Run("Databases", func(t *testing.T) { t.Parallel(); testDatabases(t, s, c) })
	t.Run("Containers", func(t *testing.T) { t.Parallel(); testContainers(t, s, c) })
	t.Run("PartitionKeyRanges", func(t *testing.T) { t.Parallel(); testPartitionKeyRanges(t, s, c) })
	t.Run("Items", func(t *testing.T) { t.Parallel(); testItems(t, s, c) })
	t.Run("HierarchicalKeys", func(t *testing.T) { t.Parallel(); testHierarchicalKeys(t, s, c) })
	t.Run("PartitionKeyValues", func(t *testing.T) { t.Parallel(); testPartitionKeyValues(t, s, c) })
	t.Run("UndefinedPartitionKey", func(t *testing.T) { t.Parallel(); testUndefinedPartitionKey(t, s, c) })
	t.Run("ItemIDs", func(t *testing.T) { t.Parallel(); testItemIDs(t, s, c) })
}

// testDatabases proves database create (201, 409 on duplicate), read, raw list,
// delete (204) and 404s afterwards, and that a database has no provisioned
// throughput.
func testDatabases(t *testing.T, s *server, c *azcosmos.Client) {
	cr, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "dbs-a"}, nil)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if cr.RawResponse.StatusCode != http.StatusCreated || cr.DatabaseProperties.ID != "dbs-a" || cr.DatabaseProperties.ResourceID == "" ||
		cr.DatabaseProperties.ETag == nil || cr.RequestCharge <= 0 {
		t.Errorf("create: status %d, props %+v, charge %v", cr.RawResponse.StatusCode, cr.DatabaseProperties, cr.RequestCharge)
	}
	if !strings.HasPrefix(cr.DatabaseProperties.SelfLink, "dbs/") || !strings.HasSuffix(cr.DatabaseProperties.SelfLink, "/") {
		t.Errorf("create: _self = %q", cr.DatabaseProperties.SelfLink)
	}
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "dbs-a"}, nil)
	wantStatus(t, "create duplicate database", err, http.StatusConflict)
	mustDatabase(t, c, "dbs-b")

	db, _ := c.NewDatabase("dbs-a")
	rr, err := db.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if rr.DatabaseProperties.ID != "dbs-a" || rr.DatabaseProperties.ResourceID != cr.DatabaseProperties.ResourceID {
		t.Errorf("read: %+v; created %+v", rr.DatabaseProperties, cr.DatabaseProperties)
	}

	// Listing databases through the SDK is a query (not implemented yet): list raw.
	r := s.do(t, "GET", "/dbs", nil, nil)
	r.wantStatus(t, "list databases", http.StatusOK)
	var list struct {
		Databases []map[string]any `json:"Databases"`
		Count     int              `json:"_count"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		t.Fatalf("list body: %v", err)
	}
	var ids []string
	for _, d := range list.Databases {
		ids = append(ids, d["id"].(string))
	}
	if !slices.Contains(ids, "dbs-a") || !slices.Contains(ids, "dbs-b") || list.Count != len(list.Databases) {
		t.Errorf("list databases = %v (_count %d)", ids, list.Count)
	}

	_, err = db.ReadThroughput(ctx, nil)
	wantStatus(t, "database ReadThroughput (no provisioned throughput)", err, http.StatusNotFound)

	dr, err := db.Delete(ctx, nil)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if dr.RawResponse.StatusCode != http.StatusNoContent {
		t.Errorf("delete status = %d; want 204", dr.RawResponse.StatusCode)
	}
	_, err = db.Read(ctx, nil)
	wantStatus(t, "read deleted database", err, http.StatusNotFound)
	_, err = db.Delete(ctx, nil)
	wantStatus(t, "delete deleted database", err, http.StatusNotFound)
	// Its containers went with it.
	cc, _ := db.NewContainer("nothing")
	_, err = cc.Read(ctx, nil)
	wantStatus(t, "read container of deleted database", err, http.StatusNotFound)
}

// testContainers proves container create with Hash and MultiHash keys, that the
// server fills in kind, version and the default indexing policy, replace
// (including DefaultTimeToLive on and off), 409/404s, delete, and that
// ReadThroughput reports the default offer of a container created without
// throughput.
func testContainers(t *testing.T, s *server, c *azcosmos.Client) {
	db := mustDatabase(t, c, "colls")

	cr, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     "hash",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
	}, nil)
	if err != nil {
		t.Fatalf("create hash container: %v", err)
	}
	if cr.RawResponse.StatusCode != http.StatusCreated || cr.RequestCharge <= 0 {
		t.Errorf("create: status %d charge %v", cr.RawResponse.StatusCode, cr.RequestCharge)
	}
	checkDefaults := func(what string, p *azcosmos.ContainerProperties) {
		t.Helper()
		if p.PartitionKeyDefinition.Kind != azcosmos.PartitionKeyKindHash || !slices.Equal(p.PartitionKeyDefinition.Paths, []string{"/pk"}) || p.PartitionKeyDefinition.Version != 2 {
			t.Errorf("%s: partition key definition = %+v; want Hash [/pk] version 2", what, p.PartitionKeyDefinition)
		}
		ip := p.IndexingPolicy
		if ip == nil {
			t.Fatalf("%s: no indexing policy", what)
		}
		if !strings.EqualFold(string(ip.IndexingMode), "consistent") || !ip.Automatic || len(ip.IncludedPaths) != 1 || ip.IncludedPaths[0].Path != "/*" ||
			!slices.ContainsFunc(ip.ExcludedPaths, func(e azcosmos.ExcludedPath) bool { return e.Path == `/"_etag"/?` }) {
			t.Errorf("%s: indexing policy = %+v; want Cosmos DB's default", what, *ip)
		}
		if p.DefaultTimeToLive != nil {
			t.Errorf("%s: DefaultTimeToLive = %d; want nil (TTL off)", what, *p.DefaultTimeToLive)
		}
		if p.ResourceID == "" || p.ETag == nil || p.ID != "hash" {
			t.Errorf("%s: system properties = %+v", what, p)
		}
	}
	checkDefaults("create response", cr.ContainerProperties)
	hash, _ := db.NewContainer("hash")
	rr, err := hash.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	checkDefaults("read", rr.ContainerProperties)

	_, err = db.CreateContainer(ctx, pkContainer("hash", nil), nil)
	wantStatus(t, "create duplicate container", err, http.StatusConflict)

	// Hierarchical keys.
	mr, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID: "multi",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
			Paths: []string{"/tenant", "/user", "/session"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2,
		},
	}, nil)
	if err != nil {
		t.Fatalf("create MultiHash container: %v", err)
	}
	multi, _ := db.NewContainer("multi")
	rr, err = multi.Read(ctx, nil)
	if err != nil {
		t.Fatalf("read MultiHash container: %v", err)
	}
	for _, p := range []*azcosmos.ContainerProperties{mr.ContainerProperties, rr.ContainerProperties} {
		if p.PartitionKeyDefinition.Kind != azcosmos.PartitionKeyKindMultiHash || !slices.Equal(p.PartitionKeyDefinition.Paths, []string{"/tenant", "/user", "/session"}) {
			t.Errorf("MultiHash definition = %+v", p.PartitionKeyDefinition)
		}
	}

	// Replace: turn TTL on, change it, turn it off.
	props := *rr.ContainerProperties
	props.ID = "hash"
	props.PartitionKeyDefinition = azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2}
	for _, ttl := range []*int32{i32(3600), i32(-1), i32(60), nil} {
		props.DefaultTimeToLive = ttl
		rep, err := hash.Replace(ctx, props, nil)
		if err != nil {
			t.Fatalf("replace with DefaultTimeToLive %v: %v", ttl, err)
		}
		if rep.RawResponse.StatusCode != http.StatusOK {
			t.Errorf("replace status %d", rep.RawResponse.StatusCode)
		}
		rr, err := hash.Read(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := rr.ContainerProperties.DefaultTimeToLive
		if (ttl == nil) != (got == nil) || (ttl != nil && *ttl != *got) {
			t.Errorf("after replace with DefaultTimeToLive %v: read %v", fmtPtr(ttl), fmtPtr(got))
		}
	}
	// Changing the partition key is refused.
	props.PartitionKeyDefinition = azcosmos.PartitionKeyDefinition{Paths: []string{"/other"}}
	_, err = hash.Replace(ctx, props, nil)
	wantStatus(t, "replace changing the partition key", err, http.StatusBadRequest)
	// Replace with a stale etag is refused.
	props.PartitionKeyDefinition = azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}
	// (The SDK has no If-Match option for containers: send the header through the context.)
	_, err = hash.Replace(withHeader(ctx, "If-Match", `"stale"`), props, nil)
	wantStatus(t, "replace container with stale If-Match", err, http.StatusPreconditionFailed)

	// A container created without throughput has the default offer.
	tr, err := hash.ReadThroughput(ctx, nil)
	if n, ok := tr.ThroughputProperties.ManualThroughput(); err != nil || !ok || n != 400 {
		t.Errorf("container ReadThroughput: %d %v %v; want the default 400 RU/s", n, ok, err)
	}

	// Raw list of containers.
	r := s.do(t, "GET", "/dbs/colls/colls", nil, nil)
	r.wantStatus(t, "list containers", http.StatusOK)
	var list struct {
		DocumentCollections []map[string]any `json:"DocumentCollections"`
	}
	_ = json.Unmarshal(r.Body, &list)
	if len(list.DocumentCollections) != 2 {
		t.Errorf("list containers = %s", truncateForLog(r.Body))
	}

	dr, err := hash.Delete(ctx, nil)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if dr.RawResponse.StatusCode != http.StatusNoContent {
		t.Errorf("delete status %d; want 204", dr.RawResponse.StatusCode)
	}
	_, err = hash.Read(ctx, nil)
	wantStatus(t, "read deleted container", err, http.StatusNotFound)
	_, err = hash.Delete(ctx, nil)
	wantStatus(t, "delete deleted container", err, http.StatusNotFound)
	_, err = hash.Replace(ctx, props, nil)
	wantStatus(t, "replace deleted container", err, http.StatusNotFound)
	_, err = hash.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"x","pk":"p"}`), nil)
	wantStatus(t, "create item in deleted container", err, http.StatusNotFound)

	missing, _ := c.NewDatabase("no-such-db")
	_, err = missing.CreateContainer(ctx, pkContainer("x", nil), nil)
	wantStatus(t, "create container in missing database", err, http.StatusNotFound)
}

func fmtPtr(p *int32) any {
	if p == nil {
		return "nil"
	}
	return *p
}

// testPartitionKeyRanges proves the single-range partition key range feed and
// its etag: 200 with an etag, 304 with an empty body when If-None-Match
// matches (the Go SDK's refresh loop depends on it), 200 again for a stale etag.
func testPartitionKeyRanges(t *testing.T, s *server, c *azcosmos.Client) {
	db := mustDatabase(t, c, "pkr")
	mustContainer(t, db, pkContainer("c", nil))
	path := collPath("pkr", "c") + "/pkranges"

	r := s.do(t, "GET", path, nil, nil)
	r.wantStatus(t, "pkranges", http.StatusOK)
	etag := r.Header.Get("etag")
	if etag == "" {
		t.Fatal("pkranges: no etag")
	}
	var body struct {
		Ranges []struct {
			ID           string `json:"id"`
			MinInclusive string `json:"minInclusive"`
			MaxExclusive string `json:"maxExclusive"`
		} `json:"PartitionKeyRanges"`
		Count int `json:"_count"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Ranges) != 1 || body.Count != 1 || body.Ranges[0].ID != "0" || body.Ranges[0].MinInclusive != "" || body.Ranges[0].MaxExclusive != "FF" {
		t.Errorf("pkranges body = %s", r.Body)
	}

	r = s.do(t, "GET", path, hdr("If-None-Match", etag, "A-IM", "Incremental Feed"), nil)
	if r.Status != http.StatusNotModified || len(r.Body) != 0 || r.Header.Get("etag") != etag {
		t.Errorf("pkranges with matching If-None-Match: status %d body %q etag %q; want 304, empty, %q", r.Status, r.Body, r.Header.Get("etag"), etag)
	}
	r = s.do(t, "GET", path, hdr("If-None-Match", `"stale"`), nil)
	r.wantStatus(t, "pkranges with stale If-None-Match", http.StatusOK)

	r = s.do(t, "GET", collPath("pkr", "missing")+"/pkranges", nil, nil)
	r.wantError(t, "pkranges of a missing container", http.StatusNotFound)
}

// checkItemHeaders verifies the headers every item response carries.
func checkItemHeaders(t *testing.T, what string, resp *http.Response, containerRID string) {
	t.Helper()
	h := resp.Header
	if ch := (rawResponse{Header: h}).charge(); ch <= 0 {
		t.Errorf("%s: x-ms-request-charge %q; want > 0", what, h.Get("x-ms-request-charge"))
	}
	if h.Get("x-ms-activity-id") == "" {
		t.Errorf("%s: no x-ms-activity-id", what)
	}
	if tok := h.Get("x-ms-session-token"); !strings.HasPrefix(tok, "0:") || !strings.Contains(tok, "#") {
		t.Errorf("%s: x-ms-session-token %q; want 0:-1#<lsn>", what, tok)
	}
	if got := h.Get("x-ms-alt-content-path"); got != "dbs/items/colls/c" {
		t.Errorf("%s: x-ms-alt-content-path %q; want dbs/items/colls/c", what, got)
	}
	if got := h.Get("x-ms-content-path"); got != containerRID {
		t.Errorf("%s: x-ms-content-path %q; want the container _rid %q", what, got, containerRID)
	}
	if resp.StatusCode != http.StatusNoContent && h.Get("etag") == "" {
		t.Errorf("%s: no etag header", what)
	}
}

// testItems proves item create (201), read, replace (200), upsert (201 new, 200
// existing), delete (204), 409 and 404s, system properties, Prefer:
// return=minimal (the SDK default: no body) against EnableContentResponseOnWrite
// (body), and the response headers of successes and errors.
func testItems(t *testing.T, s *server, c *azcosmos.Client) {
	db := mustDatabase(t, c, "items")
	cc := mustContainer(t, db, pkContainer("c", nil))
	crr, err := cc.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	collRID := crr.ContainerProperties.ResourceID
	pk := azcosmos.NewPartitionKeyString("p1")
	before := time.Now().Unix()

	// Client-sent system properties are replaced by the server's.
	doc := map[string]any{"id": "a", "pk": "p1", "n": 1, "_ts": 5, "_rid": "bogus", "_etag": "bogus", "_self": "bogus"}
	cr, err := cc.CreateItem(ctx, pk, mustMarshal(t, doc), nil)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if cr.RawResponse.StatusCode != http.StatusCreated {
		t.Errorf("create status %d; want 201", cr.RawResponse.StatusCode)
	}
	if len(cr.Value) != 0 {
		t.Errorf("create with the SDK's default Prefer: return=minimal returned a body: %s", cr.Value)
	}
	if cr.SessionToken == nil || cr.ETag == "" {
		t.Errorf("create: session token %v, etag %q", cr.SessionToken, cr.ETag)
	}
	checkItemHeaders(t, "create", cr.RawResponse, collRID)

	rr, err := cc.ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	checkItemHeaders(t, "read", rr.RawResponse, collRID)
	got := decodeObject(t, rr.Value)
	if got["n"] != float64(1) || got["id"] != "a" || got["pk"] != "p1" {
		t.Errorf("read body = %s", rr.Value)
	}
	rid, _ := got["_rid"].(string)
	self, _ := got["_self"].(string)
	if rid == "" || rid == "bogus" || !strings.HasPrefix(self, "dbs/") || !strings.HasSuffix(self, "/docs/"+rid+"/") {
		t.Errorf("_rid %q, _self %q", rid, self)
	}
	if got["_etag"] != string(rr.ETag) || got["_etag"] != string(cr.ETag) {
		t.Errorf("_etag %v; etag header on read %q, on create %q", got["_etag"], rr.ETag, cr.ETag)
	}
	if ts := tsOf(t, got); ts < before || ts > time.Now().Unix() {
		t.Errorf("_ts = %d; want the write time (%d..now)", ts, before)
	}
	if got["_attachments"] != "attachments/" {
		t.Errorf("_attachments = %v", got["_attachments"])
	}
	if !strings.Contains(string(rr.Value), `"_ts":`+jsonNumber(got["_ts"])) || strings.Contains(string(rr.Value), `"_ts":"`) {
		t.Errorf("_ts is not a JSON integer in %s", rr.Value)
	}

	_, err = cc.CreateItem(ctx, pk, mustMarshal(t, doc), nil)
	wantStatus(t, "create duplicate", err, http.StatusConflict)
	checkErrorHeaders(t, "409", err)
	// Same id in another partition is another document.
	if _, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("p2"), []byte(`{"id":"a","pk":"p2"}`), nil); err != nil {
		t.Errorf("create same id in another partition: %v", err)
	}

	// Replace with content response on.
	doc["n"] = 2
	rep, err := cc.ReplaceItem(ctx, pk, "a", mustMarshal(t, doc), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatalf("replace: %v", err)
	}
	checkItemHeaders(t, "replace", rep.RawResponse, collRID)
	if rep.RawResponse.StatusCode != http.StatusOK || len(rep.Value) == 0 {
		t.Fatalf("replace: status %d body %q; want 200 with body", rep.RawResponse.StatusCode, rep.Value)
	}
	rb := decodeObject(t, rep.Value)
	if rb["n"] != float64(2) || rb["_etag"] == got["_etag"] || rb["_etag"] != string(rep.ETag) || rb["_rid"] != got["_rid"] {
		t.Errorf("replace body = %s (old etag %v)", rep.Value, got["_etag"])
	}
	// Replace with minimal response.
	rep2, err := cc.ReplaceItem(ctx, pk, "a", mustMarshal(t, doc), nil)
	if err != nil || len(rep2.Value) != 0 || rep2.RawResponse.StatusCode != http.StatusOK {
		t.Errorf("replace (minimal): %v, body %q", err, rep2.Value)
	}

	// Upsert: 200 over an existing item, 201 for a new one.
	doc["n"] = 3
	up, err := cc.UpsertItem(ctx, pk, mustMarshal(t, doc), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatalf("upsert existing: %v", err)
	}
	if up.RawResponse.StatusCode != http.StatusOK || decodeObject(t, up.Value)["n"] != float64(3) {
		t.Errorf("upsert existing: status %d body %s; want 200 with n=3", up.RawResponse.StatusCode, up.Value)
	}
	checkItemHeaders(t, "upsert", up.RawResponse, collRID)
	up, err = cc.UpsertItem(ctx, pk, []byte(`{"id":"b","pk":"p1"}`), nil)
	if err != nil {
		t.Fatalf("upsert new: %v", err)
	}
	if up.RawResponse.StatusCode != http.StatusCreated || len(up.Value) != 0 {
		t.Errorf("upsert new: status %d body %q; want 201, no body", up.RawResponse.StatusCode, up.Value)
	}

	// Delete.
	del, err := cc.DeleteItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if del.RawResponse.StatusCode != http.StatusNoContent || len(del.Value) != 0 {
		t.Errorf("delete: status %d body %q; want 204, empty", del.RawResponse.StatusCode, del.Value)
	}
	checkItemHeaders(t, "delete", del.RawResponse, collRID)

	// 404s.
	_, err = cc.ReadItem(ctx, pk, "a", nil)
	wantStatus(t, "read deleted", err, http.StatusNotFound)
	checkErrorHeaders(t, "404", err)
	_, err = cc.ReplaceItem(ctx, pk, "a", mustMarshal(t, doc), nil)
	wantStatus(t, "replace deleted", err, http.StatusNotFound)
	_, err = cc.DeleteItem(ctx, pk, "a", nil)
	wantStatus(t, "delete deleted", err, http.StatusNotFound)
	ops := azcosmos.PatchOperations{}
	ops.AppendSet("/x", 1)
	_, err = cc.PatchItem(ctx, pk, "a", ops, nil)
	wantStatus(t, "patch deleted", err, http.StatusNotFound)
	_, err = cc.ReadItem(ctx, azcosmos.NewPartitionKeyString("p3"), "b", nil)
	wantStatus(t, "read with the wrong partition key", err, http.StatusNotFound)
	// The other partition's "a" is untouched.
	if st := readStatus(t, cc, azcosmos.NewPartitionKeyString("p2"), "a"); st != http.StatusOK {
		t.Errorf("read p2/a after deleting p1/a: %d", st)
	}
	missing, _ := db.NewContainer("missing")
	_, err = missing.ReadItem(ctx, pk, "b", nil)
	wantStatus(t, "read in missing container", err, http.StatusNotFound)
}

// jsonNumber renders a decoded JSON number the way an integer is written.
func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkErrorHeaders verifies that an SDK error's response carries a request
// charge, an activity id and a Cosmos JSON error body.
func checkErrorHeaders(t *testing.T, what string, err error) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Errorf("%s: %T is not a response error", what, err)
		return
	}
	h := re.RawResponse.Header
	if ch := (rawResponse{Header: h}).charge(); ch <= 0 {
		t.Errorf("%s: error response charge %q; want > 0", what, h.Get("x-ms-request-charge"))
	}
	if h.Get("x-ms-activity-id") == "" {
		t.Errorf("%s: error response without x-ms-activity-id", what)
	}
	if re.ErrorCode == "" {
		t.Errorf("%s: the SDK found no error code in the body", what)
	}
}

// testHierarchicalKeys proves documents under a MultiHash key: the same id under
// different full keys are different documents, and a key that differs in any
// component does not find a document.
func testHierarchicalKeys(t *testing.T, s *server, c *azcosmos.Client) {
	db := mustDatabase(t, c, "hpk")
	cc := mustContainer(t, db, azcosmos.ContainerProperties{
		ID:                     "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant", "/user"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2},
	})
	pkA := azcosmos.NewPartitionKey().AppendString("t1").AppendString("alice")
	pkB := azcosmos.NewPartitionKey().AppendString("t1").AppendString("bob")
	if _, err := cc.CreateItem(ctx, pkA, []byte(`{"id":"1","tenant":"t1","user":"alice","v":"a"}`), nil); err != nil {
		t.Fatalf("create alice: %v", err)
	}
	if _, err := cc.CreateItem(ctx, pkB, []byte(`{"id":"1","tenant":"t1","user":"bob","v":"b"}`), nil); err != nil {
		t.Fatalf("create bob: %v", err)
	}
	_, err := cc.CreateItem(ctx, pkA, []byte(`{"id":"1","tenant":"t1","user":"alice"}`), nil)
	wantStatus(t, "duplicate under the same full key", err, http.StatusConflict)
	for pk, want := range map[*azcosmos.PartitionKey]string{&pkA: "a", &pkB: "b"} {
		r, err := cc.ReadItem(ctx, *pk, "1", nil)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if v := decodeObject(t, r.Value)["v"]; v != want {
			t.Errorf("read = %s; want v=%s", r.Value, want)
		}
	}
	for _, pk := range []azcosmos.PartitionKey{
		azcosmos.NewPartitionKey().AppendString("t2").AppendString("alice"),
		azcosmos.NewPartitionKey().AppendString("alice").AppendString("t1"),
	} {
		_, err := cc.ReadItem(ctx, pk, "1", nil)
		wantStatus(t, "read with a different hierarchical key", err, http.StatusNotFound)
	}
	// A body that disagrees with the key is refused.
	_, err = cc.CreateItem(ctx, pkA, []byte(`{"id":"2","tenant":"t1","user":"bob"}`), nil)
	wantStatus(t, "create with a key that does not match the body", err, http.StatusBadRequest)
	// Patch and delete under the hierarchical key.
	ops := azcosmos.PatchOperations{}
	ops.AppendSet("/v", "patched")
	if _, err := cc.PatchItem(ctx, pkA, "1", ops, nil); err != nil {
		t.Errorf("patch: %v", err)
	}
	if _, err := cc.DeleteItem(ctx, pkA, "1", nil); err != nil {
		t.Fatalf("delete alice: %v", err)
	}
	if st := readStatus(t, cc, pkA, "1"); st != http.StatusNotFound {
		t.Errorf("read deleted alice: %d", st)
	}
	if st := readStatus(t, cc, pkB, "1"); st != http.StatusOK {
		t.Errorf("read bob after deleting alice: %d", st)
	}
	// The raw pk-scoped feed of bob's key holds only bob's document.
	if ids := s.readFeedAll(t, "hpk", "c", 0, `["t1","bob"]`); !slices.Equal(ids, []string{"1"}) {
		t.Errorf("feed of [t1,bob] = %v", ids)
	}
}

// testPartitionKeyValues proves a full CRUD cycle through the SDK for partition
// key values of every type, including strings the Go SDK quotes with
// strconv.QuoteToASCII into escapes that are not JSON (\a, \v, \x7f,
// \U0001f600), and that values of different types are different keys.
func testPartitionKeyValues(t *testing.T, s *server, c *azcosmos.Client) {
	db := mustDatabase(t, c, "pkv")
	cc := mustContainer(t, db, pkContainer("c", nil))
	cases := []struct {
		name string
		pk   azcosmos.PartitionKey
		val  any
	}{
		{"plain", azcosmos.NewPartitionKeyString("plain"), "plain"},
		{"empty string", azcosmos.NewPartitionKeyString(""), ""},
		{"quotes", azcosmos.NewPartitionKeyString(`he said "hi", [x]`), `he said "hi", [x]`},
		{"backslash", azcosmos.NewPartitionKeyString(`C:\dir\n`), `C:\dir\n`},
		{"emoji", azcosmos.NewPartitionKeyString("smile 😀 ok"), "smile 😀 ok"},
		{"bmp unicode", azcosmos.NewPartitionKeyString("鱀 ü é"), "鱀 ü é"},
		{"control chars", azcosmos.NewPartitionKeyString("bell\a vt\v tab\t nl\n cr\r nul\x00 del\x7f"), "bell\a vt\v tab\t nl\n cr\r nul\x00 del\x7f"},
		{"html", azcosmos.NewPartitionKeyString("<a href='x'>&amp;</a>"), "<a href='x'>&amp;</a>"},
		{"line separator", azcosmos.NewPartitionKeyString("ls\u2028ps\u2029"), "ls\u2028ps\u2029"},
		// Invalid UTF-8: the SDK's header says \xff, its JSON body says \ufffd.
		{"invalid utf-8", azcosmos.NewPartitionKeyString("bad\xffbyte"), "bad\xffbyte"},
		{"integer", azcosmos.NewPartitionKeyNumber(5), 5},
		{"zero", azcosmos.NewPartitionKeyNumber(0), 0},
		{"negative float", azcosmos.NewPartitionKeyNumber(-1.5), -1.5},
		{"large", azcosmos.NewPartitionKeyNumber(1e20), 1e20},
		{"true", azcosmos.NewPartitionKeyBool(true), true},
		{"false", azcosmos.NewPartitionKeyBool(false), false},
		{"null", azcosmos.NullPartitionKey, nil},
		{"string 5", azcosmos.NewPartitionKeyString("5"), "5"},
		{"string true", azcosmos.NewPartitionKeyString("true"), "true"},
		{"string null", azcosmos.NewPartitionKeyString("null"), "null"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Every case uses the same id: only the key tells them apart.
			doc := map[string]any{"id": "same", "pk": tc.val, "case": tc.name}
			if _, err := cc.CreateItem(ctx, tc.pk, mustMarshal(t, doc), nil); err != nil {
				t.Fatalf("create: %v", err)
			}
			r, err := cc.ReadItem(ctx, tc.pk, "same", nil)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			got := decodeObject(t, r.Value)
			if got["case"] != tc.name {
				t.Errorf("read found %v; want case %q", got["case"], tc.name)
			}
			want := decodeObject(t, mustMarshal(t, doc))["pk"]
			if got["pk"] != want {
				t.Errorf("stored pk = %#v; want %#v", got["pk"], want)
			}
			doc["v"] = 1
			if _, err := cc.ReplaceItem(ctx, tc.pk, "same", mustMarshal(t, doc), nil); err != nil {
				t.Errorf("replace: %v", err)
			}
			if up, err := cc.UpsertItem(ctx, tc.pk, mustMarshal(t, doc), nil); err != nil || up.RawResponse.StatusCode != http.StatusOK {
				t.Errorf("upsert: %v", err)
			}
			ops := azcosmos.PatchOperations{}
			ops.AppendIncrement("/v", 1)
			if _, err := cc.PatchItem(ctx, tc.pk, "same", ops, nil); err != nil {
				t.Errorf("patch: %v", err)
			}
			r, err = cc.ReadItem(ctx, tc.pk, "same", nil)
			if err != nil || decodeObject(t, r.Value)["v"] != float64(2) {
				t.Errorf("read after patch: %v %s", err, r.Value)
			}
			batch := cc.NewTransactionalBatch(tc.pk)
			batch.ReadItem("same", nil)
			br, err := cc.ExecuteTransactionalBatch(ctx, batch, nil)
			if err != nil || !br.Success {
				t.Errorf("batch read: %v %+v", err, br)
			}
		})
	}
	// Delete them all last, so that every case coexisted with every other.
	for _, tc := range cases {
		if _, err := cc.DeleteItem(ctx, tc.pk, "same", nil); err != nil {
			t.Errorf("delete %s: %v", tc.name, err)
		}
		if st := readStatus(t, cc, tc.pk, "same"); st != http.StatusNotFound {
			t.Errorf("read %s after delete: %d", tc.name, st)
		}
	}
}

// testUndefinedPartitionKey proves documents without a value at the key path:
// the header [{}] finds them, [null] does not (null and undefined differ); and
// that numeric keys compare by value whatever their spelling.
func testUndefinedPartitionKey(t *testing.T, s *server, c *azcosmos.Client) {
	db := mustDatabase(t, c, "undef")
	mustContainer(t, db, pkContainer("c", nil))
	r := s.do(t, "POST", docsPath("undef", "c"), hdr("x-ms-documentdb-partitionkey", "[{}]"), []byte(`{"id":"u"}`))
	r.wantStatus(t, "create without a pk value", http.StatusCreated)
	r = s.do(t, "GET", docPath("undef", "c", "u"), hdr("x-ms-documentdb-partitionkey", "[{}]"), nil)
	r.wantStatus(t, "read with [{}]", http.StatusOK)
	r = s.do(t, "GET", docPath("undef", "c", "u"), hdr("x-ms-documentdb-partitionkey", "[null]"), nil)
	r.wantError(t, "read with [null]", http.StatusNotFound)
	// A null-keyed document with the same id is a different document.
	r = s.do(t, "POST", docsPath("undef", "c"), hdr("x-ms-documentdb-partitionkey", "[null]"), []byte(`{"id":"u","pk":null}`))
	r.wantStatus(t, "create with a null pk", http.StatusCreated)
	// Numbers are keys by value: 5.0 in the body, 5 in the header, 5e0 to read.
	r = s.do(t, "POST", docsPath("undef", "c"), hdr("x-ms-documentdb-partitionkey", "[5]"), []byte(`{"id":"n","pk":5.0}`))
	r.wantStatus(t, "create pk 5.0 with header [5]", http.StatusCreated)
	r = s.do(t, "GET", docPath("undef", "c", "n"), hdr("x-ms-documentdb-partitionkey", "[5e0]"), nil)
	r.wantStatus(t, "read pk 5.0 with header [5e0]", http.StatusOK)
	r = s.do(t, "GET", docPath("undef", "c", "n"), hdr("x-ms-documentdb-partitionkey", `["5"]`), nil)
	r.wantError(t, "read pk 5.0 with header [\"5\"]", http.StatusNotFound)
}

// testItemIDs proves that ids with spaces, unicode, '+', '%', '?' and other
// characters survive create, read, replace and delete through the SDK (whose
// signing and path escaping must agree with the server's).
func testItemIDs(t *testing.T, s *server, c *azcosmos.Client) {
	db := mustDatabase(t, c, "ids")
	cc := mustContainer(t, db, pkContainer("c", nil))
	ids := []string{
		"This is a test", " leading space", "trailing space ", "two trailing  ",
		"WithUnicode鱀", "emoji😀", "plus+sign", "a+b=c", "percent%20", "percent%E9%B1%80", "100%", "question?mark",
		"WithAllowedSpecial,=.:~+-@()^${}[]!_Chars", "semi;colon", "amp&ersand", "quote\"d", "apos'trophe",
		"tab\there", "line\nfeed", "carriage\rreturn",
		strings.Repeat("x", 255),
	}
	for _, id := range ids {
		pk := azcosmos.NewPartitionKeyString(id)
		doc := mustMarshal(t, map[string]any{"id": id, "pk": id})
		cr, err := cc.CreateItem(ctx, pk, doc, nil)
		if err != nil || cr.RawResponse.StatusCode != http.StatusCreated {
			t.Errorf("create %q: %v", id, err)
			continue
		}
		rr, err := cc.ReadItem(ctx, pk, id, nil)
		if err != nil {
			t.Errorf("read %q: %v", id, err)
			continue
		}
		if got := decodeObject(t, rr.Value)["id"]; got != id {
			t.Errorf("read %q returned id %q", id, got)
		}
		if _, err := cc.ReplaceItem(ctx, pk, id, doc, nil); err != nil {
			t.Errorf("replace %q: %v", id, err)
		}
		ops := azcosmos.PatchOperations{}
		ops.AppendSet("/patched", true)
		if _, err := cc.PatchItem(ctx, pk, id, ops, nil); err != nil {
			t.Errorf("patch %q: %v", id, err)
		}
		if dr, err := cc.DeleteItem(ctx, pk, id, nil); err != nil || dr.RawResponse.StatusCode != http.StatusNoContent {
			t.Errorf("delete %q: %v", id, err)
		}
		if st := readStatus(t, cc, pk, id); st != http.StatusNotFound {
			t.Errorf("read %q after delete: %d", id, st)
		}
	}
}
