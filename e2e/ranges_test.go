package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestPartitionKeyRanges: a container provisioned above 10,000 RU/s is laid
// out in several partition key ranges, as Cosmos DB gives it several
// physical partitions, and documents fall into ranges by the effective
// partition key the SDKs compute: the Go SDK's ReadMany groups items by range
// with its own hashing and asks each range for its items, so any
// disagreement loses items. Range-scoped queries and feeds see exactly their
// range's documents, and session tokens name the range they come from.
func TestPartitionKeyRanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t, serverOpts{InMemory: true})
	db := mustDatabase(t, s.client(t), "ranges")
	tp := azcosmos.NewManualThroughputProperties(30_000)
	if _, err := db.CreateContainer(ctx, pkContainer("multi", nil), &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	cc, _ := db.NewContainer("multi")
	single := mustContainer(t, db, pkContainer("single", nil))

	// The ranges: three, adjacent, from "" to "FF".
	feedRanges, err := cc.ReadFeedRanges(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(feedRanges) != 3 || feedRanges[0].MinInclusive != "" || feedRanges[2].MaxExclusive != "FF" ||
		feedRanges[0].MaxExclusive != feedRanges[1].MinInclusive || feedRanges[1].MaxExclusive != feedRanges[2].MinInclusive {
		t.Fatalf("feed ranges of a 30,000 RU/s container: %+v", feedRanges)
	}
	if fr, err := single.ReadFeedRanges(ctx, nil); err != nil || len(fr) != 1 {
		t.Fatalf("feed ranges of a container without throughput: %+v, %v", fr, err)
	}
	r := s.do(t, "GET", collPath("ranges", "multi")+"/pkranges", nil, nil)
	r.wantStatus(t, "pkranges", http.StatusOK)
	var pkr struct {
		Ranges []struct {
			ID  string `json:"id"`
			Min string `json:"minInclusive"`
			Max string `json:"maxExclusive"`
		} `json:"PartitionKeyRanges"`
	}
	if err := json.Unmarshal(r.Body, &pkr); err != nil || len(pkr.Ranges) != 3 || pkr.Ranges[0].ID != "0" || pkr.Ranges[2].ID != "2" {
		t.Fatalf("pkranges body %s", r.Body)
	}

	// Documents under 90 partition key values of several types; each write
	// and read carries the session token of its document's range.
	const n = 90
	rangeOfToken := map[string]string{} // id -> range id from its create's session token
	var all []azcosmos.ItemIdentity
	for i := range n {
		id := fmt.Sprintf("d%02d", i)
		var pk azcosmos.PartitionKey
		var pkv any
		switch i % 3 {
		case 0:
			pk, pkv = azcosmos.NewPartitionKeyString(fmt.Sprintf("user-%d", i)), fmt.Sprintf("user-%d", i)
		case 1:
			pk, pkv = azcosmos.NewPartitionKeyNumber(float64(i)*1.5), float64(i)*1.5
		default:
			pk, pkv = azcosmos.NewPartitionKeyBool(i%2 == 0), i%2 == 0
		}
		res, err := cc.CreateItem(ctx, pk, mustMarshal(t, map[string]any{"id": id, "pk": pkv}), nil)
		if err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		token := res.SessionToken
		if token == nil || strings.Contains(*token, ",") || !strings.HasSuffix(*token, fmt.Sprintf(":-1#%s", strings.SplitN(*token, "#", 2)[1])) {
			t.Fatalf("create %s: session token %v is not one range's", id, token)
		}
		rangeOfToken[id] = strings.SplitN(*token, ":", 2)[0]
		read, err := cc.ReadItem(ctx, pk, id, nil)
		if err != nil || read.SessionToken == nil || !strings.HasPrefix(*read.SessionToken, rangeOfToken[id]+":") {
			t.Fatalf("read %s: token %v, %v; want range %s", id, read.SessionToken, err, rangeOfToken[id])
		}
		all = append(all, azcosmos.ItemIdentity{ID: id, PartitionKey: pk})
	}

	// Each range's documents: disjoint, together all of them, each where
	// its session token said, none empty.
	seen := map[string]string{}
	for _, rg := range []string{"0", "1", "2"} {
		for _, how := range []string{"query", "feed"} {
			var ids []string
			var token string
			if how == "query" {
				r := s.do(t, "POST", docsPath("ranges", "multi"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "true",
					"x-ms-documentdb-partitionkeyrangeid", rg, "x-ms-max-item-count", "1000"), []byte(`{"query":"SELECT VALUE c.id FROM c"}`))
				r.wantStatus(t, "query of range "+rg, http.StatusOK)
				for _, v := range r.json(t)["Documents"].([]any) {
					ids = append(ids, v.(string))
				}
				token = r.Header.Get("x-ms-session-token")
			} else {
				page, raw := s.readFeedPage(t, "ranges", "multi", hdr("x-ms-documentdb-partitionkeyrangeid", rg, "x-ms-max-item-count", "1000"))
				for _, d := range page.Docs {
					ids = append(ids, d["id"].(string))
				}
				token = raw.Header.Get("x-ms-session-token")
			}
			if !strings.HasPrefix(token, rg+":") || strings.Contains(token, ",") {
				t.Errorf("%s of range %s: session token %q", how, rg, token)
			}
			if len(ids) == 0 {
				t.Errorf("%s of range %s: no documents (of %d)", how, rg, n)
			}
			for _, id := range ids {
				if rangeOfToken[id] != rg {
					t.Errorf("%s of range %s returned %s, whose session token named range %s", how, rg, id, rangeOfToken[id])
				}
				if how == "query" {
					if prev, dup := seen[id]; dup {
						t.Errorf("%s is in ranges %s and %s", id, prev, rg)
					}
					seen[id] = rg
				}
			}
		}
	}
	if len(seen) != n {
		t.Errorf("the ranges' queries returned %d documents, want %d", len(seen), n)
	}

	// A cross-partition query reads every range and its token names each.
	cross := s.do(t, "POST", docsPath("ranges", "multi"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "true",
		"x-ms-documentdb-query-enablecrosspartition", "true", "x-ms-max-item-count", "1000"), []byte(`{"query":"SELECT VALUE c.id FROM c"}`))
	if docs := cross.json(t)["Documents"].([]any); len(docs) != n {
		t.Errorf("cross-partition query: %d documents, want %d", len(docs), n)
	}
	if tok := cross.Header.Get("x-ms-session-token"); strings.Count(tok, ",") != 2 || !strings.HasPrefix(tok, "0:") {
		t.Errorf("cross-partition session token %q does not name the three ranges", tok)
	}

	// The Go SDK's queries: across every range in pages, and in one
	// partition of a multi-range container.
	if paged, err := queryStrings(ctx, cc, "SELECT VALUE c.id FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 7}); err != nil || len(paged) != n {
		t.Errorf("Go SDK cross-partition query in pages of 7: %d ids, %v; want %d", len(paged), err, n)
	}
	if one, err := queryStrings(ctx, cc, "SELECT VALUE c.id FROM c ORDER BY c.id DESC", azcosmos.NewPartitionKeyNumber(1.5), nil); err != nil || !slices.Equal(one, []string{"d01"}) {
		t.Errorf("Go SDK query of partition 1.5: %q, %v", one, err)
	}

	// The Go SDK's ReadMany computes each item's range itself.
	many, err := cc.ReadManyItems(ctx, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, item := range many.Items {
		got = append(got, decodeObject(t, item)["id"].(string))
	}
	slices.Sort(got)
	var want []string
	for _, it := range all {
		want = append(want, it.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReadMany over three ranges returned %d of %d items: %v", len(got), n, got)
	}

	// An effective partition key sub-range: the first half of range 0.
	half := s.do(t, "POST", docsPath("ranges", "multi"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "true",
		"x-ms-documentdb-partitionkeyrangeid", "0", "x-ms-start-epk", "", "x-ms-end-epk", "0AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"x-ms-read-key-type", "EffectivePartitionKeyRange", "x-ms-max-item-count", "1000"), []byte(`{"query":"SELECT VALUE c.id FROM c"}`))
	half.wantStatus(t, "query of half a range", http.StatusOK)
	inRange0 := 0
	for _, rg := range seen {
		if rg == "0" {
			inRange0++
		}
	}
	if k := len(half.json(t)["Documents"].([]any)); k == 0 || k >= inRange0 {
		t.Errorf("half of range 0 holds %d documents; the whole range %d", k, inRange0)
	}

	// Ranges that do not exist are gone (clients refresh their routing map);
	// ids that cannot be ranges are bad requests.
	gone := s.do(t, "POST", docsPath("ranges", "multi"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "true",
		"x-ms-documentdb-partitionkeyrangeid", "7"), []byte(`{"query":"SELECT * FROM c"}`))
	gone.wantError(t, "range 7 of 3", http.StatusGone)
	if sub := gone.Header.Get("x-ms-substatus"); sub != "1002" {
		t.Errorf("range 7: substatus %q, want 1002", sub)
	}
	s.do(t, "POST", docsPath("ranges", "multi"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "true",
		"x-ms-documentdb-partitionkeyrangeid", "x"), []byte(`{"query":"SELECT * FROM c"}`)).wantError(t, "range x", http.StatusBadRequest)
	s.do(t, "POST", docsPath("ranges", "multi"), hdr("Content-Type", "application/query+json", "x-ms-documentdb-isquery", "true",
		"x-ms-documentdb-partitionkeyrangeid", "0", "x-ms-start-epk", "zz", "x-ms-end-epk", "FF"), []byte(`{"query":"SELECT * FROM c"}`)).wantError(t, "epk zz", http.StatusBadRequest)
}

// TestBulkBatch: a non-atomic batch (what the SDKs' bulk executors send, one
// per partition key range) runs each operation on its own: a failing one
// changes nothing and the others land; an operation whose key lies outside
// the range it was sent to fails with 410/1002 so the client re-routes it;
// with continue-on-error false the operations after a failure are not run.
func TestBulkBatch(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	db := mustDatabase(t, s.client(t), "bulk")
	tp := azcosmos.NewManualThroughputProperties(20_000)
	if _, err := db.CreateContainer(context.Background(), pkContainer("c", nil), &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	bulk := func(rangeID string, continueOnError bool, ops string) (rawResponse, []map[string]any) {
		h := hdr("x-ms-cosmos-is-batch-request", "true", "x-ms-cosmos-batch-atomic", "false",
			"x-ms-cosmos-batch-continue-on-error", fmt.Sprint(continueOnError), "x-ms-documentdb-partitionkeyrangeid", rangeID)
		r := s.do(t, "POST", docsPath("bulk", "c"), h, []byte(ops))
		var results []map[string]any
		if err := json.Unmarshal(r.Body, &results); err != nil {
			t.Fatalf("bulk response %s", r.Body)
		}
		return r, results
	}
	statuses := func(results []map[string]any) []int {
		var out []int
		for _, r := range results {
			out = append(out, int(r["statusCode"].(float64)))
		}
		return out
	}
	// Find which of two keys lives in which range, by asking each range.
	rangeOf := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		for _, rg := range []string{"0", "1"} {
			r, res := bulk(rg, true, `[{"operationType":"Create","partitionKey":"[\"`+k+`\"]","resourceBody":{"id":"probe","pk":"`+k+`"}}]`)
			if st := statuses(res)[0]; st == http.StatusCreated {
				rangeOf[k] = rg
				if !strings.HasPrefix(r.Header.Get("x-ms-session-token"), rg+":") {
					t.Errorf("bulk in range %s: session token %q", rg, r.Header.Get("x-ms-session-token"))
				}
			} else if st != http.StatusGone || res[0]["subStatusCode"] != float64(1002) {
				t.Fatalf("create of key %s in range %s: %v", k, rg, res[0])
			}
		}
		if rangeOf[k] == "" {
			t.Fatalf("key %s is in neither range", k)
		}
	}
	var in, out string // a key in range 0 and one outside it
	for k, rg := range rangeOf {
		if rg == "0" {
			in = k
		} else {
			out = k
		}
	}
	if in == "" || out == "" {
		t.Fatalf("six keys all fell in one range: %v", rangeOf)
	}
	op := func(typ, pk, body string) string {
		return `{"operationType":"` + typ + `","partitionKey":"[\"` + pk + `\"]","id":"x","resourceBody":` + body + `}`
	}
	r, res := bulk("0", true, "["+op("Create", in, `{"id":"x","pk":"`+in+`"}`)+","+op("Create", in, `{"id":"x","pk":"`+in+`"}`)+","+
		op("Create", out, `{"id":"x","pk":"`+out+`"}`)+","+op("Upsert", in, `{"id":"y","pk":"`+in+`"}`)+"]")
	if r.Status != http.StatusMultiStatus || !slices.Equal(statuses(res), []int{201, 409, 410, 201}) {
		t.Fatalf("bulk with failures: %d %v", r.Status, statuses(res))
	}
	_, res = bulk("0", false, "["+op("Read", in, `null`)+","+op("Create", in, `{"id":"x","pk":"`+in+`"}`)+","+op("Delete", in, `null`)+"]")
	if !slices.Equal(statuses(res), []int{200, 409, 424}) {
		t.Fatalf("bulk without continue-on-error: %v", statuses(res))
	}
	if readStatus(t, mustContainerClient(t, db, "c"), azcosmos.NewPartitionKeyString(in), "x") != http.StatusOK {
		t.Error("the operation after the failure ran")
	}
}

func mustContainerClient(t *testing.T, db *azcosmos.DatabaseClient, id string) *azcosmos.ContainerClient {
	t.Helper()
	cc, err := db.NewContainer(id)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}
