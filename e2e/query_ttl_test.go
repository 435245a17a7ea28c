package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestQueryTTL proves that queries never see an expired document, in real
// time, on a server whose purger is off (--disable-purger) so that physical
// deletion cannot hide a bug: expired documents are absent from plain results,
// COUNT, SUM, GROUP BY, DISTINCT, ORDER BY, JOIN, TOP, OFFSET LIMIT, index
// lookups and partition-scoped queries from their expiry instant on, with no
// window around it; pages served after the instant drop them; and changing a
// container's defaultTtl never makes a query miss a live document or return
// an expired one (TTL-SPEC: changes apply at once, expiry is final). TTLs are
// 1 s; the test sleeps about 2 s.
func TestQueryTTL(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true, Args: append(allQueries, "--disable-purger")})
	c := s.client(t)
	db := mustDatabase(t, c, "qttl")
	t.Run("expired documents are never returned", func(t *testing.T) { t.Parallel(); testQueryTTLExpiry(t, db) })
	t.Run("changing defaultTtl", func(t *testing.T) { t.Parallel(); testQueryTTLDefaultChange(t, db) })
}

// ttlQueries are queries whose expected rows are computed from the documents
// live at the time; each of them must drop expired documents.
var ttlQueries = []queryCase{
	{name: "plain", query: "SELECT VALUE c.id FROM c", want: idsOf},
	{name: "count", query: "SELECT VALUE COUNT(1) FROM c", want: func(d []qdoc) []any { return []any{len(d)} }},
	{name: "sum", query: "SELECT VALUE SUM(c.v) FROM c", want: func(d []qdoc) []any { return []any{sumOf(d, "v")} }},
	{name: "group by", query: "SELECT c.g, COUNT(1) AS n, MAX(c.v) AS hi FROM c GROUP BY c.g", unordered: true,
		want: func(d []qdoc) []any {
			keys, groups := groupRows(d, func(x qdoc) any { return get(x, "g") })
			out := []any{}
			for i, k := range keys {
				out = append(out, obj("g", k, "n", len(groups[i]), "hi", extremeOf(groups[i], true, "v")))
			}
			return out
		}},
	{name: "distinct", query: "SELECT DISTINCT VALUE c.g FROM c", unordered: true,
		want: func(d []qdoc) []any { return distinct(mapRows(d, func(x qdoc) any { return get(x, "g") })) }},
	{name: "order by", query: "SELECT VALUE c.id FROM c ORDER BY c.v DESC", want: func(d []qdoc) []any { return idsOf(orderBy(d, desc("v"))) }},
	{name: "join", query: "SELECT VALUE [c.id, t] FROM c JOIN t IN c.tags", want: func(d []qdoc) []any {
		out := []any{}
		for _, x := range d {
			for _, t := range tagsOf(x) {
				out = append(out, []any{x["id"], t})
			}
		}
		return out
	}},
	{name: "top", query: "SELECT TOP 3 VALUE c.id FROM c ORDER BY c.v", want: func(d []qdoc) []any {
		s := idsOf(orderBy(d, asc("v")))
		return s[:min(3, len(s))]
	}},
	{name: "offset limit", query: "SELECT VALUE c.id FROM c ORDER BY c.v OFFSET 1 LIMIT 4", want: func(d []qdoc) []any {
		s := idsOf(orderBy(d, asc("v")))
		return s[min(1, len(s)):min(5, len(s))]
	}},
	{name: "index equality", query: "SELECT VALUE c.id FROM c WHERE c.g = 'short-only'", want: func(d []qdoc) []any {
		return idsOf(where(d, func(x qdoc) bool { return get(x, "g") == "short-only" }))
	}},
	{name: "index range", query: "SELECT VALUE c.id FROM c WHERE c.v >= 3 AND c.v < 100", want: func(d []qdoc) []any {
		return idsOf(where(d, func(x qdoc) bool { v := num(x, "v"); return v >= 3 && v < 100 }))
	}},
	{name: "index in", query: "SELECT VALUE c.id FROM c WHERE c.kind IN ('short', 'long', 'doc')", want: idsOf},
	{name: "starts with", query: "SELECT VALUE c.id FROM c WHERE STARTSWITH(c.id, 's')", want: func(d []qdoc) []any {
		return idsOf(where(d, func(x qdoc) bool { return str(x, "id")[0] == 's' }))
	}},
	{name: "is defined", query: "SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.ttl)", want: func(d []qdoc) []any {
		return idsOf(where(d, func(x qdoc) bool { return get(x, "ttl") != undef }))
	}},
}

