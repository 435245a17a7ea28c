package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
)

func TestDocumentCRUD(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	res, err := te.CreateDocument(ctx, ref("c", "", "p"), []byte(`{"id":"a","pk":"p","n":1,"_rid":"client-sent","_ts":5}`))
	if err != nil || !res.Created {
		t.Fatalf("create: %v %+v", err, res)
	}
	body := string(res.Body)
	if strings.Contains(body, "client-sent") || !strings.Contains(body, `"_ts":1700000000`) || !strings.HasPrefix(body, `{"id":"a","pk":"p","n":1,"_rid":`) {
		t.Errorf("created body = %s", body)
	}
	if err := te.create("c", `{"id":"a","pk":"p"}`); codeOf(err) != lethe.CodeConflict {
		t.Errorf("second create = %v; want Conflict", err)
	}
	got, err := te.ReadDocument(ctx, ref("c", "a", "p"), Conditions{})
	if err != nil || string(got.Body) != body || got.ETag != res.ETag {
		t.Fatalf("read = %s, %v", got.Body, err)
	}
	if _, err := te.ReadDocument(ctx, ref("c", "a", "p"), Conditions{IfNoneMatch: res.ETag}); codeOf(err) != lethe.CodeNotModified {
		t.Errorf("If-None-Match = %v", err)
	}
	if _, err := te.ReadDocument(ctx, ref("c", "a", "other"), Conditions{}); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("read in another partition = %v", err)
	}
	if _, err := te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(`{"id":"a","pk":"p","n":2}`), Conditions{IfMatch: `"stale"`}); codeOf(err) != lethe.CodePreconditionFailed {
		t.Errorf("replace with stale etag = %v", err)
	}
	rep, err := te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(`{"id":"a","pk":"p","n":2}`), Conditions{IfMatch: res.ETag})
	if err != nil || rep.ETag == res.ETag || rep.RID != res.RID {
		t.Fatalf("replace: %v, etag %s rid %s", err, rep.ETag, rep.RID)
	}
	up, err := te.UpsertDocument(ctx, ref("c", "", "p"), []byte(`{"id":"b","pk":"p"}`), Conditions{})
	if err != nil || !up.Created {
		t.Errorf("upsert new: %v created=%v", err, up.Created)
	}
	up, err = te.UpsertDocument(ctx, ref("c", "", "p"), []byte(`{"id":"b","pk":"p","x":1}`), Conditions{})
	if err != nil || up.Created {
		t.Errorf("upsert existing: %v created=%v", err, up.Created)
	}
	if _, err := te.DeleteDocument(ctx, ref("c", "a", "p"), Conditions{}); err != nil {
		t.Fatal(err)
	}
	if err := te.read("c", "a"); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("read after delete = %v", err)
	}
	if _, err := te.DeleteDocument(ctx, ref("c", "a", "p"), Conditions{}); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("second delete = %v", err)
	}
}

func TestDocumentValidation(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":-1`)
	cases := map[string]string{
		`{"pk":"p"}`:                     lethe.CodeBadRequest,
		`{"id":5,"pk":"p"}`:              lethe.CodeBadRequest,
		`{"id":"","pk":"p"}`:             lethe.CodeBadRequest,
		`{"id":"a","pk":"other"}`:        lethe.CodeBadRequest, // header says "p"
		`{"id":"a","pk":"p","ttl":0}`:    lethe.CodeBadRequest,
		`{"id":"a","pk":"p","ttl":null}`: lethe.CodeBadRequest,
		`{"id":"a","pk":"p","ttl":"5"}`:  lethe.CodeBadRequest,
		`[1]`:                            lethe.CodeBadRequest,
		`{"id":"a",`:                     lethe.CodeBadRequest,
		`{"id":"a","pk":"p","big":"` + strings.Repeat("x", 2<<20) + `"}`: lethe.CodeEntityTooLarge,
	}
	for body, want := range cases {
		if err := te.create("c", body); codeOf(err) != want {
			t.Errorf("create %.60s = %v; want %s", body, err, want)
		}
	}
	err := te.create("c", `{"id":"a","pk":"p","ttl":0}`)
	if msg := lethe.ErrorMessage(err); msg != "The input ttl '0' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire." {
		t.Errorf("ttl message = %q", msg)
	}
	page, err := te.ReadFeed(ctx, "db", "c", FeedOptions{})
	if err != nil || len(page.Docs) != 0 {
		t.Errorf("rejected writes left documents: %d, %v", len(page.Docs), err)
	}
}

func TestTTLStoredExactlyAsSent(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("off", "")
	te.mustContainer("on", `"defaultTtl":100`)
	// While TTL is off, ttl is ordinary data: anything goes and is kept verbatim.
	if err := te.create("off", `{"id":"a","pk":"p","ttl":"soon"}`); err != nil {
		t.Fatal(err)
	}
	if err := te.create("on", `{"id":"a","pk":"p","ttl":10.0}`); err != nil {
		t.Fatal(err)
	}
	if err := te.create("on", `{"id":"b","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	for coll, want := range map[string]string{"off": `"ttl":"soon"`, "on": `"ttl":10.0`} {
		res, err := te.ReadDocument(ctx, ref(coll, "a", "p"), Conditions{})
		if err != nil || !strings.Contains(string(res.Body), want) {
			t.Errorf("%s: body %s; want %s", coll, res.Body, want)
		}
	}
	res, _ := te.ReadDocument(ctx, ref("on", "b", "p"), Conditions{})
	if strings.Contains(string(res.Body), `"ttl"`) {
		t.Errorf("inherited ttl was written into the document: %s", res.Body)
	}
}

func TestClockSteppingBackResurrectsNothing(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10`)
	if err := te.create("c", `{"id":"a","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(10 * time.Second)
	if err := te.read("c", "a"); codeOf(err) != lethe.CodeNotFound {
		t.Fatalf("read at expiry = %v", err)
	}
	te.clock.Advance(-time.Hour)
	if err := te.read("c", "a"); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("clock stepped back: read = %v; want NotFound", err)
	}
	te.reopen() // the high-water mark survives a restart
	if err := te.read("c", "a"); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("after restart with clock behind: read = %v; want NotFound", err)
	}
}
