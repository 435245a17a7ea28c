package engine

import (
	"fmt"
	"testing"
	"time"
)

func (te *testEngine) usage(coll string) Usage {
	te.t.Helper()
	u, err := te.ContainerUsage(ctx, "db", coll)
	if err != nil {
		te.t.Fatal(err)
	}
	return u
}

func TestUsageExcludesExpiredBeforePurge(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10`)
	sizes := map[string]int64{}
	add := func(id, extra string) {
		t.Helper()
		res, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("p")}, []byte(fmt.Sprintf(`{"id":%q,"pk":"p"%s}`, id, extra)))
		if err != nil {
			t.Fatal(err)
		}
		sizes[id] = int64(len(res.Body))
	}
	add("default", "")           // expires at 10 s
	add("own", `,"ttl":5`)       // expires at 5 s
	add("never", `,"ttl":-1`)    // never
	add("long", `,"ttl":100000`) // expires much later
	sum := func(ids ...string) (n int64) {
		for _, id := range ids {
			n += sizes[id]
		}
		return n
	}
	check := func(when string, ids ...string) {
		t.Helper()
		if got, want := te.usage("c"), (Usage{Documents: int64(len(ids)), Bytes: sum(ids...)}); got != want {
			t.Errorf("%s: usage %+v, want %+v (%v)", when, got, want, ids)
		}
	}
	check("at the start", "default", "own", "never", "long")
	te.clock.Advance(4 * time.Second)
	check("at 4 s", "default", "own", "never", "long")
	te.clock.Advance(time.Second)
	check("at 5 s, the instant own expires", "default", "never", "long")
	te.clock.Advance(5 * time.Second)
	check("at 10 s", "never", "long")

	backlog, err := te.TTLBacklog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(backlog) != 1 || backlog[0].PendingDocuments != 2 || backlog[0].PendingBytes != sum("default", "own") {
		t.Fatalf("backlog before the purge: %+v, want 2 documents of %d bytes", backlog, sum("default", "own"))
	}
	if got, want := backlog[0].OldestPending, time.Unix(1_700_000_005, 0); !got.Equal(want) {
		t.Errorf("oldest pending expired at %v, want %v", got, want)
	}
	if n, err := te.Purge(ctx); err != nil || n != 2 {
		t.Fatalf("purge: %d, %v; want 2", n, err)
	}
	check("after the purge", "never", "long")
	backlog, _ = te.TTLBacklog(ctx)
	if backlog[0].PendingDocuments != 0 || backlog[0].PendingBytes != 0 || !backlog[0].OldestPending.IsZero() || backlog[0].Purged != 2 {
		t.Errorf("backlog after the purge: %+v", backlog[0])
	}

	// Replacing and deleting move the tallies with the documents.
	if _, err := te.ReplaceDocument(ctx, ref("c", "never", "p"), []byte(`{"id":"never","pk":"p","ttl":-1,"more":"xxxxxxxxxx"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	te.mustDelete("c", "long")
	if u := te.usage("c"); u.Documents != 1 || u.Bytes <= sizes["never"] {
		t.Errorf("after a growing replace and a delete: %+v", u)
	}
}

func TestUsageFollowsPolicyChanges(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	for i := range 5 {
		if err := te.create("c", fmt.Sprintf(`{"id":"d%d","pk":"p"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(100 * time.Second)
	if u := te.usage("c"); u.Documents != 5 {
		t.Fatalf("usage %+v, want 5 documents", u)
	}
	// A shorter default applies at once to existing documents, and so does usage.
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":50}`), ""); err != nil {
		t.Fatal(err)
	}
	if u := te.usage("c"); u.Documents != 0 || u.Bytes != 0 {
		t.Fatalf("after defaultTtl 50 on 100 s old documents: %+v, want none", u)
	}
	// Expiry is final: turning TTL off again does not bring them back.
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`), ""); err != nil {
		t.Fatal(err)
	}
	if u := te.usage("c"); u.Documents != 0 {
		t.Fatalf("after TTL off: %+v, want none (expiry is final)", u)
	}
}
