package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// TestKeysToRewrite: of a replaced version's keys, only those the new version
// lacks are deleted, and of the new manifest only the entries the old one
// lacked are written; an old fixed key that the new version also has is
// overwritten, not deleted.
func TestKeysToRewrite(t *testing.T) {
	k := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, v := range s {
			out[i] = []byte(v)
		}
		return out
	}
	str := func(keys [][]byte) string {
		var s []string
		for _, k := range keys {
			s = append(s, string(k))
		}
		return strings.Join(s, " ")
	}
	cases := []struct {
		old, fixed, manifest [][]byte
		stale, added         string
	}{
		// Fixed keys first, the manifest after them, as ownedKeys returns them.
		{k("O1", "X5", "Ia", "Ib", "Ic"), k("O1", "X9"), k("Ib", "Ic", "Id"), "Ia X5", "Id"},
		{k("O1", "X5", "Ia", "Ib"), k("O1", "X5"), k("Ia", "Ib"), "", ""},
		{k("O1", "X5"), k("O2", "X9"), k("Ia"), "O1 X5", "Ia"},
		{k("O1", "X5", "Ia", "Ib"), k("O2", "X9"), nil, "Ia Ib O1 X5", ""},
		{k("O1", "Ib", "Id"), k("O1"), k("Ia", "Ic", "Ie"), "Ib Id", "Ia Ic Ie"},
	}
	for _, c := range cases {
		desc := str(c.old) + " -> " + str(c.fixed) + " + " + str(c.manifest)
		stale, added := keysToRewrite(c.old, c.fixed, c.manifest)
		if str(stale) != c.stale || str(added) != c.added {
			t.Errorf("%s: stale %q, added %q; want %q, %q", desc, str(stale), str(added), c.stale, c.added)
		}
	}
}

// TestReplaceRewritesOnlyChangedEntries: a replace deletes and writes the
// index entries of the values it changes and leaves the rest in place;
// queries then find the new values and not the old ones, and the store's
// invariants hold.
func TestReplaceRewritesOnlyChangedEntries(t *testing.T) {
	cs := &countingStore{Store: newMemStore(t)}
	te := openTestEngine(t, cs, Options{DisableBackground: true})
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":3600,"changeFeedPolicy":{"retentionDuration":60}`)
	if err := te.create("c", `{"id":"a","pk":"p","x":1,"y":"s","tags":["t1","t2"],"o":{"deep":true}}`); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		body          string
		puts, deletes int64
	}{
		{`{"id":"a","pk":"p","x":2,"y":"s","tags":["t1","t2"],"o":{"deep":true}}`, 1, 1},
		{`{"id":"a","pk":"p","x":2,"y":"s","tags":["t1","t2"],"o":{"deep":true}}`, 0, 0},
		{`{"id":"a","pk":"p","x":2,"y":"s","tags":["t1","t3"],"o":{"deep":true}}`, 1, 1},
		{`{"id":"a","pk":"p","x":2,"tags":["t1","t3"],"o":{"deep":false},"z":null}`, 2, 2},
	}
	for i, st := range steps {
		cs.indexPuts.Store(0)
		cs.indexDeletes.Store(0)
		if _, err := te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(st.body), Conditions{}); err != nil {
			t.Fatalf("replace %d: %v", i, err)
		}
		if p, d := cs.indexPuts.Load(), cs.indexDeletes.Load(); p != st.puts || d != st.deletes {
			t.Errorf("replace %d (%s): %d index entries written, %d deleted; want %d, %d", i, st.body, p, d, st.puts, st.deletes)
		}
	}
	for q, want := range map[string]string{
		"SELECT VALUE c.id FROM c WHERE c.x = 1":                      "",
		"SELECT VALUE c.id FROM c WHERE c.x = 2":                      `"a"`,
		"SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 't2')": "",
		"SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 't3')": `"a"`,
		"SELECT VALUE c.id FROM c WHERE c.y = 's'":                    "",
		"SELECT VALUE c.id FROM c WHERE c.o.deep = false":             `"a"`,
		"SELECT VALUE c.id FROM c WHERE c.z = null":                   `"a"`,
	} {
		if got := strings.Join(te.queryAll("c", q, nil, 10), ","); got != want {
			t.Errorf("%s: %s; want %s", q, got, want)
		}
	}
	// Once expired, the document is gone; a create in its place is a new
	// version with a new sequence number, whose every entry is written.
	te.clock.Advance(3600 * time.Second)
	cs.indexPuts.Store(0)
	if err := te.create("c", `{"id":"a","pk":"p","x":2}`); err != nil {
		t.Fatal(err)
	}
	if p := cs.indexPuts.Load(); p < 3 {
		t.Errorf("create over the expired version wrote %d index entries; want at least /id, /pk and /x", p)
	}
	if got := strings.Join(te.queryAll("c", "SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 't3')", nil, 10), ","); got != "" {
		t.Errorf("the expired version's tags still match: %s", got)
	}
	if err := te.Check(ctx); err != nil {
		t.Errorf("engine invariants: %v", err)
	}
}

