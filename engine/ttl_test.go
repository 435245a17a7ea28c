package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
)

// visibility reports, for every request path, whether the document looks live.
// Each probe that could change state runs on its own copy of the document.
type visibility map[string]bool

// probePaths checks document id on every request path at the current instant.
// Paths that write (replace, patch, delete, upsert, create) are probed on
// separate, identical documents so that each sees the same state: ids
// id+"/"+path were created together with id.
func (te *testEngine) probePaths(coll, id string) visibility {
	te.t.Helper()
	v := visibility{}
	v["read"] = te.read(coll, id) == nil

	page, err := te.ReadFeed(ctx, "db", coll, FeedOptions{MaxItems: 1000})
	if err != nil {
		te.t.Fatal(err)
	}
	v["feed"] = false
	for _, d := range page.Docs {
		if containsID(d, id) {
			v["feed"] = true
		}
	}
	_, err = te.ReplaceDocument(ctx, ref(coll, id+"-replace", "p"), []byte(`{"id":"`+id+`-replace","pk":"p","ttl":-1}`), Conditions{})
	v["replace"] = err == nil
	p, _ := ParsePatch([]byte(`[{"op":"set","path":"/x","value":1}]`))
	_, err = te.PatchDocument(ctx, ref(coll, id+"-patch", "p"), p, Conditions{})
	v["patch"] = err == nil
	_, err = te.DeleteDocument(ctx, ref(coll, id+"-delete", "p"), Conditions{})
	v["delete"] = err == nil
	_, err = te.DeleteDocument(ctx, ref(coll, id+"-ifmatch", "p"), Conditions{IfMatch: "*"})
	v["if-match"] = err == nil
	up, err := te.UpsertDocument(ctx, ref(coll, "", "p"), []byte(`{"id":"`+id+`-upsert","pk":"p"}`), Conditions{})
	if err != nil {
		te.t.Fatal(err)
	}
	v["upsert"] = !up.Created // replaced a live document
	err = te.create(coll, `{"id":"`+id+`-create","pk":"p"}`)
	v["create"] = lethe.ErrorCode(err) == lethe.CodeConflict
	// Undo what the probes created over an expired document, so that probing
	// the same set again sees it absent again.
	if up.Created {
		te.mustDelete(coll, id+"-upsert")
	}
	if err == nil {
		te.mustDelete(coll, id+"-create")
	}
	res, _, err := te.ExecuteBatch(ctx, "db", coll, pk("p"), []BatchOp{{Type: "Read", ID: id + "-batch"}})
	if err != nil {
		te.t.Fatal(err)
	}
	v["batch"] = res[0].Err == nil
	return v
}

var probeSuffixes = []string{"", "-replace", "-patch", "-delete", "-ifmatch", "-upsert", "-create", "-batch"}

func containsID(doc []byte, id string) bool {
	return len(doc) > 0 && (string(doc[:len(`{"id":"`)+len(id)+1]) == `{"id":"`+id+`"`)
}

func (te *testEngine) createProbeSet(coll, id, extra string) {
	te.t.Helper()
	for _, sfx := range probeSuffixes {
		if err := te.create(coll, `{"id":"`+id+sfx+`","pk":"p"`+extra+`}`); err != nil {
			te.t.Fatal(err)
		}
	}
}

func (v visibility) all(want bool) bool {
	for _, got := range v {
		if got != want {
			return false
		}
	}
	return true
}

