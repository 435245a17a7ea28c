package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// ttlMessage is Cosmos DB's validation message for a rejected ttl or defaultTtl
// (shared/TTL-SPEC.md).
func ttlMessage(field, value string) string {
	return fmt.Sprintf("The input %s '%s' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.", field, value)
}

// noneWithTTLMessage is the message for indexing mode none with defaultTtl.
const noneWithTTLMessage = "Indexing mode value cannot be 'none' when 'defaultTtl' is specified in the collection"

// TestTTL proves time to live in real time, end to end: every cell of the
// TTL-SPEC matrix and what every operation sees after expiry, the exact expiry
// instant (_ts + ttl <= now), changing and disabling a container's defaultTtl,
// expiry being final, writes restarting the countdown, unique keys ignoring
// expired documents, ttl values stored exactly as sent, and the validation
// messages. Everything runs twice: against a server whose background purger is
// off (--disable-purger), which proves that expiry is decided inline on the
// request path and that "expiry is final" does not rest on physical deletion,
// and against a default server, where the purger races every check. TTLs are
// 1-3 seconds and the subtests run in parallel, so the test sleeps about 3 s.
func TestTTL(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"purger off", []string{"--disable-purger"}},
		{"purger on", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, serverOpts{InMemory: true, Args: mode.args})
			c := s.client(t)
			db := mustDatabase(t, c, "ttl")

			t.Run("matrix", func(t *testing.T) { t.Parallel(); testTTLMatrix(t, s, c, db) })
			t.Run("default change applies at once and expiry is final", func(t *testing.T) { t.Parallel(); testTTLDefaultChange(t, s, db) })
			t.Run("disabling stops own ttl", func(t *testing.T) { t.Parallel(); testTTLDisable(t, db) })
			t.Run("values stored while off", func(t *testing.T) { t.Parallel(); testTTLStoredWhileOff(t, s, db) })
			t.Run("writes restart the countdown", func(t *testing.T) { t.Parallel(); testTTLRestartCountdown(t, db) })
			t.Run("ttl written by patch", func(t *testing.T) { t.Parallel(); testTTLPatch(t, db) })
			t.Run("unique keys ignore expired documents", func(t *testing.T) { t.Parallel(); testTTLUniqueKeys(t, db) })
			t.Run("ttl stored as sent", func(t *testing.T) { t.Parallel(); testTTLStoredAsSent(t, s, db) })
			t.Run("validation messages", func(t *testing.T) { t.Parallel(); testTTLValidation(t, s, db) })
			t.Run("indexing mode none", func(t *testing.T) { t.Parallel(); testTTLIndexingNone(t, s, db) })
		})
	}
}

// matrixOps are the documents of one matrix cell, one per operation checked
// after expiry.
var matrixOps = []string{"read", "replace", "patch", "delete", "upsert", "create", "feed", "batch", "ifmatch"}

