package e2e

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// oddIDs are ids that Cosmos DB's compute gateway accepts and that its older
// routing gateway refused: path-significant characters, percent signs that look
// like escapes, whitespace at either end, control characters and non-ASCII.
// ("." and ".." are valid ids too, but HTTP clients resolve them as dot
// segments before the request is sent, so no point operation can name them.)
var oddIDs = []string{
	"Disallowed/Chars", "a//b/", "/leading", `back\slash`, "hash#tag", "what?x=1", "100%", "IdEnding%20",
	"Special%E9%B1%80", "with space", " lead", "trail ", "trail  ", "tab\there", "line\nfeed", "cr\rhere",
	"WithUnicode鱀", "emoji 😀", "a+b=c&d", "semi;colon", "'quote\"",
}

// TestOddIDs drives every point operation, a patch, an upsert, a batch and a
// query through the official Go SDK for ids with characters that are
// significant in paths: the gateway decodes each path segment from its
// escaped form, so "a/b" is one id, never two segments.
func TestOddIDs(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "ids")
	cc := mustContainer(t, db, pkContainer("c", nil))
	ctx := context.Background()

	for _, id := range oddIDs {
		pk := azcosmos.NewPartitionKeyString(id)
		body := mustMarshal(t, map[string]any{"id": id, "pk": id, "v": 1})
		if _, err := cc.CreateItem(ctx, pk, body, nil); err != nil {
			t.Fatalf("create %q: %v", id, err)
		}
		r, err := cc.ReadItem(ctx, pk, id, nil)
		if err != nil {
			t.Fatalf("read %q: %v", id, err)
		}
		if got := decodeObject(t, r.Value)["id"]; got != id {
			t.Fatalf("read %q returned id %q", id, got)
		}
		if _, err := cc.ReplaceItem(ctx, pk, id, mustMarshal(t, map[string]any{"id": id, "pk": id, "v": 2}), nil); err != nil {
			t.Fatalf("replace %q: %v", id, err)
		}
		if _, err := cc.UpsertItem(ctx, pk, mustMarshal(t, map[string]any{"id": id, "pk": id, "v": 3}), nil); err != nil {
			t.Fatalf("upsert %q: %v", id, err)
		}
		var patch azcosmos.PatchOperations
		patch.AppendIncrement("/v", 10)
		pr, err := cc.PatchItem(ctx, pk, id, patch, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatalf("patch %q: %v", id, err)
		}
		if got := decodeObject(t, pr.Value)["v"]; got != float64(13) {
			t.Fatalf("patch %q: v = %v, want 13", id, got)
		}
		if _, err := cc.CreateItem(ctx, pk, body, nil); statusOf(err) != http.StatusConflict {
			t.Fatalf("second create of %q: %v, want 409", id, err)
		}
	}

	// One query sees every odd id exactly once, under its own partition key.
	got, err := queryStrings(ctx, cc, "SELECT VALUE c.id FROM c", azcosmos.NewPartitionKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(oddIDs)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("query ids:\n got %q\nwant %q", got, want)
	}

	// A transactional batch reads, replaces and deletes one of them.
	id := "batch/#?%20 id"
	pk := azcosmos.NewPartitionKeyString(id)
	b := cc.NewTransactionalBatch(pk)
	b.CreateItem(mustMarshal(t, map[string]any{"id": id, "pk": id}), nil)
	b.ReadItem(id, nil)
	b.ReplaceItem(id, mustMarshal(t, map[string]any{"id": id, "pk": id, "v": 1}), nil)
	b.DeleteItem(id, nil)
	br, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil || !br.Success {
		t.Fatalf("batch on %q: success %v, err %v", id, br.Success, err)
	}

	for _, id := range oddIDs {
		pk := azcosmos.NewPartitionKeyString(id)
		if _, err := cc.DeleteItem(ctx, pk, id, nil); err != nil {
			t.Fatalf("delete %q: %v", id, err)
		}
		if st := readStatus(t, cc, pk, id); st != http.StatusNotFound {
			t.Fatalf("read %q after delete: %d, want 404", id, st)
		}
	}

	// On the wire: "a/b" travels as one escaped segment, and a path that
	// splits it into two segments names a different resource.
	create := s.do(t, "POST", docsPath("ids", "c"), hdr("x-ms-documentdb-partitionkey", `["p"]`), []byte(`{"id":"a/b","pk":"p"}`))
	create.wantStatus(t, "create a/b", http.StatusCreated)
	s.do(t, "GET", docsPath("ids", "c")+"/"+url.PathEscape("a/b"), hdr("x-ms-documentdb-partitionkey", `["p"]`), nil).wantStatus(t, "read a%2Fb", http.StatusOK)
	s.do(t, "GET", docsPath("ids", "c")+"/a/b", hdr("x-ms-documentdb-partitionkey", `["p"]`), nil).wantError(t, "read a/b as two segments", http.StatusBadRequest)
}