// TestMatrixOnEveryPath covers every cell of TTL-SPEC.md's matrix on every
// request path: one second before expiry every path sees the document; at
// exactly _ts + ttl (the rule is <=) no path does.
func TestMatrixOnEveryPath(t *testing.T) {
	const docTTL, defTTL = 10, 30
	containers := map[string]string{"absent": "", "-1": `"defaultTtl":-1`, "n'": fmt.Sprintf(`"defaultTtl":%d`, defTTL)}
	docs := map[string]string{"absent": "", "-1": `,"ttl":-1`, "n": fmt.Sprintf(`,"ttl":%d`, docTTL)}
	expiresAfter := map[[2]string]int{
		{"absent", "n'"}: defTTL, {"n", "-1"}: docTTL, {"n", "n'"}: docTTL,
	}
	for docCase, docExtra := range docs {
		for collCase, collExtra := range containers {
			name := "doc " + docCase + " x container " + collCase
			t.Run(name, func(t *testing.T) {
				te := newTestEngine(t)
				te.mustDB("db")
				te.mustContainer("c", collExtra)
				after, expires := expiresAfter[[2]string{docCase, collCase}]
				if !expires {
					te.createProbeSet("c", "d", docExtra)
					te.clock.Advance(100 * 365 * 24 * time.Hour)
					if v := te.probePaths("c", "d"); !v.all(true) {
						t.Errorf("a document that never expires is not visible on every path a century later: %v", v)
					}
					return
				}
				te.createProbeSet("c", "early", docExtra)
				te.createProbeSet("c", "due", docExtra)
				te.clock.Advance(time.Duration(after-1) * time.Second)
				if v := te.probePaths("c", "early"); !v.all(true) {
					t.Errorf("one second before expiry: %v; want visible everywhere", v)
				}
				te.clock.Advance(time.Second)
				if v := te.probePaths("c", "due"); !v.all(false) {
					t.Errorf("at exactly _ts+ttl: %v; want gone everywhere", v)
				}
			})
		}
	}
}