// testTTLMatrix covers document ttl absent / -1 / n against container
// defaultTtl absent / -1 / n'. An expiring cell checks that the document is
// live just before its expiry instant and gone from it on: read, replace,
// patch and delete get 404, If-Match writes get 404, upsert and create of the
// same id create a fresh document (201), the read feed omits it and a batch
// read fails with 404. A cell that never expires checks that everything is
// still there after the same wait.
func testTTLMatrix(t *testing.T, s *server, c *azcosmos.Client, db *azcosmos.DatabaseClient) {
	const n = 2 // the expiring ttl, seconds
	never := int64(-1)
	cells := []struct {
		name    string
		doc     any    // nil: absent
		coll    *int32 // nil: absent
		expires int64  // effective ttl; -1 never
	}{
		{"doc absent, coll absent", nil, nil, never},
		{"doc absent, coll -1", nil, i32(-1), never},
		{"doc absent, coll n", nil, i32(n), n},
		{"doc -1, coll absent", -1, nil, never},
		{"doc -1, coll -1", -1, i32(-1), never},
		{"doc -1, coll n", -1, i32(n), never},
		{"doc n, coll absent", n, nil, never},
		{"doc n, coll -1", n, i32(-1), n},
		{"doc n, coll longer", n, i32(3600), n},
		{"doc longer, coll n", 3600, i32(n), never},
	}
	for i, cell := range cells {
		t.Run(cell.name, func(t *testing.T) {
			t.Parallel()
			collID := fmt.Sprintf("m%d", i)
			cc := mustContainer(t, db, pkContainer(collID, cell.coll))
			pk := azcosmos.NewPartitionKeyString("p")
			var maxTS, minTS int64
			etags := map[string]azcore.ETag{}
			for _, id := range matrixOps {
				d := map[string]any{"id": id, "pk": "p", "v": 0}
				if cell.doc != nil {
					d["ttl"] = cell.doc
				}
				got := createDoc(t, cc, pk, d)
				ts := tsOf(t, got)
				maxTS = max(maxTS, ts)
				if minTS == 0 {
					minTS = ts
				}
				minTS = min(minTS, ts)
				etags[id] = azcore.ETag(got["_etag"].(string))
			}
			wait := int64(n)
			if cell.expires > 0 {
				wait = cell.expires
				// Just before the earliest expiry instant, everything is live
				// (checked only when the answer arrived before that instant).
				boundary := time.Unix(minTS+wait, 0)
				sleepUntil(boundary.Add(-300 * time.Millisecond))
				for _, id := range []string{"read", "feed"} {
					st := readStatus(t, cc, pk, id)
					if time.Now().Before(boundary) && st != http.StatusOK {
						t.Errorf("%s: status %d before its expiry instant; want 200", id, st)
					}
				}
			}
			sleepUntil(expiryInstant(maxTS, wait))

			if cell.expires < 0 {
				for _, id := range matrixOps {
					if st := readStatus(t, cc, pk, id); st != http.StatusOK {
						t.Errorf("%s: read %d after %d s; this cell never expires", id, st, wait)
					}
				}
				if ids := s.readFeedAll(t, "ttl", collID, 0, ""); len(ids) != len(matrixOps) {
					t.Errorf("feed = %v; want all %d documents", ids, len(matrixOps))
				}
				return
			}

			body := func(id string) []byte { return mustMarshal(t, map[string]any{"id": id, "pk": "p", "fresh": true}) }
			_, err := cc.ReadItem(ctx, pk, "read", nil)
			wantStatus(t, "read expired", err, http.StatusNotFound)
			_, err = cc.ReplaceItem(ctx, pk, "replace", body("replace"), nil)
			wantStatus(t, "replace expired", err, http.StatusNotFound)
			var ops azcosmos.PatchOperations
			ops.AppendSet("/v", 1)
			_, err = cc.PatchItem(ctx, pk, "patch", ops, nil)
			wantStatus(t, "patch expired", err, http.StatusNotFound)
			_, err = cc.DeleteItem(ctx, pk, "delete", nil)
			wantStatus(t, "delete expired", err, http.StatusNotFound)
			et := etags["ifmatch"]
			_, err = cc.ReplaceItem(ctx, pk, "ifmatch", body("ifmatch"), &azcosmos.ItemOptions{IfMatchEtag: &et})
			wantStatus(t, "replace expired with its last etag", err, http.StatusNotFound)
			_, err = cc.DeleteItem(ctx, pk, "ifmatch", &azcosmos.ItemOptions{IfMatchEtag: &et})
			wantStatus(t, "delete expired with its last etag", err, http.StatusNotFound)

			b := cc.NewTransactionalBatch(pk)
			b.ReadItem("batch", nil)
			br, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
			if err != nil || br.Success || len(br.OperationResults) != 1 || br.OperationResults[0].StatusCode != http.StatusNotFound {
				t.Errorf("batch read of expired: %v %+v; want a failed batch with 404", err, br.OperationResults)
			}

			if ids := s.readFeedAll(t, "ttl", collID, 0, ""); len(ids) != 0 {
				t.Errorf("feed after expiry = %v; want empty", ids)
			}

			up, err := cc.UpsertItem(ctx, pk, body("upsert"), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
			if err != nil || up.RawResponse.StatusCode != http.StatusCreated {
				t.Errorf("upsert over expired: %v; want 201 (a fresh document)", err)
			} else if got := decodeObject(t, up.Value); got["v"] != nil || got["fresh"] != true || tsOf(t, got) <= maxTS-1 {
				t.Errorf("upsert over expired returned %s; want only the new body", up.Value)
			}
			cr, err := cc.CreateItem(ctx, pk, body("create"), nil)
			if err != nil || cr.RawResponse.StatusCode != http.StatusCreated {
				t.Errorf("create over expired: %v; want 201", err)
			}
			if ids := s.readFeedAll(t, "ttl", collID, 0, ""); !slices.Equal(ids, []string{"upsert", "create"}) {
				t.Errorf("feed after recreating = %v; want [upsert create]", ids)
			}
			// The recreated documents are live (they have a fresh _ts).
			if st := readStatus(t, cc, pk, "create"); st != http.StatusOK {
				t.Errorf("recreated document reads %d", st)
			}
		})
	}
}

// testTTLDefaultChange proves that a change of defaultTtl applies to existing
// documents at once (3600 -> 1 expires a 2 s old document immediately, while
// documents with their own ttl keep it) and that expiry is final: lengthening or
// removing defaultTtl afterwards brings back neither that document nor one whose
// own ttl had run out.
func testTTLDefaultChange(t *testing.T, s *server, db *azcosmos.DatabaseClient) {
	cc := mustContainer(t, db, pkContainer("change", i32(3600)))
	pk := azcosmos.NewPartitionKeyString("p")
	a := createDoc(t, cc, pk, map[string]any{"id": "inherits", "pk": "p"})
	createDoc(t, cc, pk, map[string]any{"id": "never", "pk": "p", "ttl": -1})
	createDoc(t, cc, pk, map[string]any{"id": "own", "pk": "p", "ttl": 3600})
	ownShort := createDoc(t, cc, pk, map[string]any{"id": "own-short", "pk": "p", "ttl": 1})
	sleepUntil(time.Unix(max(tsOf(t, a), tsOf(t, ownShort)+1)+2, 0).Add(30 * time.Millisecond))
	if st := readStatus(t, cc, pk, "inherits"); st != http.StatusOK {
		t.Fatalf("2 s old document under defaultTtl 3600: %d", st)
	}
	if st := readStatus(t, cc, pk, "own-short"); st != http.StatusNotFound {
		t.Fatalf("document with ttl 1, 2 s later: %d", st)
	}
	replaceTTL := func(ttl *int32) {
		t.Helper()
		if _, err := cc.Replace(ctx, pkContainer("change", ttl), nil); err != nil {
			t.Fatalf("replace defaultTtl %v: %v", fmtPtr(ttl), err)
		}
	}
	replaceTTL(i32(1))
	if st := readStatus(t, cc, pk, "inherits"); st != http.StatusNotFound {
		t.Errorf("after defaultTtl 3600 -> 1: 2 s old document reads %d; want 404 at once", st)
	}
	for _, id := range []string{"never", "own"} {
		if st := readStatus(t, cc, pk, id); st != http.StatusOK {
			t.Errorf("after defaultTtl 3600 -> 1: %s reads %d; its own ttl applies", id, st)
		}
	}
	for _, ttl := range []*int32{i32(3600), i32(-1), nil} {
		replaceTTL(ttl)
		for _, id := range []string{"inherits", "own-short"} {
			if st := readStatus(t, cc, pk, id); st != http.StatusNotFound {
				t.Errorf("after defaultTtl -> %v: expired document %s reads %d; expiry is final", fmtPtr(ttl), id, st)
			}
		}
		if ids := s.readFeedAll(t, "ttl", "change", 0, ""); slices.Contains(ids, "inherits") {
			t.Errorf("after defaultTtl -> %v: the feed shows the expired document", fmtPtr(ttl))
		}
		_, err := cc.ReplaceItem(ctx, pk, "inherits", []byte(`{"id":"inherits","pk":"p"}`), nil)
		wantStatus(t, "replace a document whose expiry is final", err, http.StatusNotFound)
	}
	// Its id is free again.
	if _, err := cc.CreateItem(ctx, pk, []byte(`{"id":"inherits","pk":"p"}`), nil); err != nil {
		t.Errorf("create over a finally expired document: %v", err)
	}
}

// testTTLDisable proves that removing defaultTtl stops every expiry, including
// documents whose own ttl would have run out, and that turning TTL back on
// applies their ttl again at once.
func testTTLDisable(t *testing.T, db *azcosmos.DatabaseClient) {
	cc := mustContainer(t, db, pkContainer("disable", i32(-1)))
	pk := azcosmos.NewPartitionKeyString("p")
	x := createDoc(t, cc, pk, map[string]any{"id": "own", "pk": "p", "ttl": 2})
	if _, err := cc.Replace(ctx, pkContainer("disable", nil), nil); err != nil {
		t.Fatal(err)
	}
	if time.Now().After(time.Unix(tsOf(t, x)+2, 0)) {
		t.Skip("the machine is too slow: TTL was disabled after the document had expired")
	}
	sleepUntil(expiryInstant(tsOf(t, x), 2))
	if st := readStatus(t, cc, pk, "own"); st != http.StatusOK {
		t.Errorf("own ttl ran out while TTL is off: read %d; want 200 (TTL off ignores ttl)", st)
	}
	if _, err := cc.Replace(ctx, pkContainer("disable", i32(-1)), nil); err != nil {
		t.Fatal(err)
	}
	if st := readStatus(t, cc, pk, "own"); st != http.StatusNotFound {
		t.Errorf("TTL back on (-1) after the own ttl ran out: read %d; want 404", st)
	}
}

// testTTLStoredWhileOff proves that ttl values stored while TTL is off are kept
// as data, and once TTL is on a value that does not conform counts as absent
// (the default applies) while a conforming one is honoured.
func testTTLStoredWhileOff(t *testing.T, s *server, db *azcosmos.DatabaseClient) {
	mustContainer(t, db, pkContainer("off", nil))
	cc, _ := db.NewContainer("off")
	pk := azcosmos.NewPartitionKeyString("p")
	docs := map[string]string{ // id -> ttl JSON ("" absent)
		"string": `"abc"`, "zero": `0`, "null": `null`, "fraction": `1.5`, "absent": ``,
		"never": `-1`, "long": `3600`, "short": `1`,
	}
	var maxTS int64
	for id, v := range docs {
		body := `{"id":"` + id + `","pk":"p"`
		if v != "" {
			body += `,"ttl":` + v
		}
		r := s.do(t, "POST", docsPath("ttl", "off"), hdr("x-ms-documentdb-partitionkey", `["p"]`), []byte(body+"}"))
		r.wantStatus(t, "create "+id+" while TTL is off", http.StatusCreated)
		maxTS = max(maxTS, tsOf(t, r.json(t)))
		if v != "" && !strings.Contains(string(r.Body), `"ttl":`+v) {
			t.Errorf("%s: stored %s; want ttl %s kept as sent", id, r.Body, v)
		}
	}
	sleepUntil(expiryInstant(maxTS, 2))
	for id := range docs {
		if st := readStatus(t, cc, pk, id); st != http.StatusOK {
			t.Errorf("%s expired while TTL is off (%d)", id, st)
		}
	}
	if _, err := cc.Replace(ctx, pkContainer("off", i32(2)), nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"string": 404, "zero": 404, "null": 404, "fraction": 404, "absent": 404, // the default (2 s) applies
		"never": 200, "long": 200, // own ttl honoured
		"short": 404, // own ttl 1 honoured: long gone
	}
	for id, st := range want {
		if got := readStatus(t, cc, pk, id); got != st {
			t.Errorf("TTL on with defaultTtl 2: %s (ttl %s) reads %d; want %d", id, docs[id], got, st)
		}
	}
}

// testTTLRestartCountdown proves that replace, upsert and patch set _ts to now
// and restart the countdown: at the original expiry instant the documents are
// live, and each expires ttl seconds after its own last write.
func testTTLRestartCountdown(t *testing.T, db *azcosmos.DatabaseClient) {
	cc := mustContainer(t, db, pkContainer("restart", i32(2)))
	pk := azcosmos.NewPartitionKeyString("p")
	// One batch: one instant, so the three share their original expiry.
	b := cc.NewTransactionalBatch(pk)
	for _, id := range []string{"replace", "upsert", "patch"} {
		b.CreateItem(mustMarshal(t, map[string]any{"id": id, "pk": "p"}), nil)
	}
	br, err := cc.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
	if err != nil || !br.Success {
		t.Fatalf("create: %v", err)
	}
	ts0 := tsOf(t, decodeObject(t, br.OperationResults[0].ResourceBody))
	for _, r := range br.OperationResults {
		if ts := tsOf(t, decodeObject(t, r.ResourceBody)); ts != ts0 {
			t.Fatalf("one batch, several _ts: %d and %d", ts, ts0)
		}
	}
	// Write each again one second later.
	sleepUntil(time.Unix(ts0+1, 0).Add(30 * time.Millisecond))
	withBody := &azcosmos.ItemOptions{EnableContentResponseOnWrite: true}
	written := map[string]int64{}
	r, err := cc.ReplaceItem(ctx, pk, "replace", []byte(`{"id":"replace","pk":"p","w":1}`), withBody)
	if err != nil {
		t.Fatalf("replace: %v", err)
	}
	written["replace"] = tsOf(t, decodeObject(t, r.Value))
	if r, err = cc.UpsertItem(ctx, pk, []byte(`{"id":"upsert","pk":"p","w":1}`), withBody); err != nil {
		t.Fatalf("upsert: %v", err)
	}
	written["upsert"] = tsOf(t, decodeObject(t, r.Value))
	var ops azcosmos.PatchOperations
	ops.AppendSet("/w", 1)
	if r, err = cc.PatchItem(ctx, pk, "patch", ops, withBody); err != nil {
		t.Fatalf("patch: %v", err)
	}
	written["patch"] = tsOf(t, decodeObject(t, r.Value))
	var last int64
	for id, ts := range written {
		if ts <= ts0 {
			t.Fatalf("%s: _ts %d after the write; want > %d", id, ts, ts0)
		}
		last = max(last, ts)
	}
	// The original expiry instant passes: still live.
	sleepUntil(expiryInstant(ts0, 2))
	for id, ts := range written {
		st := readStatus(t, cc, pk, id)
		if time.Now().Before(time.Unix(ts+2, 0)) && st != http.StatusOK {
			t.Errorf("%s: read %d after the original expiry; the write restarted the countdown", id, st)
		}
	}
	sleepUntil(expiryInstant(last, 2))
	for id := range written {
		if st := readStatus(t, cc, pk, id); st != http.StatusNotFound {
			t.Errorf("%s: read %d 2 s after its last write; want 404", id, st)
		}
	}
}

// testTTLStoredAsSent proves that the ttl property is stored exactly as sent
// (the text 2.0 stays 2.0; the Go SDK would re-marshal it, so this is raw) and
// is interpreted by value: 2.0 expires 2 s after _ts.
func testTTLStoredAsSent(t *testing.T, s *server, db *azcosmos.DatabaseClient) {
	mustContainer(t, db, pkContainer("text", i32(-1)))
	h := hdr("x-ms-documentdb-partitionkey", `["p"]`)
	r := s.do(t, "POST", docsPath("ttl", "text"), h, []byte(`{"id":"a","pk":"p","ttl":2.0,"big":12345678901234567890,"f":1.50}`))
	r.wantStatus(t, "create with ttl 2.0", http.StatusCreated)
	ts := tsOf(t, r.json(t))
	r = s.do(t, "GET", docPath("ttl", "text", "a"), h, nil)
	r.wantStatus(t, "read", http.StatusOK)
	for _, want := range []string{`"ttl":2.0`, `"big":12345678901234567890`, `"f":1.50`} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("stored body %s does not contain %s", r.Body, want)
		}
	}
	sleepUntil(expiryInstant(ts, 2))
	s.do(t, "GET", docPath("ttl", "text", "a"), h, nil).wantError(t, "read after ttl 2.0 ran out", http.StatusNotFound)
}