// checkTTLQueries runs every ttlQuery over the container, cross-partition,
// paged by 2, and scoped to partition "a", against the live documents.
func checkTTLQueries(t *testing.T, what string, cc *azcosmos.ContainerClient, live []qdoc) {
	t.Helper()
	for _, qc := range ttlQueries {
		for _, size := range []int32{0, 2} {
			run, err := runQuery(t, cc, qc.query, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: size})
			if err != nil {
				t.Errorf("%s: %s: %v", what, qc.query, err)
				continue
			}
			if want := qc.want(live); !sameRows(run.rows, want, qc.unordered) {
				t.Errorf("%s: %s (page size %d)\ngot  %s\nwant %s", what, qc.query, size, showRows(run.rows), showRows(want))
			}
		}
		run, err := runQuery(t, cc, qc.query, azcosmos.NewPartitionKeyString("a"), nil)
		if err != nil {
			t.Errorf("%s: %s in partition a: %v", what, qc.query, err)
			continue
		}
		inA := where(live, func(d qdoc) bool { return d["pk"] == "a" })
		if want := qc.want(inA); !sameRows(run.rows, want, qc.unordered) {
			t.Errorf("%s: %s in partition a\ngot  %s\nwant %s", what, qc.query, showRows(run.rows), showRows(want))
		}
	}
}