// TestWritesRestartTheCountdown: a replace, upsert or patch sets _ts to now.
func TestWritesRestartTheCountdown(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":10`)
	for _, id := range []string{"r", "u", "p"} {
		if err := te.create("c", `{"id":"`+id+`","pk":"p"}`); err != nil {
			t.Fatal(err)
		}
	}
	te.clock.Advance(9 * time.Second)
	if _, err := te.ReplaceDocument(ctx, ref("c", "r", "p"), []byte(`{"id":"r","pk":"p"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := te.UpsertDocument(ctx, ref("c", "", "p"), []byte(`{"id":"u","pk":"p"}`), Conditions{}); err != nil {
		t.Fatal(err)
	}
	p, _ := ParsePatch([]byte(`[{"op":"incr","path":"/n","value":1}]`))
	if _, err := te.PatchDocument(ctx, ref("c", "p", "p"), p, Conditions{}); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(9 * time.Second) // 18 s after creation, 9 s after the rewrite
	for _, id := range []string{"r", "u", "p"} {
		if err := te.read("c", id); err != nil {
			t.Errorf("%s expired though rewritten 9 s ago: %v", id, err)
		}
	}
	te.clock.Advance(time.Second)
	for _, id := range []string{"r", "u", "p"} {
		if err := te.read("c", id); codeOf(err) != lethe.CodeNotFound {
			t.Errorf("%s alive 10 s after its rewrite: %v", id, err)
		}
	}
}

func (te *testEngine) setDefaultTTL(coll, extra string) {
	te.t.Helper()
	body := `{"id":"` + coll + `","partitionKey":{"paths":["/pk"],"kind":"Hash"}`
	if extra != "" {
		body += "," + extra
	}
	if _, err := te.ReplaceContainer(ctx, "db", coll, []byte(body+"}"), ""); err != nil {
		te.t.Fatal(err)
	}
}

// TestDefaultChangeAppliesToExistingDocuments: a document written 100 s ago in
// a container whose default changes from 3600 to 60 is expired at once, with no
// re-index; removing the own ttl from a document makes the default apply again.
func TestDefaultChangeAppliesToExistingDocuments(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":3600`)
	if err := te.create("c", `{"id":"old","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(100 * time.Second)
	if err := te.create("c", `{"id":"new","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.setDefaultTTL("c", `"defaultTtl":60`)
	if err := te.read("c", "old"); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("100 s old document after default 3600 -> 60: %v; want NotFound", err)
	}
	if err := te.read("c", "new"); err != nil {
		t.Errorf("fresh document after default change: %v", err)
	}
	// Turning TTL off keeps live documents live and stops expiry.
	te.setDefaultTTL("c", "")
	te.clock.Advance(24 * time.Hour)
	if err := te.read("c", "new"); err != nil {
		t.Errorf("TTL off: document expired: %v", err)
	}
	// -1 differs from off: documents with their own ttl still expire.
	te.setDefaultTTL("c", `"defaultTtl":-1`)
	if err := te.create("c", `{"id":"own","pk":"p","ttl":5}`); err != nil {
		t.Fatal(err)
	}
	if err := te.create("c", `{"id":"inherits","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(5 * time.Second)
	if err := te.read("c", "own"); codeOf(err) != lethe.CodeNotFound {
		t.Errorf("own ttl under -1: %v; want NotFound", err)
	}
	if err := te.read("c", "inherits"); err != nil {
		t.Errorf("no ttl under -1 expired: %v", err)
	}
}

// TestExpiryIsFinal: once expired, a document stays gone whatever the container's
// TTL does next, whether or not the purge has run.
func TestExpiryIsFinal(t *testing.T) {
	for _, purge := range []bool{false, true} {
		t.Run(fmt.Sprintf("purged=%v", purge), func(t *testing.T) {
			te := newTestEngine(t)
			te.mustDB("db")
			te.mustContainer("c", `"defaultTtl":10`)
			te.createProbeSet("c", "d", "")
			if err := te.create("c", `{"id":"own","pk":"p","ttl":5}`); err != nil {
				t.Fatal(err)
			}
			te.clock.Advance(10 * time.Second)
			if purge {
				if n, err := te.Purge(ctx); err != nil || n != len(probeSuffixes)+1 {
					t.Fatalf("purge = %d, %v", n, err)
				}
			}
			for _, next := range []string{`"defaultTtl":3600`, "", `"defaultTtl":-1`, `"defaultTtl":2147483647`} {
				te.setDefaultTTL("c", next)
				if v := te.probePaths("c", "d"); !v.all(false) {
					t.Errorf("after defaultTtl -> %q the expired document is visible: %v", next, v)
				}
				if err := te.read("c", "own"); codeOf(err) != lethe.CodeNotFound {
					t.Errorf("after defaultTtl -> %q the expired own-ttl document is back: %v", next, err)
				}
			}
		})
	}
}

// TestOneNowPerRequest: a batch sees one instant for all its operations.
func TestBatchSeesOneInstant(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":5`)
	if err := te.create("c", `{"id":"a","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(5 * time.Second)
	res, ok, err := te.ExecuteBatch(ctx, "db", "c", pk("p"), []BatchOp{
		{Type: "Create", Body: []byte(`{"id":"a","pk":"p","v":2}`)}, // the expired one does not conflict
		{Type: "Read", ID: "a"},
	})
	if err != nil || !ok {
		t.Fatalf("batch: ok=%v err=%v results=%+v", ok, err, res)
	}
	if res[0].Outcome != OutcomeCreated || !containsID(res[1].Body, "a") {
		t.Errorf("batch results = %+v", res)
	}
}

func TestIndexingModeNoneRefusedWithTTL(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	const msg = "Indexing mode value cannot be 'none' when 'defaultTtl' is specified in the collection"
	_, err := te.CreateContainer(ctx, "db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":10,"indexingPolicy":{"indexingMode":"none","automatic":false}}`))
	if lethe.ErrorMessage(err) != msg {
		t.Errorf("create none+ttl: %v", err)
	}
	te.mustContainer("c", `"defaultTtl":10`)
	_, err = te.ReplaceContainer(ctx, "db", "c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":10,"indexingPolicy":{"indexingMode":"none","automatic":false}}`), "")
	if lethe.ErrorMessage(err) != msg {
		t.Errorf("replace to none with ttl: %v", err)
	}
	_, err = te.CreateContainer(ctx, "db", []byte(`{"id":"c2","partitionKey":{"paths":["/pk"]},"defaultTtl":0}`))
	want := "The input defaultTtl '0' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
	if lethe.ErrorMessage(err) != want {
		t.Errorf("defaultTtl 0: %v", err)
	}
}