// TestRandomReplacesKeepIndexesExact: random replaces, upserts and patches
// that add, change and remove properties (scalars, arrays, nested objects,
// unique values), some a second later so that _ts and the expiry entry move,
// leave the indexed container answering every query as the unindexed one
// does, and the store's invariants hold (Check, when the test ends).
func TestRandomReplacesKeepIndexesExact(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("idx", `"defaultTtl":3600,"changeFeedPolicy":{"retentionDuration":60}`)
	te.mustContainer("scan", `"defaultTtl":3600,"changeFeedPolicy":{"retentionDuration":60},"indexingPolicy":{"indexingMode":"consistent","includedPaths":[],"excludedPaths":[{"path":"/*"}]}`)
	rng := rand.New(rand.NewPCG(7, 8))
	vals := []string{`1`, `2`, `2.0`, `"a"`, `"b"`, `true`, `null`, `[1,2]`, `[2,"a"]`, `{"w":1}`, `{"w":"a","z":[true]}`}
	body := func(id int) string {
		b := fmt.Sprintf(`{"id":"d%d","pk":"p"`, id)
		for _, name := range []string{"x", "y", "z"} {
			if rng.IntN(3) > 0 {
				b += fmt.Sprintf(`,%q:%s`, name, vals[rng.IntN(len(vals))])
			}
		}
		if rng.IntN(4) == 0 {
			b += fmt.Sprintf(`,"ttl":%d`, 60+rng.IntN(3))
		}
		return b + "}"
	}
	const docs = 12
	for id := range docs {
		b := body(id)
		for _, c := range []string{"idx", "scan"} {
			if err := te.create(c, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	for step := range 400 {
		if rng.IntN(10) == 0 {
			te.clock.Advance(time.Second)
		}
		id := rng.IntN(docs)
		b := body(id)
		op := rng.IntN(3)
		patch, err := ParsePatch([]byte(fmt.Sprintf(`{"operations":[{"op":"set","path":"/x","value":%s}]}`, vals[rng.IntN(len(vals))])))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"idx", "scan"} {
			var err error
			switch op {
			case 0:
				_, err = te.ReplaceDocument(ctx, ref(c, fmt.Sprintf("d%d", id), "p"), []byte(b), Conditions{})
			case 1:
				_, err = te.UpsertDocument(ctx, ref(c, fmt.Sprintf("d%d", id), "p"), []byte(b), Conditions{})
			case 2:
				_, err = te.PatchDocument(ctx, ref(c, fmt.Sprintf("d%d", id), "p"), patch, Conditions{})
			}
			if err != nil {
				t.Fatalf("step %d, %s of d%d in %s: %v", step, []string{"replace", "upsert", "patch"}[op], id, c, err)
			}
		}
	}
	queries := []string{
		"SELECT VALUE c.id FROM c WHERE c.x = 2",
		"SELECT VALUE c.id FROM c WHERE c.x = 'a'",
		"SELECT VALUE c.id FROM c WHERE c.y = null",
		"SELECT VALUE c.id FROM c WHERE c.z = true",
		"SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.y)",
		"SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.x, 2)",
		"SELECT VALUE c.id FROM c WHERE c.x.w = 1",
		"SELECT VALUE c.id FROM c WHERE c.z.w = 'a'",
		"SELECT VALUE c.id FROM c WHERE c.x IN (1, 'b', true)",
		"SELECT VALUE c.id FROM c WHERE c.y > 1",
		"SELECT c.id, c.x FROM c ORDER BY c.x DESC",
		"SELECT VALUE c.id FROM c WHERE c.ttl = 61",
		"SELECT VALUE COUNT(1) FROM c WHERE IS_DEFINED(c.z)",
	}
	check := func(when string) {
		for _, q := range queries {
			want := te.queryAll("scan", q, nil, 1000)
			if got := te.queryAll("idx", q, nil, 3); !slices.Equal(got, want) {
				t.Errorf("%s: %s: indexed %v, scan %v", when, q, got, want)
			}
		}
	}
	check("after the writes")
	// Past the documents' own ttls (60-62 s), not the container's hour.
	te.clock.Advance(2 * time.Minute)
	check("after the own ttls passed")
}
