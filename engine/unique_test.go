package engine

import (
	"testing"
	"time"

	"github.com/lethe-db/lethe"
)

func TestUniqueKeys(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1,"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/email"]},{"paths":["/first","/last"]}]}`)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(te.create("c", `{"id":"1","pk":"p","email":"a@x","first":"A","last":"B"}`))
	for _, c := range []struct{ body, want string }{ // in order: the last two compete for null
		{`{"id":"2","pk":"p","email":"a@x","first":"C","last":"D"}`, lethe.CodeConflict}, // same email
		{`{"id":"3","pk":"p","email":"b@x","first":"A","last":"B"}`, lethe.CodeConflict}, // same name pair
		{`{"id":"4","pk":"p","email":"c@x","first":"A","last":"Z"}`, "OK"},
		{`{"id":"5","pk":"p","first":"E","last":"F"}`, "OK"}, // email missing counts as null
		{`{"id":"6","pk":"p","first":"G","last":"H"}`, lethe.CodeConflict},
	} {
		if err := te.create("c", c.body); codeOf(err) != c.want {
			t.Errorf("create %s = %v; want %s", c.body, err, c.want)
		}
	}
	// Uniqueness is per logical partition.
	if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("q")}, []byte(`{"id":"1","pk":"q","email":"a@x","first":"A","last":"B"}`)); err != nil {
		t.Errorf("same values in another partition: %v", err)
	}
	// Replacing a document with its own values is fine; changing them frees the old ones.
	if _, err := te.ReplaceDocument(ctx, ref("c", "1", "p"), []byte(`{"id":"1","pk":"p","email":"new@x","first":"A","last":"B"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	must(te.create("c", `{"id":"7","pk":"p","email":"a@x","first":"I","last":"J"}`))
	// A patch that would collide is refused and changes nothing.
	p, _ := ParsePatch([]byte(`[{"op":"set","path":"/email","value":"a@x"}]`))
	if _, err := te.PatchDocument(ctx, ref("c", "4", "p"), p, Conditions{}); codeOf(err) != lethe.CodeConflict {
		t.Errorf("colliding patch = %v", err)
	}
	// Deleting frees the values.
	if _, err := te.DeleteDocument(ctx, ref("c", "7", "p"), Conditions{}); err != nil {
		t.Fatal(err)
	}
	must(te.create("c", `{"id":"8","pk":"p","email":"a@x","first":"K","last":"L"}`))
	// The policy cannot change.
	if _, err := te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":-1}`), ""); codeOf(err) != lethe.CodeBadRequest {
		t.Errorf("dropping the unique key policy = %v; want BadRequest", err)
	}
}

// TestUniqueKeysIgnoreExpired: TTL-SPEC.md says unique keys ignore expired
// documents, from the instant they expire and before any purge.
func TestUniqueKeysIgnoreExpired(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10,"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/email"]}]}`)
	if err := te.create("c", `{"id":"old","pk":"p","email":"a@x"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(9 * time.Second)
	if err := te.create("c", `{"id":"new","pk":"p","email":"a@x"}`); codeOf(err) != lethe.CodeConflict {
		t.Fatalf("one second before expiry: %v; want Conflict", err)
	}
	te.clock.Advance(time.Second)
	if err := te.create("c", `{"id":"new","pk":"p","email":"a@x"}`); err != nil {
		t.Fatalf("at expiry the expired holder still conflicts: %v", err)
	}
	if err := te.read("c", "old"); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("expired holder visible: %v", err)
	}
	// Expiry is final: lengthening the TTL does not bring the old holder back.
	te.setDefaultTTL("c", `"defaultTtl":3600,"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/email"]}]}`)
	if err := te.read("c", "old"); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("old holder back after lengthening: %v", err)
	}
	if n, err := te.Purge(ctx); err != nil || n != 0 {
		t.Errorf("purge after the holder was displaced = %d, %v; want 0", n, err)
	}
}

// TestPurgeWithUniqueKeys: the purger reads documents of containers with unique
// keys to remove their unique entries too (Check verifies none is left behind).
func TestPurgeWithUniqueKeys(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10,"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/email"]}]}`)
	for _, d := range []string{`{"id":"1","pk":"p","email":"a"}`, `{"id":"2","pk":"p","email":"b","ttl":5}`, `{"id":"3","pk":"p","email":"c","ttl":-1}`} {
		if err := te.create("c", d); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(10 * time.Second)
	if n, err := te.Purge(ctx); err != nil || n != 2 {
		t.Fatalf("purge = %d, %v; want 2", n, err)
	}
	if err := te.create("c", `{"id":"4","pk":"p","email":"a"}`); err != nil {
		t.Errorf("value of a purged document still taken: %v", err)
	}
	if err := te.create("c", `{"id":"5","pk":"p","email":"c"}`); codeOf(err) != lethe.CodeConflict {
		t.Errorf("value of the live document free: %v", err)
	}
}