func testQueryTTLExpiry(t *testing.T, db *azcosmos.DatabaseClient) {
	cc := mustContainer(t, db, pkContainer("expiry", i32(-1)))
	var short, long []qdoc
	var shortTS []int64
	var maxTS, minTS int64
	for i := range 16 {
		d := qdoc{"pk": []string{"a", "b"}[i%2], "v": float64(i), "tags": []any{fmt.Sprintf("t%d", i%3)}}
		if i%2 == 0 {
			// Expires 1 s after its write. Some values and a group exist
			// only among these.
			d["id"] = fmt.Sprintf("s%02d", i)
			d["ttl"] = 1.0
			d["kind"] = "short"
			d["g"] = []string{"short-only", "shared"}[i%4/2]
		} else {
			d["id"] = fmt.Sprintf("l%02d", i)
			d["kind"] = "long"
			d["g"] = "shared"
			if i == 15 {
				d["ttl"] = -1.0
			}
		}
		got := createDoc(t, cc, azcosmos.NewPartitionKeyString(d["pk"].(string)), d)
		ts := tsOf(t, got)
		maxTS = max(maxTS, ts)
		if minTS == 0 || ts < minTS {
			minTS = ts
		}
		if d["kind"] == "short" {
			shortTS = append(shortTS, ts)
			short = append(short, d)
		} else {
			long = append(long, d)
		}
	}
	all := slices.Concat(short, long)
	// Insertion order, which plain queries follow.
	slices.SortFunc(all, func(a, b qdoc) int { return int(num(a, "v") - num(b, "v")) })
	for i := range all {
		all[i] = normalize(all[i]).(qdoc)
	}
	liveLong := where(all, func(d qdoc) bool { return d["kind"] == "long" })

	// Before the earliest expiry instant everything is there (checked only
	// if the answers arrived before it).
	if early := time.Unix(minTS+1, 0); time.Now().Before(early.Add(-200 * time.Millisecond)) {
		ids := queryIDs(t, cc, "SELECT VALUE c.id FROM c", azcosmos.NewPartitionKey(), nil)
		if time.Now().Before(early) && len(ids) != len(all) {
			t.Errorf("before any expiry: %d documents; want %d", len(ids), len(all))
		}
	}

	// Around the expiry instants, COUNT goes down from 16 to 8 and is never
	// anything the clock does not allow: at least the documents live when
	// the answer arrived, at most those live when the request was sent.
	liveAt := func(at time.Time) int {
		n := len(long)
		for _, ts := range shortTS {
			if at.Unix() < ts+1 {
				n++
			}
		}
		return n
	}
	sleepUntil(time.Unix(minTS+1, 0).Add(-300 * time.Millisecond))
	for time.Now().Before(time.Unix(maxTS+1, 0).Add(300 * time.Millisecond)) {
		t0 := time.Now()
		run := mustQuery(t, cc, "SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKey(), nil)
		t1 := time.Now()
		n := int(run.rows[0].(float64))
		if n > liveAt(t0) || n < liveAt(t1) {
			t.Errorf("COUNT = %d between %s and %s; want %d..%d", n, t0.Format("15:04:05.000"), t1.Format("15:04:05.000"), liveAt(t1), liveAt(t0))
		}
		time.Sleep(20 * time.Millisecond)
	}
	sleepUntil(expiryInstant(maxTS, 1))
	checkTTLQueries(t, "after expiry", cc, liveLong)

	// Expired documents are gone from point reads too, yet still stored
	// (the purger is off): the query did not pass by luck.
	if st := readStatus(t, cc, azcosmos.NewPartitionKeyString("a"), "s00"); st != 404 {
		t.Errorf("read of an expired document: %d; want 404", st)
	}
}

// testQueryTTLDefaultChange changes a container's defaultTtl under its
// documents and queries after each change (scan and index plans alike):
//  1. TTL off: a document's own ttl 1 is ignored; after 1 s all are live.
//  2. defaultTtl -1: the own ttl applies at once (its 1 s has passed): gone.
//  3. defaultTtl 1: documents without ttl are 1 s old: gone; ttl -1 stays.
//  4. TTL off again: expiry is final, nothing comes back; a new write shows.
//  5. defaultTtl 3600: still the same.
func testQueryTTLDefaultChange(t *testing.T, db *azcosmos.DatabaseClient) {
	props := pkContainer("change", nil)
	cc := mustContainer(t, db, props)
	var docs []qdoc
	var maxTS int64
	for i := range 8 {
		d := qdoc{"id": fmt.Sprintf("c%d", i), "pk": []string{"a", "b"}[i%2], "v": float64(i), "g": []string{"x", "y"}[i%2^i/4], "kind": "doc", "tags": []string{"t"}}
		switch i {
		case 3:
			d["ttl"] = 1.0 // ignored while TTL is off
		case 6, 7:
			d["ttl"] = -1.0 // never expires
		}
		maxTS = max(maxTS, tsOf(t, createDoc(t, cc, azcosmos.NewPartitionKeyString(d["pk"].(string)), d)))
		docs = append(docs, normalize(d).(qdoc))
	}
	setTTL := func(ttl *int32) {
		t.Helper()
		props.DefaultTimeToLive = ttl
		if _, err := cc.Replace(ctx, props, nil); err != nil {
			t.Fatalf("replace defaultTtl %v: %v", ttl, err)
		}
	}
	ids := func(d []qdoc, keep ...string) []qdoc {
		return where(d, func(x qdoc) bool { return slices.Contains(keep, str(x, "id")) })
	}
	sleepUntil(expiryInstant(maxTS, 1))
	checkTTLQueries(t, "TTL off, own ttl passed", cc, docs)

	setTTL(i32(-1))
	afterOwn := ids(docs, "c0", "c1", "c2", "c4", "c5", "c6", "c7")
	checkTTLQueries(t, "defaultTtl -1", cc, afterOwn)

	setTTL(i32(1))
	never := ids(docs, "c6", "c7")
	checkTTLQueries(t, "defaultTtl 1", cc, never)

	setTTL(nil)
	checkTTLQueries(t, "TTL off again: expiry is final", cc, never)
	fresh := qdoc{"id": "c8", "pk": "a", "v": 8.0, "g": "x", "kind": "doc", "tags": []any{"t"}}
	createDoc(t, cc, azcosmos.NewPartitionKeyString("a"), fresh)
	withFresh := append(slices.Clone(never), normalize(fresh).(qdoc))
	checkTTLQueries(t, "TTL off, a new document", cc, withFresh)

	setTTL(i32(3600))
	checkTTLQueries(t, "defaultTtl 3600", cc, withFresh)

	// Index plans and scans agree on the survivors.
	run := mustQuery(t, cc, "SELECT VALUE c.id FROM c WHERE c.kind = 'doc' ORDER BY c.id", azcosmos.NewPartitionKey(), nil)
	if b, _ := json.Marshal(run.rows); string(b) != `["c6","c7","c8"]` {
		t.Errorf("survivors by index = %s; want [c6 c7 c8]", b)
	}
}
