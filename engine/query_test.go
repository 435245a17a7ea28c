package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
)

func TestParseQueryShapes(t *testing.T) {
	for _, ok := range []string{"SELECT * FROM c", "select *\nfrom root r where r.x = 1", "  SELECT * FROM c WHERE c.a.b IN ('x', 'y') AND NOT IS_DEFINED(c.z)"} {
		if _, err := ParseQuery(ok); err != nil {
			t.Errorf("ParseQuery(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "SELECT c.id FROM c", "SELECT VALUE COUNT(1) FROM c", "SELECT * FROM c ORDER BY c.id", "SELECT * FROM c WHERE", "SELECT * FROM c WHERE c.a = @p", "DELETE FROM c"} {
		if _, err := ParseQuery(bad); lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Errorf("ParseQuery(%q) = %v; want BadRequest", bad, err)
		}
	}
	// Positions refer to the query as written.
	_, err := ParseQuery("SELECT * FROM c WHERE c.a = )")
	if msg := lethe.ErrorMessage(err); !strings.Contains(msg, "1:29") {
		t.Errorf("error position: %s; want 1:29", msg)
	}
}

func TestQueryDocuments(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	for _, d := range []string{`{"id":"1","pk":"p","n":1}`, `{"id":"2","pk":"p","n":2,"ttl":5}`, `{"id":"3","pk":"p","n":3}`, `{"id":"4","pk":"p","n":4}`} {
		if err := te.create("c", d); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(5 * time.Second) // "2" expires
	q := "SELECT * FROM c WHERE c.n >= 2"
	page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: q, MaxItems: 1})
	if err != nil || len(page.Docs) != 1 || !containsID(page.Docs[0], "3") || page.Continuation == "" {
		t.Fatalf("first page: %d docs, cont %q, %v", len(page.Docs), page.Continuation, err)
	}
	next, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: q, MaxItems: 1, Continuation: page.Continuation})
	if err != nil || len(next.Docs) != 1 || !containsID(next.Docs[0], "4") {
		t.Fatalf("second page: %d docs, %v", len(next.Docs), err)
	}
	if _, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: "SELECT * FROM c", Continuation: page.Continuation}); lethe.ErrorCode(err) != lethe.CodeBadRequest {
		t.Errorf("continuation of another query = %v; want BadRequest", err)
	}
	if _, err := te.ReadFeed(ctx, "db", "c", FeedOptions{Continuation: page.Continuation}); lethe.ErrorCode(err) != lethe.CodeBadRequest {
		t.Errorf("query continuation used on the read feed = %v; want BadRequest", err)
	}
}
