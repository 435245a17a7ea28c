package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/changefeed"
	"github.com/lethe-db/lethe/kv"
)

// avRecord is an all versions and deletes feed record as the wire has it.
type avRecord = changefeed.WireRecord

// recordName renders a record as "op id@crts", expiries as "expire id@crts".
func recordName(r avRecord) string {
	op := r.Metadata.OperationType
	if r.Metadata.TimeToLiveExpired {
		op = "expire"
	}
	return fmt.Sprintf("%s %s@%d", op, r.DocID(), r.Metadata.CRTS)
}

// allVersions reads one page of the all versions and deletes feed.
func (te *testEngine) allVersions(coll string, opts ChangeFeedOptions) ([]avRecord, string) {
	te.t.Helper()
	opts.AllVersions = true
	page, err := te.ReadChangeFeed(ctx, "db", coll, opts)
	if err != nil {
		te.t.Fatalf("all versions feed %+v: %v", opts, err)
	}
	var out []avRecord
	for _, d := range page.Docs {
		var r avRecord
		if err := json.Unmarshal(d, &r); err != nil {
			te.t.Fatalf("record %s: %v", d, err)
		}
		out = append(out, r)
	}
	return out, page.ETag
}

// allVersionsFrom reads the feed from a continuation ("" for the beginning)
// to its end in pages of size n, and returns the records and the position
// after them.
func (te *testEngine) allVersionsFrom(coll, cont string, n int) ([]avRecord, string) {
	te.t.Helper()
	var all []avRecord
	for {
		recs, next := te.allVersions(coll, ChangeFeedOptions{Continuation: cont, MaxItems: n})
		all = append(all, recs...)
		if len(recs) == 0 {
			return all, next
		}
		cont = next
	}
}

func names(recs []avRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, recordName(r))
	}
	return out
}

const retain = `"changeFeedPolicy":{"retentionDuration":60}`

