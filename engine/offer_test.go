package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
)

type offerBody struct {
	ID              string `json:"id"`
	RID             string `json:"_rid"`
	Self            string `json:"_self"`
	Resource        string `json:"resource"`
	OfferResourceID string `json:"offerResourceId"`
	OfferType       string `json:"offerType"`
	OfferVersion    string `json:"offerVersion"`
	ETag            string `json:"_etag"`
	Content         struct {
		OfferThroughput int `json:"offerThroughput"`
		Autopilot       *struct {
			MaxThroughput int `json:"maxThroughput"`
		} `json:"offerAutopilotSettings"`
	} `json:"content"`
}

func decodeOffer(t *testing.T, r Resource) offerBody {
	t.Helper()
	var o offerBody
	if err := json.Unmarshal(r.Body, &o); err != nil {
		t.Fatalf("offer %s: %v", r.Body, err)
	}
	return o
}

func mustThroughput(t *testing.T, manual, auto string) *Throughput {
	t.Helper()
	tp, err := ParseThroughput(manual, auto)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestParseThroughputValidation(t *testing.T) {
	ok := []struct{ manual, auto string }{
		{"", ""}, {"400", ""}, {"1000000", ""}, {"12300", ""},
		{"", `{"maxThroughput":1000}`}, {"", `{"maxThroughput":4000,"autoUpgradePolicy":{"throughputPolicy":{"incrementPercent":10}}}`},
	}
	for _, c := range ok {
		if _, err := ParseThroughput(c.manual, c.auto); err != nil {
			t.Errorf("ParseThroughput(%q, %q): %v", c.manual, c.auto, err)
		}
	}
	bad := []struct{ manual, auto, want string }{
		{"300", "", "between 400 and 1000000"},
		{"450", "", "multiple of 100"},
		{"1000100", "", "between"},
		{"abc", "", "whole number"},
		{"400.5", "", "whole number"},
		{"400", `{"maxThroughput":4000}`, "not both"},
		{"", `{"maxThroughput":500}`, "at least|between"},
		{"", `{"maxThroughput":1500}`, "multiple of 1000"},
		{"", `{"maxThroughput":"4000"}`, "whole number"},
		{"", `{}`, "whole number"},
		{"", `[`, "JSON object"},
		{"", `{"maxThroughput":4000,"maxThroughput":1000}`, "duplicate property name 'maxThroughput' at offset 22"},
		{"", `{"maxThroughput":1e400}`, "the number '1e400' at offset 17 does not fit"},
	}
	for _, c := range bad {
		_, err := ParseThroughput(c.manual, c.auto)
		if lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Errorf("ParseThroughput(%q, %q) = %v, want BadRequest", c.manual, c.auto, err)
			continue
		}
		matched := false
		for _, w := range strings.Split(c.want, "|") {
			matched = matched || strings.Contains(lethe.ErrorMessage(err), w)
		}
		if !matched {
			t.Errorf("ParseThroughput(%q, %q) message %q, want it to mention %q", c.manual, c.auto, lethe.ErrorMessage(err), c.want)
		}
	}
}