// testTTLValidation proves the exact 400 messages for defaultTtl and ttl values
// that TTL-SPEC.md rejects, through raw requests and the SDK.
func testTTLValidation(t *testing.T, s *server, db *azcosmos.DatabaseClient) {
	for _, v := range []string{"0", "-2", "2147483648", "1.5"} {
		body := `{"id":"v","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":` + v + `}`
		msg := s.do(t, "POST", "/dbs/ttl/colls", nil, []byte(body)).wantError(t, "create container with defaultTtl "+v, http.StatusBadRequest)
		if want := ttlMessage("defaultTtl", v); msg != want {
			t.Errorf("defaultTtl %s message:\n got %q\nwant %q", v, msg, want)
		}
	}
	_, err := db.CreateContainer(ctx, pkContainer("v", i32(0)), nil)
	wantStatus(t, "SDK create container with DefaultTimeToLive 0", err, http.StatusBadRequest)
	if err != nil && !strings.Contains(err.Error(), ttlMessage("defaultTtl", "0")) {
		t.Errorf("SDK error does not carry the message: %v", err)
	}

	cc := mustContainer(t, db, pkContainer("valid", i32(60)))
	msg := s.do(t, "PUT", "/dbs/ttl/colls/valid", nil, []byte(`{"id":"valid","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":0}`)).
		wantError(t, "replace container with defaultTtl 0", http.StatusBadRequest)
	if want := ttlMessage("defaultTtl", "0"); msg != want {
		t.Errorf("replace defaultTtl 0 message:\n got %q\nwant %q", msg, want)
	}
	if r, err := cc.Read(ctx, nil); err != nil || r.ContainerProperties.DefaultTimeToLive == nil || *r.ContainerProperties.DefaultTimeToLive != 60 {
		t.Errorf("a rejected replace changed defaultTtl: %v", err)
	}

	h := hdr("x-ms-documentdb-partitionkey", `["p"]`)
	for _, v := range []string{"0", "-5", "2147483648", "1.5"} {
		msg := s.do(t, "POST", docsPath("ttl", "valid"), h, []byte(`{"id":"d","pk":"p","ttl":`+v+`}`)).
			wantError(t, "create document with ttl "+v, http.StatusBadRequest)
		if want := ttlMessage("ttl", v); msg != want {
			t.Errorf("ttl %s message:\n got %q\nwant %q", v, msg, want)
		}
	}
	_, err = cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"d","pk":"p","ttl":0}`), nil)
	wantStatus(t, "SDK create with ttl 0", err, http.StatusBadRequest)
	if err != nil && !strings.Contains(err.Error(), ttlMessage("ttl", "0")) {
		t.Errorf("SDK error does not carry the message: %v", err)
	}
	if st := readStatus(t, cc, azcosmos.NewPartitionKeyString("p"), "d"); st != http.StatusNotFound {
		t.Errorf("a rejected create stored the document (%d)", st)
	}
	// The extremes are accepted.
	for _, v := range []string{"-1", "1", "2147483647"} {
		s.do(t, "POST", docsPath("ttl", "valid"), h, []byte(`{"id":"ok`+v+`","pk":"p","ttl":`+v+`}`)).wantStatus(t, "ttl "+v, http.StatusCreated)
	}
}

// testTTLIndexingNone proves that defaultTtl with indexing mode none is refused
// with Cosmos DB's exact message, at create and at replace (both switching a TTL
// container to none and adding defaultTtl to a none container).
func testTTLIndexingNone(t *testing.T, s *server, db *azcosmos.DatabaseClient) {
	none := `"indexingPolicy":{"indexingMode":"none","automatic":false}`
	msg := s.do(t, "POST", "/dbs/ttl/colls", nil, []byte(`{"id":"n1","partitionKey":{"paths":["/pk"]},"defaultTtl":60,`+none+`}`)).
		wantError(t, "create none + defaultTtl", http.StatusBadRequest)
	if msg != noneWithTTLMessage {
		t.Errorf("create message %q; want %q", msg, noneWithTTLMessage)
	}
	// Through the SDK too.
	_, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID: "n1", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}, DefaultTimeToLive: i32(-1),
		IndexingPolicy: &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeNone},
	}, nil)
	wantStatus(t, "SDK create none + defaultTtl -1", err, http.StatusBadRequest)

	// A TTL container switched to none.
	mustContainer(t, db, pkContainer("n2", i32(60)))
	msg = s.do(t, "PUT", "/dbs/ttl/colls/n2", nil, []byte(`{"id":"n2","partitionKey":{"paths":["/pk"]},"defaultTtl":60,`+none+`}`)).
		wantError(t, "replace TTL container to none", http.StatusBadRequest)
	if msg != noneWithTTLMessage {
		t.Errorf("replace message %q; want %q", msg, noneWithTTLMessage)
	}
	// A none container given defaultTtl.
	s.do(t, "POST", "/dbs/ttl/colls", nil, []byte(`{"id":"n3","partitionKey":{"paths":["/pk"]},`+none+`}`)).wantStatus(t, "create none without TTL", http.StatusCreated)
	msg = s.do(t, "PUT", "/dbs/ttl/colls/n3", nil, []byte(`{"id":"n3","partitionKey":{"paths":["/pk"]},"defaultTtl":-1,`+none+`}`)).
		wantError(t, "replace none container adding defaultTtl", http.StatusBadRequest)
	if msg != noneWithTTLMessage {
		t.Errorf("replace message %q; want %q", msg, noneWithTTLMessage)
	}
	// Neither replace changed anything.
	for id, ttl := range map[string]any{"n2": float64(60), "n3": nil} {
		r := s.do(t, "GET", "/dbs/ttl/colls/"+id, nil, nil)
		body := r.json(t)
		if body["defaultTtl"] != ttl {
			t.Errorf("%s: defaultTtl %v after a rejected replace; want %v", id, body["defaultTtl"], ttl)
		}
		if mode := body["indexingPolicy"].(map[string]any)["indexingMode"]; (id == "n2") != (mode == "consistent") {
			t.Errorf("%s: indexing mode %v after a rejected replace", id, mode)
		}
	}
}

// testTTLPatch proves that ttl is written like any other field: a patch that
// sets an invalid ttl is refused with the exact message and changes nothing, and
// one that sets ttl 1 makes the document expire 1 s after the patch.
func testTTLPatch(t *testing.T, db *azcosmos.DatabaseClient) {
	cc := mustContainer(t, db, pkContainer("patch", i32(-1)))
	pk := azcosmos.NewPartitionKeyString("p")
	createDoc(t, cc, pk, map[string]any{"id": "a", "pk": "p"})
	for _, v := range []any{0, -7, "1"} {
		var ops azcosmos.PatchOperations
		ops.AppendSet("/ttl", v)
		_, err := cc.PatchItem(ctx, pk, "a", ops, nil)
		wantStatus(t, fmt.Sprintf("patch ttl %v", v), err, http.StatusBadRequest)
		if want := ttlMessage("ttl", fmt.Sprint(v)); err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("patch ttl %v: %v; want the message %q", v, err, want)
		}
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/ttl", 1)
	r, err := cc.PatchItem(ctx, pk, "a", ops, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatalf("patch ttl 1: %v", err)
	}
	sleepUntil(expiryInstant(tsOf(t, decodeObject(t, r.Value)), 1))
	if st := readStatus(t, cc, pk, "a"); st != http.StatusNotFound {
		t.Errorf("1 s after patching ttl 1: read %d; want 404", st)
	}
}

// testTTLUniqueKeys proves that an expired document holds no unique key value:
// while it lives a second document with the same value conflicts (409), from
// its expiry instant on the value is free.
func testTTLUniqueKeys(t *testing.T, db *azcosmos.DatabaseClient) {
	p := pkContainer("unique", i32(-1))
	p.UniqueKeyPolicy = &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}}
	cc := mustContainer(t, db, p)
	pk := azcosmos.NewPartitionKeyString("p")
	a := createDoc(t, cc, pk, map[string]any{"id": "a", "pk": "p", "email": "x@example.com", "ttl": 2})
	b := mustMarshal(t, map[string]any{"id": "b", "pk": "p", "email": "x@example.com"})
	_, err := cc.CreateItem(ctx, pk, b, nil)
	wantStatus(t, "create with a unique value held by a live document", err, http.StatusConflict)
	sleepUntil(expiryInstant(tsOf(t, a), 2))
	if _, err := cc.CreateItem(ctx, pk, b, nil); err != nil {
		t.Errorf("create with a unique value held by an expired document: %v; want 201", err)
	}
	// The new holder now conflicts in its turn.
	_, err = cc.UpsertItem(ctx, pk, mustMarshal(t, map[string]any{"id": "c", "pk": "p", "email": "x@example.com"}), nil)
	wantStatus(t, "upsert with a unique value held by the new document", err, http.StatusConflict)
}