// TestAllVersionsRecordsEveryWrite: creates, replaces, upserts, patches,
// batch operations and deletes, each its own record in commit order, with
// Cosmos DB's metadata, and a delete's last version as previous.
func TestAllVersionsRecordsEveryWrite(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1,`+retain)
	t0 := te.clock.Now().Unix()
	if err := te.create("c", `{"id":"a","pk":"p","v":1}`); err != nil {
		t.Fatal(err)
	}
	if _, err := te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(`{"id":"a","pk":"p","v":2}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1", "2"} {
		if _, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("q")}, []byte(`{"id":"b","pk":"q","v":`+v+`}`), Conditions{}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := ParsePatch([]byte(`{"operations":[{"op":"set","path":"/v","value":3}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.PatchDocument(ctx, ref("c", "b", "q"), p, Conditions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := te.ExecuteBatch(ctx, "db", "c", pk("p"), []BatchOp{
		{Type: "Create", Body: []byte(`{"id":"x","pk":"p"}`)},
		{Type: "Replace", ID: "a", Body: []byte(`{"id":"a","pk":"p","v":4}`)},
	}); err != nil || !ok {
		t.Fatalf("batch: %v, %v", ok, err)
	}
	te.mustDelete("c", "a")

	// Nothing of the current second is served: a defaultTtl change later in
	// it could still expire documents at it.
	if recs, _ := te.allVersions("c", ChangeFeedOptions{}); len(recs) != 0 {
		t.Fatalf("the current second served: %v", names(recs))
	}
	te.clock.Advance(time.Second)
	recs, tok := te.allVersions("c", ChangeFeedOptions{})
	at := fmt.Sprint("@", t0)
	want := []string{"create a" + at, "replace a" + at, "create b" + at, "replace b" + at, "replace b" + at, "create x" + at, "replace a" + at, "delete a" + at}
	if got := names(recs); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	for i, r := range recs {
		m := r.Metadata
		if i > 0 && m.LSN <= recs[i-1].Metadata.LSN {
			t.Errorf("record %d (%s): lsn %d not above the one before", i, recordName(r), m.LSN)
		}
		switch m.OperationType {
		case "create":
			if m.PreviousImageLSN != 0 || r.Current["_lsn"] == nil || r.Previous != nil {
				t.Errorf("create %+v", r)
			}
		case "replace":
			if m.PreviousImageLSN == 0 || r.Current["_lsn"] == nil {
				t.Errorf("replace %+v", r)
			}
		}
	}
	// previousImageLSN names the version replaced; a delete carries its id,
	// partition key and the version it deleted.
	if recs[1].Metadata.PreviousImageLSN != recs[0].Metadata.LSN || recs[3].Metadata.PreviousImageLSN != recs[2].Metadata.LSN {
		t.Errorf("previousImageLSN: %+v", recs[:4])
	}
	// Each write carries the version it wrote, replaced and deleted ones too.
	for i, v := range map[int]float64{0: 1, 1: 2, 2: 1, 3: 2, 4: 3, 6: 4} {
		if recs[i].Current["v"] != v {
			t.Errorf("record %d (%s): current %v, want v %v", i, recordName(recs[i]), recs[i].Current, v)
		}
	}
	del := recs[7]
	if del.Metadata.ID != "a" || string(del.Metadata.PartitionKey) != `{"pk":"p"}` || del.Current == nil || len(del.Current) != 0 ||
		del.Previous["v"] != 4.0 || del.Metadata.PreviousImageLSN != recs[6].Metadata.LSN || del.Metadata.TimeToLiveExpired {
		t.Errorf("delete record %+v", del)
	}
	// Caught up: nothing, the same position; scoped by partition key.
	if again, tok2 := te.allVersions("c", ChangeFeedOptions{Continuation: tok}); len(again) != 0 || tok2 != tok {
		t.Errorf("caught up: %v, etag %s then %s", names(again), tok, tok2)
	}
	if got := names(must(te.allVersions("c", ChangeFeedOptions{PK: pk("q")}))); !slices.Equal(got, want[2:5]) {
		t.Errorf("partition q: %v, want %v", got, want[2:5])
	}
	// Paging gives the same records.
	if paged, _ := te.allVersionsFrom("c", "", 3); !slices.Equal(names(paged), want) {
		t.Errorf("in pages of 3: %v", names(paged))
	}
	// From now: only what follows.
	_, now := te.allVersions("c", ChangeFeedOptions{Start: FromNow})
	if err := te.create("c", `{"id":"y","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Second)
	if got := names(must(te.allVersions("c", ChangeFeedOptions{Continuation: now}))); !slices.Equal(got, []string{fmt.Sprint("create y@", t0+1)}) {
		t.Errorf("from now: %v", got)
	}
	// The latest version mode is unchanged.
	if ids, _ := te.feedIDs("c", ChangeFeedOptions{}); !slices.Equal(ids, []string{"b", "x", "y"}) {
		t.Errorf("latest version: %v", ids)
	}
}

func must[T any](v T, _ string) T { return v }

// TestAllVersionsExpiryExactlyOnce: a TTL expiry is one delete record with
// timeToLiveExpired, at the expiry instant among the other changes, carrying
// the last version; there before any purge, the same after it, after a
// write over the expired document and after a restart.
func TestAllVersionsExpiryExactlyOnce(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1,`+retain)
	t0 := te.clock.Now().Unix()
	for _, body := range []string{`{"id":"e","pk":"p","ttl":5,"v":1}`, `{"id":"f","pk":"q","ttl":3}`, `{"id":"k","pk":"p"}`} {
		var doc struct{ PK string }
		_ = json.Unmarshal([]byte(body), &doc)
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(doc.PK)}, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(time.Second)
	_, start := te.allVersions("c", ChangeFeedOptions{Start: FromNow})
	te.clock.Advance(2 * time.Second) // t0+3: f expired
	if err := te.create("c", `{"id":"g","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(3 * time.Second) // t0+6: e expired at t0+5
	want := []string{fmt.Sprint("expire f@", t0+3), fmt.Sprint("create g@", t0+3), fmt.Sprint("expire e@", t0+5)}
	check := func(when string) string {
		t.Helper()
		recs, tok := te.allVersionsFrom("c", start, 1)
		if got := names(recs); !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", when, got, want)
		}
		e := recs[2]
		if e.Metadata.ID != "e" || string(e.Metadata.PartitionKey) != `{"pk":"p"}` || e.Previous["v"] != 1.0 ||
			e.Metadata.PreviousImageLSN == 0 || e.Metadata.LSN != e.Metadata.PreviousImageLSN+1 {
			t.Fatalf("%s: expiry record %+v", when, e)
		}
		return tok
	}
	tok := check("before the purge")
	if n, err := te.Purge(ctx); err != nil || n != 2 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	check("after the purge")
	if again, _ := te.allVersions("c", ChangeFeedOptions{Continuation: tok}); len(again) != 0 {
		t.Fatalf("the purge added %v", names(again))
	}
	// A write over an expired document is a create; the expiry stays once.
	if err := te.create("c", `{"id":"h","pk":"p","ttl":1}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(2 * time.Second) // t0+8: h expired at t0+7
	if err := te.create("c", `{"id":"h","pk":"p","v":2}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Second)
	want = append(want, fmt.Sprint("create h@", t0+6), fmt.Sprint("expire h@", t0+7), fmt.Sprint("create h@", t0+8))
	check("after a write over an expired document")
	te.reopen()
	check("after a restart")
}

// TestAllVersionsUniqueKeyTakeover: a create that takes a unique value from
// an expired document removes that document; the log keeps its version, body
// and all, and its expiry.
func TestAllVersionsUniqueKeyTakeover(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":3600,"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/email"]}]},`+retain)
	t0 := te.clock.Now().Unix()
	if err := te.create("c", `{"id":"old","pk":"p","email":"a@x","v":1}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Hour) // as long as the log keeps its record
	if err := te.create("c", `{"id":"new","pk":"p","email":"a@x","v":2}`); err != nil {
		t.Fatalf("taking the expired holder's value: %v", err)
	}
	te.clock.Advance(time.Second)
	recs, _ := te.allVersionsFrom("c", "", 10)
	want := []string{fmt.Sprint("create old@", t0), fmt.Sprint("expire old@", t0+3600), fmt.Sprint("create new@", t0+3600)}
	if got := names(recs); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	if recs[0].Current["v"] != 1.0 || recs[1].Previous["v"] != 1.0 || recs[2].Current["v"] != 2.0 {
		t.Errorf("bodies: %+v", recs)
	}
}

// TestLogKeepsNoCopyOfLiveVersions: the log's record of a write refers to
// the document for its body while that version lives, and gets a copy when
// a replace, a delete or the purge removes it; a version that expires before
// the log drops its record gets the copy at once.
func TestLogKeepsNoCopyOfLiveVersions(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1,`+retain)
	// logCopies counts the log's records holding marker.
	logCopies := func(marker string) int {
		t.Helper()
		n := 0
		err := te.store.View(ctx, func(r kv.Reader) error {
			it := r.Scan([]byte{pfxFeedLog}, []byte{pfxFeedLog + 1}, false)
			defer it.Close()
			for it.Next() {
				if bytes.Contains(it.Value(), []byte(marker)) {
					n++
				}
			}
			return it.Close()
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, body := range []string{
		`{"id":"a","pk":"p","v":"first-version"}`,
		`{"id":"b","pk":"p","v":"short-lived","ttl":5}`,
		`{"id":"c","pk":"p","v":"long-lived","ttl":3600}`, // the log's retention
	} {
		if err := te.create("c", body); err != nil {
			t.Fatal(err)
		}
	}
	if a, b, c := logCopies("first-version"), logCopies("short-lived"), logCopies("long-lived"); a != 0 || b != 1 || c != 0 {
		t.Fatalf("the log holds %d, %d and %d copies of live versions; want 0, 1 (expiring before its record goes) and 0", a, b, c)
	}
	if _, err := te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(`{"id":"a","pk":"p","v":"second-version"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	if a, b := logCopies("first-version"), logCopies("second-version"); a != 1 || b != 0 {
		t.Errorf("after a replace the log holds %d copies of the replaced version, %d of the live one; want 1 and 0", a, b)
	}
	te.mustDelete("c", "a")
	// The create's record and the delete's previous.
	if n := logCopies("second-version"); n != 2 {
		t.Errorf("after the delete the log holds %d copies of the deleted version, want 2", n)
	}
	// Each purge adds the expiry's previous; the second also the copy of a
	// version whose record referred to it.
	for _, c := range []struct {
		after  time.Duration
		marker string
	}{{5 * time.Second, "short-lived"}, {time.Hour, "long-lived"}} {
		te.clock.Advance(c.after)
		if n, err := te.Purge(ctx); err != nil || n != 1 {
			t.Fatalf("purge: %d, %v", n, err)
		}
		if n := logCopies(c.marker); n != 2 {
			t.Errorf("after the purge the log holds %d copies of the %s version, want 2", n, c.marker)
		}
	}
}

// TestAllVersionsDefaultTTLLowered: lowering defaultTtl expires many
// documents at once, each with one record at the instant of the change,
// read in pages; a reader that had read past their _ts + ttl still gets
// them, and the purge adds nothing.
func TestAllVersionsDefaultTTLLowered(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":1000,`+retain)
	for i := range 20 {
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(fmt.Sprint("p", i%3))}, fmt.Appendf(nil, `{"id":"d%02d","pk":"p%d"}`, i, i%3)); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(10 * time.Second)
	_, pos := te.allVersionsFrom("c", "", 100) // read past every create
	change := te.clock.Now().Unix()
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":5}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("p0")}, []byte(`{"id":"late","pk":"p0"}`)); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Second)
	check := func(when string) {
		t.Helper()
		recs, _ := te.allVersionsFrom("c", pos, 7)
		var want []string
		for range 20 {
			want = append(want, fmt.Sprint("expire @", change))
		}
		want = append(want, fmt.Sprint("create late@", change))
		got := names(recs)
		seen := map[string]bool{}
		for i, r := range recs[:min(20, len(recs))] {
			got[i] = strings.Replace(got[i], r.Metadata.ID, "", 1)
			seen[r.Metadata.ID] = true
		}
		if !slices.Equal(got, want) || len(seen) != 20 {
			t.Fatalf("%s: %v (%d distinct), want 20 expiries at %d then the create", when, names(recs), len(seen), change)
		}
	}
	check("before the purge")
	if n, err := te.Purge(ctx); err != nil || n != 20 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	check("after the purge")
}

// TestAllVersionsRetention: the policy is echoed and kept across a replace
// that omits it; without it the mode is refused; the log is trimmed to its
// window, and a position before the window is refused, never a silent gap.
func TestAllVersionsRetention(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("none", "")
	if _, err := te.ReadChangeFeed(ctx, "db", "none", ChangeFeedOptions{AllVersions: true}); codeOf(err) != lethe.CodeBadRequest {
		t.Fatalf("all versions without a policy: %v", err)
	}
	for _, bad := range []string{`"changeFeedPolicy":{"retentionDuration":-1}`, `"changeFeedPolicy":{"retentionDuration":1.5}`, `"changeFeedPolicy":{"retentionDuration":"1"}`, `"changeFeedPolicy":5`} {
		_, err := te.CreateContainer(ctx, "db", []byte(`{"id":"bad","partitionKey":{"paths":["/pk"]},`+bad+`}`))
		if codeOf(err) != lethe.CodeBadRequest {
			t.Errorf("%s: %v", bad, err)
		}
	}
	te.mustContainer("c", `"changeFeedPolicy":{"retentionDuration":2}`)
	// A replace without the property (the Go SDK does not know it) keeps it.
	res, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":-1}`), "")
	if err != nil || !strings.Contains(string(res.Body), `"changeFeedPolicy":{"retentionDuration":2}`) {
		t.Fatalf("replace without the policy: %s, %v", res.Body, err)
	}
	if err := te.create("c", `{"id":"old","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Second)
	recs, early := te.allVersions("c", ChangeFeedOptions{})
	if len(recs) != 1 {
		t.Fatalf("from the beginning: %v", names(recs))
	}
	te.clock.Advance(3 * time.Minute)
	if err := te.create("c", `{"id":"new","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Second)
	if n, err := te.TrimChangeFeeds(ctx); err != nil || n != 1 {
		t.Fatalf("trim: %d, %v", n, err)
	}
	if _, err := te.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{AllVersions: true, Continuation: early}); codeOf(err) != lethe.CodeBadRequest || !strings.Contains(err.Error(), "retentionDuration 2 minutes") {
		t.Fatalf("a position before the window: %v", err)
	}
	if got := names(must(te.allVersions("c", ChangeFeedOptions{}))); len(got) != 1 || !strings.HasPrefix(got[0], "create new@") {
		t.Fatalf("from the beginning of the window: %v", got)
	}
	if n, err := te.TrimChangeFeeds(ctx); err != nil || n != 0 {
		t.Fatalf("trim again at once: %d, %v", n, err)
	}
	// Switched off, the log goes; switched on again, it starts afresh.
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"changeFeedPolicy":{"retentionDuration":0}}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := te.ReadChangeFeed(ctx, "db", "c", ChangeFeedOptions{AllVersions: true}); codeOf(err) != lethe.CodeBadRequest {
		t.Fatalf("all versions after the policy went: %v", err)
	}
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"changeFeedPolicy":{"retentionDuration":5}}`), ""); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(2 * time.Second)
	if recs, _ := te.allVersions("c", ChangeFeedOptions{}); len(recs) != 0 {
		t.Fatalf("a new log holds %v", names(recs))
	}
	// The server's default applies to containers created without a policy.
	te.reopenWith(func(o *Options) { o.ChangeFeedRetention = 90 * time.Minute })
	te.mustContainer("d", "")
	res, _, err = te.ReadContainer(ctx, "db", "d")
	if err != nil || !strings.Contains(string(res.Body), `"changeFeedPolicy":{"retentionDuration":90}`) {
		t.Fatalf("server default: %s, %v", res.Body, err)
	}
}

// TestAllVersionsMatchesHistory drives random writes, deletes, TTL policy
// changes, purges, restarts and clock steps, with a reader tailing the feed
// in small pages, and checks what it collected: each document's records
// form its history (a create, replaces, then one delete or expiry before
// the next create), each change once, in order; the feed read afresh from
// the beginning equals it; and the documents still live are those whose
// last record is a write, at their current LSN.
func TestAllVersionsMatchesHistory(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			te := newTestEngine(t)
			te.mustDB("db")
			te.mustContainer("c", `"defaultTtl":6,`+retain)
			ids := []string{"a", "b", "c", "d", "e", "f"}
			var tail []avRecord
			pos := ""
			for step := range 300 {
				id := ids[rng.IntN(len(ids))]
				ref := ref("c", id, "p"+id)
				switch r := rng.IntN(100); {
				case r < 35:
					ttlProp := ""
					if rng.IntN(3) == 0 {
						ttlProp = fmt.Sprintf(`,"ttl":%d`, 1+rng.IntN(8))
					}
					body := fmt.Sprintf(`{"id":%q,"pk":"p%s","step":%d%s}`, id, id, step, ttlProp)
					if _, err := te.UpsertDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("p" + id)}, []byte(body), Conditions{}); err != nil {
						t.Fatal(err)
					}
				case r < 45:
					if _, err := te.DeleteDocument(ctx, ref, Conditions{}); err != nil && codeOf(err) != lethe.CodeNotFound {
						t.Fatal(err)
					}
				case r < 50:
					def := []string{`"defaultTtl":-1`, `"defaultTtl":2`, `"defaultTtl":6`, `"defaultTtl":20`, ``}[rng.IntN(5)]
					body := `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}`
					if def != "" {
						body += "," + def
					}
					if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(body+"}"), ""); err != nil {
						t.Fatal(err)
					}
				case r < 58:
					if _, err := te.Purge(ctx); err != nil {
						t.Fatal(err)
					}
				case r < 60:
					te.reopen()
				case r < 85:
					te.clock.Advance(time.Duration(rng.IntN(3)) * time.Second)
				default:
					recs, next := te.allVersions("c", ChangeFeedOptions{Continuation: pos, MaxItems: 1 + rng.IntN(3)})
					tail, pos = append(tail, recs...), next
				}
			}
			// Which documents are live now, then the feed up to now: its last
			// second is served once the clock has left it.
			live := map[string][]byte{}
			for _, id := range ids {
				if res, err := te.ReadDocument(ctx, ref("c", id, "p"+id), Conditions{}); err == nil {
					live[id] = res.Body
				} else if codeOf(err) != lethe.CodeNotFound {
					t.Fatal(err)
				}
			}
			te.clock.Advance(time.Second)
			rest, _ := te.allVersionsFrom("c", pos, 2)
			tail = append(tail, rest...)
			fresh, _ := te.allVersionsFrom("c", "", 1000)
			if !slices.EqualFunc(tail, fresh, func(a, b avRecord) bool { return recordName(a) == recordName(b) && a.Metadata.LSN == b.Metadata.LSN }) {
				t.Fatalf("tailed %d records, read afresh %d:\n%v\n%v", len(tail), len(fresh), names(tail), names(fresh))
			}
			last := map[string]avRecord{}
			seen := map[uint64]bool{}
			var prevCRTS int64
			for i, r := range tail {
				m := r.Metadata
				if seen[m.LSN] {
					t.Fatalf("record %d %s: lsn %d twice", i, recordName(r), m.LSN)
				}
				seen[m.LSN] = true
				if m.CRTS < prevCRTS {
					t.Fatalf("record %d %s: before the one before", i, recordName(r))
				}
				prevCRTS = m.CRTS
				id := m.ID
				if id == "" {
					id = r.Current["id"].(string)
				}
				before, had := last[id]
				alive := had && before.Metadata.OperationType != "delete"
				switch m.OperationType {
				case "create":
					if alive {
						t.Fatalf("record %d %s: a create of a live document (last %s)", i, recordName(r), recordName(before))
					}
				case "replace", "delete":
					if !alive || m.PreviousImageLSN != before.Metadata.LSN {
						t.Fatalf("record %d %s (previous image %d): last was %s (lsn %d)", i, recordName(r), m.PreviousImageLSN, recordName(before), before.Metadata.LSN)
					}
					if m.OperationType == "delete" && (r.Previous["_lsn"] != float64(before.Metadata.LSN) || (m.TimeToLiveExpired && m.LSN != before.Metadata.LSN+1)) {
						t.Fatalf("record %d %s: previous %v, last %s", i, recordName(r), r.Previous, recordName(before))
					}
				}
				last[id] = r
			}
			for _, id := range ids {
				body, isLive := live[id]
				r, had := last[id]
				liveInFeed := had && r.Metadata.OperationType != "delete"
				if isLive != liveInFeed {
					t.Fatalf("%s: live %v (%s); its last record %s in %v", id, isLive, body, recordName(r), names(tail))
				}
				if isLive {
					var doc struct{ Step int }
					_ = json.Unmarshal(body, &doc)
					if r.Current["step"] != float64(doc.Step) {
						t.Fatalf("%s: live at step %d, its last record %v", id, doc.Step, r.Current)
					}
				}
			}
		})
	}
}

// TestAllVersionsOfFormat3Versions: versions stored before their header said
// what their log record holds (format 3) get the record's copy from the
// record itself when they are replaced, deleted or purged, and the feed is
// the same as for versions stored since (formats 4 and 5, whose copy is
// written from the header).
func TestAllVersionsOfFormat3Versions(t *testing.T) {
	feeds := make([][]string, 2)
	for i, downgrade := range []bool{false, true} {
		te := newTestEngine(t)
		te.mustDB("db")
		te.mustContainer("c", `"defaultTtl":-1,`+retain)
		for _, body := range []string{`{"id":"a","pk":"p","v":1}`, `{"id":"b","pk":"p","v":1}`, `{"id":"f","pk":"p","v":1}`} {
			if err := te.create("c", body); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"a", "f"} {
			if _, err := te.ReplaceDocument(ctx, ref("c", id, "p"), []byte(`{"id":"`+id+`","pk":"p","v":2}`), Conditions{}); err != nil {
				t.Fatal(err)
			}
		}
		te.clock.Advance(time.Second)
		if downgrade {
			te.downgradeToV3("c") // a and f replaces, b a create
		}
		// A replace and a delete of versions stored so; then f's version
		// expires under a shorter defaultTtl, and the purge copies its body.
		if _, err := te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(`{"id":"a","pk":"p","v":3}`), Conditions{}); err != nil {
			t.Fatal(err)
		}
		te.mustDelete("c", "b")
		if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":5,`+retain+`}`), ""); err != nil {
			t.Fatal(err)
		}
		te.clock.Advance(10 * time.Second)
		if n, err := te.Purge(ctx); err != nil || n != 2 {
			t.Fatalf("purged %d (%v), want a and f", n, err)
		}
		te.clock.Advance(time.Second)
		recs, _ := te.allVersionsFrom("c", "", 100)
		for _, r := range recs {
			line, _ := json.Marshal(r)
			feeds[i] = append(feeds[i], string(line))
		}
		var got []string
		for _, n := range names(recs) {
			got = append(got, n[:strings.IndexByte(n, '@')])
		}
		if want := []string{"create a", "create b", "create f", "replace a", "replace f", "replace a", "delete b", "expire f", "expire a"}; !slices.Equal(got, want) {
			t.Fatalf("records %v, want %v", got, want)
		}
		if err := te.Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(feeds[0], feeds[1]) {
		t.Errorf("the feed differs for versions stored in format 3:\n%s\nwant\n%s", strings.Join(feeds[1], "\n"), strings.Join(feeds[0], "\n"))
	}
}

// downgradeToV3 rewrites the container's documents as format 3 stores them:
// their headers no longer say what their log records hold.
func (te *testEngine) downgradeToV3(coll string) {
	te.t.Helper()
	n := 0
	err := te.store.Update(ctx, func(tx kv.Tx) error {
		_, c, err := getContainer(tx.(kv.Reader), "db", coll)
		if err != nil {
			return err
		}
		p := collKey(pfxDoc, c.rid())
		it := tx.Scan(p, kv.PrefixEnd(p), false)
		var keys, values [][]byte
		for it.Next() {
			rec, err := decodeDoc(it.Value())
			if err != nil {
				return err
			}
			if rec.logOp == 0 || !rec.logRefers {
				continue
			}
			rec.logOp, rec.logPrev = 0, 0
			keys, values = append(keys, append([]byte(nil), it.Key()...)), append(values, rec.encode())
		}
		if err := it.Close(); err != nil {
			return err
		}
		for i, k := range keys {
			if values[i][0] != 3 {
				return fmt.Errorf("rewritten as format %d", values[i][0])
			}
			if err := tx.Put(k, values[i]); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		te.t.Fatal(err)
	}
	if n == 0 {
		te.t.Fatal("no document to downgrade")
	}
}