func TestOffersStoredWithResources(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	db, err := e.CreateDatabaseWithThroughput(ctx, []byte(`{"id":"shared"}`), mustThroughput(t, "", `{"maxThroughput":4000}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(ctx, []byte(`{"id":"plain"}`)); err != nil {
		t.Fatal(err)
	}
	manual, err := e.CreateContainerWithThroughput(ctx, "plain", []byte(`{"id":"m","partitionKey":{"paths":["/pk"]}}`), mustThroughput(t, "400", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "plain", []byte(`{"id":"none","partitionKey":{"paths":["/pk"]}}`)); err != nil {
		t.Fatal(err)
	}
	list, err := e.ListOffers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("offers: %d, want 3 (the shared database, the manual container, the default offer of the other)", len(list))
	}
	dbOffer, collOffer := decodeOffer(t, list[0]), decodeOffer(t, list[1])
	if def := decodeOffer(t, list[2]); def.Content.OfferThroughput != 400 || def.Content.Autopilot != nil || def.ID == collOffer.ID {
		t.Errorf("default offer: %+v", def)
	}
	if dbOffer.OfferResourceID != db.RID || dbOffer.Resource != "dbs/"+db.RID+"/" || dbOffer.Content.Autopilot == nil || dbOffer.Content.Autopilot.MaxThroughput != 4000 || dbOffer.Content.OfferThroughput != 400 {
		t.Errorf("database offer: %+v", dbOffer)
	}
	if collOffer.OfferResourceID != manual.RID || !strings.HasSuffix(collOffer.Resource, "/colls/"+manual.RID+"/") || collOffer.Content.OfferThroughput != 400 || collOffer.Content.Autopilot != nil {
		t.Errorf("container offer: %+v", collOffer)
	}
	if collOffer.ID != strings.ToLower(collOffer.ID) || collOffer.RID != collOffer.ID || collOffer.Self != "offers/"+collOffer.ID+"/" || collOffer.OfferVersion != "V2" || collOffer.OfferType != "Invalid" {
		t.Errorf("offer identity: %+v", collOffer)
	}

	// A query really filters (the Go SDK's form).
	page, err := e.QueryResources(ctx, bodies(list), QueryOptions{Text: "SELECT * FROM c WHERE c.offerResourceId = '" + manual.RID + "'"})
	if err != nil || len(page.Rows) != 1 {
		t.Fatalf("query: %d rows, %v", len(page.Rows), err)
	}

	// Replace within the kind; the etag changes and If-Match is honoured.
	if _, err := e.ReplaceOffer(ctx, collOffer.ID, []byte(`{"content":{"offerThroughput":800}}`), `"stale"`); lethe.ErrorCode(err) != lethe.CodePreconditionFailed {
		t.Fatalf("stale If-Match: %v", err)
	}
	res, err := e.ReplaceOffer(ctx, collOffer.ID, []byte(`{"content":{"offerThroughput":800}}`), collOffer.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if o := decodeOffer(t, res); o.Content.OfferThroughput != 800 || o.ETag == collOffer.ETag {
		t.Errorf("replaced offer: %+v", o)
	}
	// Kind changes, bad values and unknown ids change nothing.
	for _, body := range []string{
		`{"content":{"offerAutopilotSettings":{"maxThroughput":4000}}}`,
		`{"content":{"offerThroughput":450}}`,
		`{"content":{}}`,
		`{"id":"other","content":{"offerThroughput":900}}`,
		`not json`,
	} {
		if _, err := e.ReplaceOffer(ctx, collOffer.ID, []byte(body), ""); lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Errorf("replace with %s: %v, want BadRequest", body, err)
		}
	}
	if _, err := e.ReplaceOffer(ctx, dbOffer.ID, []byte(`{"content":{"offerThroughput":400}}`), ""); lethe.ErrorCode(err) != lethe.CodeBadRequest {
		t.Errorf("autoscale to manual: %v, want BadRequest", err)
	}
	if _, err := e.ReplaceOffer(ctx, dbOffer.ID, []byte(`{"content":{"offerThroughput":400,"offerAutopilotSettings":{"maxThroughput":6000}}}`), ""); err != nil {
		t.Errorf("autoscale max change: %v", err)
	}
	if _, err := e.ReadOffer(ctx, "c999"); lethe.ErrorCode(err) != lethe.CodeNotFound {
		t.Errorf("unknown offer: %v", err)
	}
	got, err := e.ReadOffer(ctx, collOffer.ID)
	if err != nil || decodeOffer(t, got).Content.OfferThroughput != 800 {
		t.Fatalf("read after failed replaces: %s %v", got.Body, err)
	}

	// A container replace keeps its offer.
	if _, err := e.ReplaceContainer(ctx, "plain", "m", []byte(`{"id":"m","partitionKey":{"paths":["/pk"]},"defaultTtl":60}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReadOffer(ctx, collOffer.ID); err != nil {
		t.Fatalf("offer after container replace: %v", err)
	}

	// Deleting the resource removes its offer.
	if err := e.DeleteContainer(ctx, "plain", "m"); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteDatabase(ctx, "shared"); err != nil {
		t.Fatal(err)
	}
	if list, _ := e.ListOffers(ctx); len(list) != 1 {
		t.Fatalf("offers after deletes: %d, want 1 (the default offer of plain/none)", len(list))
	}
	if err := e.DeleteDatabase(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	if list, _ := e.ListOffers(ctx); len(list) != 0 {
		t.Fatalf("offers after deleting every resource: %d", len(list))
	}
}

// offerOf returns the offer whose offerResourceId is rid, failing if there is
// not exactly one.
func offerOf(t *testing.T, e *Engine, rid string) offerBody {
	t.Helper()
	list, err := e.ListOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found []offerBody
	for _, r := range list {
		if o := decodeOffer(t, r); o.OfferResourceID == rid {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d offers for resource %s; want 1", len(found), rid)
	}
	return found[0]
}

// A container created without throughput in a database without shared
// throughput has a 400 RU/s manual offer, visible but (by default) not
// enforced: it throttles nothing and gives the purger no budget, exactly as
// before offers were visible. Containers in a shared database have none.
// Replaced, it becomes explicit and enforced; its id never changes.
func TestDefaultOffer(t *testing.T) {
	e := newTestEngine(t)
	e.mustDB("db")
	e.mustContainer("c", "")
	if _, err := e.CreateDatabaseWithThroughput(ctx, []byte(`{"id":"shared"}`), mustThroughput(t, "1000", "")); err != nil {
		t.Fatal(err)
	}
	inShared, err := e.CreateContainer(ctx, "shared", []byte(`{"id":"in","partitionKey":{"paths":["/pk"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, info, err := e.ReadContainer(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	def := offerOf(t, e.Engine, info.RID)
	var coll struct {
		TS int64 `json:"_ts"`
	}
	json.Unmarshal(res.Body, &coll)
	if def.Content.OfferThroughput != 400 || def.Content.Autopilot != nil || def.ETag == "" || !strings.HasSuffix(def.Resource, "/colls/"+info.RID+"/") {
		t.Errorf("default offer %+v", def)
	}
	read, err := e.ReadOffer(ctx, def.ID)
	if err != nil || decodeOffer(t, read) != def || read.ETag != def.ETag {
		t.Errorf("ReadOffer(%s) = %s, %v; want the listed offer", def.ID, read.Body, err)
	}
	var ts struct {
		TS int64 `json:"_ts"`
	}
	json.Unmarshal(read.Body, &ts)
	if ts.TS != coll.TS || ts.TS == 0 {
		t.Errorf("default offer _ts %d; want the container's %d", ts.TS, coll.TS)
	}
	list, _ := e.ListOffers(ctx)
	for _, r := range list {
		if decodeOffer(t, r).OfferResourceID == inShared.RID {
			t.Errorf("a container in a shared database has an offer: %s", r.Body)
		}
	}

	// Not enforced: no budget, nothing throttled, whatever is charged.
	if b := e.budget(t, "c"); b != nil {
		t.Fatalf("BudgetFor a default offer: rate %v; want none", b.Rate())
	}
	adm, err := e.Admit(ctx, "db", "c")
	if err != nil || adm.bucket != nil {
		t.Fatalf("Admit under a default offer: %+v %v", adm, err)
	}

	// Stable across a container replace and a restart.
	if _, err := e.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":5}`), ""); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if again := offerOf(t, e.Engine, info.RID); again.ID != def.ID || again.ETag != def.ETag || again.Content.OfferThroughput != 400 {
		t.Errorf("after a container replace and a reopen: %+v; want %+v", again, def)
	}

	// Replaced (If-Match honoured): explicit, enforced, same id, new etag.
	if _, err := e.ReplaceOffer(ctx, def.ID, []byte(`{"content":{"offerThroughput":500}}`), `"stale"`); lethe.ErrorCode(err) != lethe.CodePreconditionFailed {
		t.Fatalf("stale If-Match: %v", err)
	}
	if _, err := e.ReplaceOffer(ctx, def.ID, []byte(`{"content":{"offerAutopilotSettings":{"maxThroughput":4000}}}`), ""); lethe.ErrorCode(err) != lethe.CodeBadRequest {
		t.Fatalf("a default offer is manual: %v", err)
	}
	put, err := e.ReplaceOffer(ctx, def.ID, []byte(`{"content":{"offerThroughput":500}}`), def.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if o := decodeOffer(t, put); o.ID != def.ID || o.ETag == def.ETag || o.Content.OfferThroughput != 500 {
		t.Errorf("replaced default offer %+v", o)
	}
	e.reopen()
	if b := e.budget(t, "c"); b == nil || b.Rate() != 500 {
		t.Fatalf("a replaced default offer governs after a reopen: %v", b)
	}
	if o := offerOf(t, e.Engine, info.RID); o.ID != def.ID || o.Content.OfferThroughput != 500 {
		t.Errorf("after reopen: %+v", o)
	}

	// Gone with the container; a container of the same name gets a new id.
	if err := e.DeleteContainer(ctx, "db", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReadOffer(ctx, def.ID); lethe.ErrorCode(err) != lethe.CodeNotFound {
		t.Errorf("offer of a deleted container: %v", err)
	}
	e.mustContainer("c", "")
	_, info2, _ := e.ReadContainer(ctx, "db", "c")
	if o := offerOf(t, e.Engine, info2.RID); o.ID == def.ID || o.ETag == def.ETag {
		t.Errorf("the new container reuses the old offer's id or etag: %+v", o)
	}
}

// Under EnforceDefaultThroughput the default offer governs like a manual
// 400 RU/s offer: requests are throttled and the purge gets its spare
// capacity. A container in a shared database stays on the database's.
func TestEnforcedDefaultOffer(t *testing.T) {
	e := openTestEngine(t, newMemStore(t), Options{DisableBackground: true, EnforceDefaultThroughput: true})
	e.mustDB("db")
	e.mustContainer("c", "")
	b := e.budget(t, "c")
	if b == nil || b.Rate() != 400 {
		t.Fatalf("BudgetFor an enforced default offer: %v", b)
	}
	adm, err := e.Admit(ctx, "db", "c")
	if err != nil || adm.bucket != b {
		t.Fatalf("Admit: %+v %v", adm, err)
	}
	adm.Charge(1000)
	if _, err := e.Admit(ctx, "db", "c"); lethe.ErrorCode(err) != lethe.CodeTooManyRequests {
		t.Fatalf("an exhausted default budget admits: %v", err)
	}

	// The purge of a container under an enforced default offer runs on its
	// spare capacity: none while users have spent the second's budget.
	e.mustContainer("ttl", `"defaultTtl":10`)
	for i := range 20 {
		if err := e.create("ttl", fmt.Sprintf(`{"id":"d%d","pk":"p"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(20 * time.Second)
	adm, err = e.Admit(ctx, "db", "ttl")
	if err != nil {
		t.Fatal(err)
	}
	adm.Charge(400)
	if n, err := e.purge(ctx, true); err != nil || n != 0 {
		t.Fatalf("purge with no spare capacity under an enforced default offer deleted %d (%v), want 0", n, err)
	}
	e.clock.Advance(1100 * time.Millisecond)
	if n, err := e.purge(ctx, true); err != nil || n != 20 {
		t.Fatalf("purge with 400 RU spare deleted %d (%v), want 20", n, err)
	}

	if _, err := e.CreateDatabaseWithThroughput(ctx, []byte(`{"id":"shared"}`), mustThroughput(t, "1000", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "shared", []byte(`{"id":"in","partitionKey":{"paths":["/pk"]}}`)); err != nil {
		t.Fatal(err)
	}
	budget, err := e.BudgetFor(ctx, "shared", "in")
	if err != nil || budget == nil || budget.Rate() != 1000 {
		t.Fatalf("a container in a shared database: %v %v; want the database's 1000 RU/s", budget, err)
	}
}

func TestAdmitThrottlesAndChargesAfterwards(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	if _, err := e.CreateDatabase(ctx, []byte(`{"id":"db"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "db", []byte(`{"id":"free","partitionKey":{"paths":["/pk"]}}`)); err != nil {
		t.Fatal(err)
	}
	// Before any throughput exists, Admit is a no-op.
	adm, err := e.Admit(ctx, "db", "free")
	if err != nil || adm.bucket != nil {
		t.Fatalf("unlimited admit: %+v %v", adm, err)
	}
	_, err = e.CreateContainerWithThroughput(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), mustThroughput(t, "400", ""))
	if err != nil {
		t.Fatal(err)
	}
	adm, err = e.Admit(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	adm.Charge(1000) // -600
	_, err = e.Admit(ctx, "db", "c")
	var le *lethe.Error
	if !asError(err, &le) || le.Code != lethe.CodeTooManyRequests || le.SubStatus != 3200 || le.RetryAfter != 1501*time.Millisecond {
		t.Fatalf("exhausted admit: %#v", err)
	}
	// Other containers are not affected, and a missing one is admitted.
	if adm, err := e.Admit(ctx, "db", "free"); err != nil || adm.bucket != nil {
		t.Fatalf("unlimited container: %v", err)
	}
	if _, err := e.Admit(ctx, "db", "missing"); err != nil {
		t.Fatalf("missing container: %v", err)
	}
	if b := e.budget(t, "c"); b == nil || b.Rate() != 400 {
		t.Fatalf("BudgetFor: %v", b)
	}
	if b := e.budget(t, "free"); b != nil {
		t.Fatal("BudgetFor an unlimited container must be nil")
	}
	e.clock.Advance(1502 * time.Millisecond)
	if _, err := e.Admit(ctx, "db", "c"); err != nil {
		t.Fatalf("after refill: %v", err)
	}
	// A new offer rebuilds the bucket at the new rate.
	list, _ := e.ListOffers(ctx)
	if _, err := e.ReplaceOffer(ctx, decodeOffer(t, list[0]).ID, []byte(`{"content":{"offerThroughput":1000}}`), ""); err != nil {
		t.Fatal(err)
	}
	if b := e.budget(t, "c"); b == nil || b.Rate() != 1000 {
		t.Fatalf("BudgetFor after replace: %v", b)
	}
}

func TestSharedThroughputGovernsContainersWithoutTheirOwn(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	if _, err := e.CreateDatabaseWithThroughput(ctx, []byte(`{"id":"db"}`), mustThroughput(t, "400", "")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := e.CreateContainer(ctx, "db", []byte(`{"id":"`+id+`","partitionKey":{"paths":["/pk"]}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.CreateContainerWithThroughput(ctx, "db", []byte(`{"id":"own","partitionKey":{"paths":["/pk"]}}`), mustThroughput(t, "1000", "")); err != nil {
		t.Fatal(err)
	}
	if e.budget(t, "a") != e.budget(t, "b") || e.budget(t, "a") == nil {
		t.Fatal("containers without throughput must share the database's bucket")
	}
	if e.budget(t, "own") == e.budget(t, "a") {
		t.Fatal("a container with its own throughput has its own bucket")
	}
	adm, err := e.Admit(ctx, "db", "a")
	if err != nil {
		t.Fatal(err)
	}
	adm.Charge(400)
	if _, err := e.Admit(ctx, "db", "b"); lethe.ErrorCode(err) != lethe.CodeTooManyRequests {
		t.Fatalf("b shares a's exhausted budget: %v", err)
	}
	if _, err := e.Admit(ctx, "db", "own"); err != nil {
		t.Fatalf("own budget: %v", err)
	}
}

func TestProvisionedMarkerSurvivesReopen(t *testing.T) {
	store := newMemStore(t)
	ctx := context.Background()
	e, err := Open(ctx, Options{Store: store, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	e.CreateDatabase(ctx, []byte(`{"id":"db"}`))
	if _, err := e.CreateContainerWithThroughput(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), mustThroughput(t, "400", "")); err != nil {
		t.Fatal(err)
	}
	e.Close()
	guards.Lock()
	_, live := guards.m[store]
	guards.Unlock()
	if live {
		t.Fatal("the guard must be released with the last engine")
	}
	e2, err := Open(ctx, Options{Store: store, DisableBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	adm, err := e2.Admit(ctx, "db", "c")
	if err != nil || adm.bucket == nil {
		t.Fatalf("after reopen the container must be governed: %+v %v", adm, err)
	}
}

func asError(err error, target **lethe.Error) bool {
	e, ok := err.(*lethe.Error)
	*target = e
	return ok
}

func bodies(list []Resource) [][]byte {
	out := make([][]byte, len(list))
	for i, r := range list {
		out[i] = r.Body
	}
	return out
}
