package engine

import (
	"strings"
	"testing"

	"github.com/lethe-db/lethe"
)

// wantBadBody fails unless err is a BadRequest with exactly message want.
func wantBadBody(t *testing.T, what string, err error, want string) {
	t.Helper()
	if lethe.ErrorCode(err) != lethe.CodeBadRequest || lethe.ErrorMessage(err) != want {
		t.Errorf("%s: %v (%s); want BadRequest %q", what, err, lethe.ErrorCode(err), want)
	}
}

// TestAmbiguousJSONRefused: every engine call that takes a body refuses JSON
// that cannot mean one thing, with where it is, and changes nothing.
func TestAmbiguousJSONRefused(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	if err := te.create("c", `{"id":"a","pk":"p","v":1}`); err != nil {
		t.Fatal(err)
	}
	before, _ := te.ReadDocument(ctx, ref("c", "a", "p"), Conditions{})

	dupID := `{"id":"a","pk":"p","id":"b"}`
	dupMsg := "The request body is not valid JSON: duplicate property name 'id' at offset 19."
	nested := `{"id":"a","pk":"p","x":{"k":1,"k":2}}`
	nestedMsg := "The request body is not valid JSON: duplicate property name 'k' at offset 30."
	big := `{"id":"a","pk":"p","n":1e400}`
	bigMsg := "The request body is not valid JSON: the number '1e400' at offset 23 does not fit a 64-bit floating-point value."
	long := `{"id":"a","pk":"p","n":-` + strings.Repeat("7", 400) + `}`
	longMsg := "The request body is not valid JSON: the number '-" + strings.Repeat("7", 63) + "...' at offset 23 does not fit a 64-bit floating-point value."
	for body, msg := range map[string]string{dupID: dupMsg, nested: nestedMsg, big: bigMsg, long: longMsg} {
		_, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("p")}, []byte(strings.Replace(body, `"id":"a"`, `"id":"new"`, 1)))
		if lethe.ErrorCode(err) != lethe.CodeBadRequest || !strings.Contains(lethe.ErrorMessage(err), "is not valid JSON") {
			t.Errorf("create %.50s: %v", body, err)
		}
		_, err = te.UpsertDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("p")}, []byte(body), Conditions{})
		wantBadBody(t, "upsert "+body[:min(len(body), 50)], err, msg)
		_, err = te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(body), Conditions{})
		wantBadBody(t, "replace "+body[:min(len(body), 50)], err, msg)
	}
	// Patch, in both SDKs' forms.
	for body, msg := range map[string]string{
		`{"operations":[{"op":"set","path":"/v","value":2}],"operations":[]}`:                                "The request body is not valid JSON: duplicate property name 'operations' at offset 51.",
		`[{"op":"set","path":"/v","value":{"k":1,"k":2}}]`:                                                   "The request body is not valid JSON: duplicate property name 'k' at offset 40.",
		`[{"op":"set","op":"remove","path":"/v","value":1}]`:                                                 "The request body is not valid JSON: duplicate property name 'op' at offset 13.",
		`[{"op":"incr","path":"/v","value":1e999}]`:                                                          "The request body is not valid JSON: the number '1e999' at offset 34 does not fit a 64-bit floating-point value.",
		`{"condition":"FROM c","condition":"FROM c WHERE false","operations":[{"op":"remove","path":"/v"}]}`: "The request body is not valid JSON: duplicate property name 'condition' at offset 22.",
	} {
		_, err := ParsePatch([]byte(body))
		wantBadBody(t, "patch "+body, err, msg)
	}
	// A batch operation's document.
	res, ok, err := te.ExecuteBatch(ctx, "db", "c", pk("p"), []BatchOp{
		{Type: "Create", Body: []byte(`{"id":"b1","pk":"p"}`)},
		{Type: "Upsert", Body: []byte(dupID)},
	})
	if err != nil || ok || len(res) != 2 || lethe.ErrorCode(res[0].Err) != lethe.CodeFailedDependency {
		t.Fatalf("batch: ok %v, err %v, %+v", ok, err, res)
	}
	wantBadBody(t, "batch", res[1].Err, dupMsg)

	after, _ := te.ReadDocument(ctx, ref("c", "a", "p"), Conditions{})
	if string(after.Body) != string(before.Body) {
		t.Errorf("refused writes changed the document:\n%s\n%s", before.Body, after.Body)
	}
	page, err := te.ReadFeed(ctx, "db", "c", FeedOptions{})
	if err != nil || len(page.Docs) != 1 {
		t.Errorf("refused writes left %d documents (%v); want 1", len(page.Docs), err)
	}

	// Databases, containers and offers.
	_, err = te.CreateDatabase(ctx, []byte(`{"id":"d2","id":"d3"}`))
	wantBadBody(t, "database", err, "The request body is not valid JSON: duplicate property name 'id' at offset 11.")
	_, err = te.CreateContainer(ctx, "db", []byte(`{"id":"c2","partitionKey":{"paths":["/pk"],"paths":["/x"]}}`))
	wantBadBody(t, "container create", err, "The request body is not valid JSON: duplicate property name 'paths' at offset 43.")
	c, _, _ := te.ReadContainer(ctx, "db", "c")
	_, err = te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":-1,"defaultTtl":1e400}`), "")
	wantBadBody(t, "container replace", err, "The request body is not valid JSON: duplicate property name 'defaultTtl' at offset 59.")
	if c2, _, _ := te.ReadContainer(ctx, "db", "c"); string(c2.Body) != string(c.Body) {
		t.Errorf("refused replace changed the container:\n%s\n%s", c.Body, c2.Body)
	}
	dbs, _ := te.ListDatabases(ctx)
	if len(dbs) != 1 {
		t.Errorf("%d databases; want 1", len(dbs))
	}
	if _, _, err := te.ReadContainer(ctx, "db", "c2"); lethe.ErrorCode(err) != lethe.CodeNotFound {
		t.Errorf("refused container create: read = %v", err)
	}

	// An offer replace: encoding/json would have kept the last throughput.
	m, err := te.CreateContainerWithThroughput(ctx, "db", []byte(`{"id":"m","partitionKey":{"paths":["/pk"]}}`), mustThroughput(t, "400", ""))
	if err != nil {
		t.Fatal(err)
	}
	all, err := te.ListOffers(ctx)
	var offers []Resource // the offer of container m (c has a default one)
	for _, o := range all {
		if decodeOffer(t, o).OfferResourceID == m.RID {
			offers = append(offers, o)
		}
	}
	if err != nil || len(offers) != 1 {
		t.Fatalf("offers of m: %d of %d, %v", len(offers), len(all), err)
	}
	offer := decodeOffer(t, offers[0])
	for body, msg := range map[string]string{
		`{"content":{"offerThroughput":800,"offerThroughput":1000}}`: "The request body is not valid JSON: duplicate property name 'offerThroughput' at offset 34.",
		`{"content":{"offerThroughput":1e400}}`:                      "The request body is not valid JSON: the number '1e400' at offset 30 does not fit a 64-bit floating-point value.",
	} {
		_, err := te.ReplaceOffer(ctx, offer.ID, []byte(body), "")
		wantBadBody(t, "offer replace "+body, err, msg)
	}
	if o, err := te.ReadOffer(ctx, offer.ID); err != nil || string(o.Body) != string(offers[0].Body) {
		t.Errorf("refused offer replaces changed the offer: %v\n%s\n%s", err, offers[0].Body, o.Body)
	}
}

// TestContainerDefaultTTLNullRefused: an explicit "defaultTtl": null is a 400
// on create and on replace, as in Cosmos DB; leaving the property out turns
// TTL off.
func TestContainerDefaultTTLNullRefused(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	const msg = "The input defaultTtl 'null' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
	_, err := te.CreateContainer(ctx, "db", []byte(`{"id":"n","partitionKey":{"paths":["/pk"]},"defaultTtl":null}`))
	wantBadBody(t, "create with null", err, msg)
	if _, _, err := te.ReadContainer(ctx, "db", "n"); lethe.ErrorCode(err) != lethe.CodeNotFound {
		t.Errorf("refused create: read = %v", err)
	}

	te.mustContainer("c", `"defaultTtl":60`)
	_, err = te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":null}`), "")
	wantBadBody(t, "replace with null", err, msg)
	if res, _, _ := te.ReadContainer(ctx, "db", "c"); !strings.Contains(string(res.Body), `"defaultTtl":60`) {
		t.Errorf("refused replace changed the container: %s", res.Body)
	}
	// Without the property, TTL is off.
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), ""); err != nil {
		t.Fatal(err)
	}
	if res, _, _ := te.ReadContainer(ctx, "db", "c"); strings.Contains(string(res.Body), "defaultTtl") {
		t.Errorf("replace without defaultTtl: %s", res.Body)
	}
}
