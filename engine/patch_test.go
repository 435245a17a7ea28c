package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
)

func TestPatchOperations(t *testing.T) {
	const doc = `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[1,2,3],"obj":{"k":"v"}}`
	cases := []struct {
		name, ops, want string // want: the user part of the patched document, or an error code
	}{
		{"add new member", `[{"op":"add","path":"/new","value":{"z":1}}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[1,2,3],"obj":{"k":"v"},"new":{"z":1}}`},
		{"add replaces a member", `[{"op":"add","path":"/s","value":"y"}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"y","arr":[1,2,3],"obj":{"k":"v"}}`},
		{"add inserts into an array", `[{"op":"add","path":"/arr/1","value":9}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[1,9,2,3],"obj":{"k":"v"}}`},
		{"add appends with -", `[{"op":"add","path":"/arr/-","value":9}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[1,2,3,9],"obj":{"k":"v"}}`},
		{"set overwrites an element", `[{"op":"set","path":"/arr/0","value":7}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[7,2,3],"obj":{"k":"v"}}`},
		{"set nested", `[{"op":"set","path":"/obj/k2","value":true}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[1,2,3],"obj":{"k":"v","k2":true}}`},
		{"replace existing", `[{"op":"replace","path":"/n","value":null}]`, `{"id":"a","pk":"p","n":null,"f":1.5,"s":"x","arr":[1,2,3],"obj":{"k":"v"}}`},
		{"replace missing", `[{"op":"replace","path":"/missing","value":1}]`, lethe.CodeBadRequest},
		{"remove member", `[{"op":"remove","path":"/obj/k"}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[1,2,3],"obj":{}}`},
		{"remove element", `[{"op":"remove","path":"/arr/1"}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[1,3],"obj":{"k":"v"}}`},
		{"remove missing", `[{"op":"remove","path":"/nope"}]`, lethe.CodeBadRequest},
		{"incr integer", `[{"op":"incr","path":"/n","value":41}]`, `{"id":"a","pk":"p","n":42,"f":1.5,"s":"x","arr":[1,2,3],"obj":{"k":"v"}}`},
		{"incr float", `[{"op":"incr","path":"/f","value":-0.5}]`, `{"id":"a","pk":"p","n":1,"f":1,"s":"x","arr":[1,2,3],"obj":{"k":"v"}}`},
		{"incr creates", `[{"op":"incr","path":"/c","value":3}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"s":"x","arr":[1,2,3],"obj":{"k":"v"},"c":3}`},
		{"incr a string", `[{"op":"incr","path":"/s","value":1}]`, lethe.CodeBadRequest},
		{"move", `[{"op":"move","from":"/s","path":"/obj/s"}]`, `{"id":"a","pk":"p","n":1,"f":1.5,"arr":[1,2,3],"obj":{"k":"v","s":"x"}}`},
		{"move missing", `[{"op":"move","from":"/nope","path":"/x"}]`, lethe.CodeBadRequest},
		{"several in order", `[{"op":"set","path":"/n","value":5},{"op":"incr","path":"/n","value":1}]`, `{"id":"a","pk":"p","n":6,"f":1.5,"s":"x","arr":[1,2,3],"obj":{"k":"v"}}`},
		{"parent missing", `[{"op":"set","path":"/no/such","value":1}]`, lethe.CodeBadRequest},
		{"index out of range", `[{"op":"add","path":"/arr/9","value":1}]`, lethe.CodeBadRequest},
		{"change id", `[{"op":"set","path":"/id","value":"b"}]`, lethe.CodeBadRequest},
		{"change partition key", `[{"op":"set","path":"/pk","value":"q"}]`, lethe.CodeBadRequest},
		{"ttl validated", `[{"op":"set","path":"/ttl","value":0}]`, lethe.CodeBadRequest},
		{"condition true", `{"condition":"FROM c WHERE c.n = 1 AND c.obj.k = 'v'","operations":[{"op":"set","path":"/n","value":2}]}`, `{"id":"a","pk":"p","n":2,"f":1.5,"s":"x","arr":[1,2,3],"obj":{"k":"v"}}`},
		{"condition false", `{"condition":"FROM c WHERE c.n = 2","operations":[{"op":"set","path":"/n","value":3}]}`, lethe.CodePreconditionFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			te := newTestEngine(t)
			te.mustDB("db")
			te.mustContainer("c", `"defaultTtl":-1`)
			if err := te.create("c", doc); err != nil {
				t.Fatal(err)
			}
			p, err := ParsePatch([]byte(c.ops))
			var res WriteResult
			if err == nil {
				res, err = te.PatchDocument(ctx, ref("c", "a", "p"), p, Conditions{})
			}
			if err != nil {
				if lethe.ErrorCode(err) != c.want {
					t.Fatalf("patch = %v; want %s", err, c.want)
				}
				cur, _ := te.ReadDocument(ctx, ref("c", "a", "p"), Conditions{})
				if got := userPart(t, cur.Body); got != doc {
					t.Errorf("failed patch changed the document: %s", got)
				}
				return
			}
			if got := userPart(t, res.Body); got != c.want {
				t.Errorf("patched\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// userPart strips the system properties from a served document.
func userPart(t *testing.T, body []byte) string {
	t.Helper()
	o, err := jsonv.ParseObject(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
		o.Delete(k)
	}
	return string(jsonv.Marshal(o))
}

func TestParsePatchRejects(t *testing.T) {
	bad := []string{
		`{}`, `[]`, `{"operations":[]}`, `"x"`, `[1]`,
		`[{"op":"add","path":"/a"}]`,                // no value
		`[{"op":"bogus","path":"/a","value":1}]`,    // unknown op
		`[{"op":"set","path":"a","value":1}]`,       // not a pointer
		`[{"op":"set","path":"/","value":1}]`,       // root
		`[{"op":"incr","path":"/a","value":"1"}]`,   // non-numeric incr
		`[{"op":"move","path":"/a/b","from":"/a"}]`, // into itself
		`[{"op":"set","path":"/_ts","value":1}]`,    // system property
		`{"condition":"FROM c WHERE","operations":[{"op":"remove","path":"/a"}]}`,
		`[` + repeatOps(11) + `]`,
	}
	for _, b := range bad {
		if _, err := ParsePatch([]byte(b)); lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Errorf("ParsePatch(%.60s) = %v; want BadRequest", b, err)
		}
	}
}

func repeatOps(n int) string {
	s := ""
	for i := range n {
		if i > 0 {
			s += ","
		}
		s += `{"op":"remove","path":"/a"}`
	}
	return s
}

func TestBatchIsAllOrNothing(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	if err := te.create("c", `{"id":"exists","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	res, ok, err := te.ExecuteBatch(ctx, "db", "c", pk("p"), []BatchOp{
		{Type: "Create", Body: []byte(`{"id":"new1","pk":"p"}`)},
		{Type: "Upsert", Body: []byte(`{"id":"exists","pk":"p","v":2}`)},
		{Type: "Create", Body: []byte(`{"id":"exists","pk":"p"}`)}, // conflicts
		{Type: "Delete", ID: "exists"},
	})
	if err != nil || ok {
		t.Fatalf("batch ok=%v err=%v", ok, err)
	}
	wantCodes := []string{lethe.CodeFailedDependency, lethe.CodeFailedDependency, lethe.CodeConflict, lethe.CodeFailedDependency}
	for i, r := range res {
		if lethe.ErrorCode(r.Err) != wantCodes[i] {
			t.Errorf("op %d: %v; want %s", i, r.Err, wantCodes[i])
		}
	}
	if err := te.read("c", "new1"); lethe.ErrorCode(err) != lethe.CodeNotFound {
		t.Errorf("failed batch left new1 behind: %v", err)
	}
	cur, _ := te.ReadDocument(ctx, ref("c", "exists", "p"), Conditions{})
	if got := userPart(t, cur.Body); got != `{"id":"exists","pk":"p"}` {
		t.Errorf("failed batch changed exists: %s", got)
	}
	// The same batch without the conflict commits every operation.
	res, ok, err = te.ExecuteBatch(ctx, "db", "c", pk("p"), []BatchOp{
		{Type: "Create", Body: []byte(`{"id":"new1","pk":"p"}`)},
		{Type: "Replace", ID: "exists", Body: []byte(`{"id":"exists","pk":"p","v":3}`)},
		{Type: "Patch", ID: "exists", Body: []byte(`[{"op":"incr","path":"/v","value":1}]`)},
		{Type: "Read", ID: "exists"},
		{Type: "Delete", ID: "new1"},
	})
	if err != nil || !ok {
		t.Fatalf("batch ok=%v err=%v %+v", ok, err, res)
	}
	outcomes := []BatchOutcome{OutcomeCreated, OutcomeOK, OutcomeOK, OutcomeOK, OutcomeNoContent}
	for i, r := range res {
		if r.Err != nil || r.Outcome != outcomes[i] {
			t.Errorf("op %d: %+v; want outcome %d", i, r, outcomes[i])
		}
	}
	if got := userPart(t, res[3].Body); got != `{"id":"exists","pk":"p","v":4}` {
		t.Errorf("read inside the batch saw %s", got)
	}
	// Malformed batches are refused before anything runs.
	for _, ops := range [][]BatchOp{nil, {{Type: "Explode"}}, {{Type: "Patch", ID: "x", Body: []byte(`{}`)}}, make([]BatchOp, 101)} {
		if _, _, err := te.ExecuteBatch(ctx, "db", "c", pk("p"), ops); lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Errorf("malformed batch (%d ops) = %v", len(ops), err)
		}
	}
}

func TestReadFeedPaging(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", `"defaultTtl":100`)
	te.mustContainer("other", "")
	for i, id := range []string{"z", "a", "m", "b", "y", "c", "x"} {
		p := "p"
		if i%2 == 1 {
			p = "q"
		}
		if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk(p)}, []byte(`{"id":"`+id+`","pk":"`+p+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := te.create("c", `{"id":"short","pk":"p","ttl":1}`); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Second) // "short" expires: never in any page
	var ids []string
	cont, pages := "", 0
	for {
		page, err := te.ReadFeed(ctx, "db", "c", FeedOptions{MaxItems: 3, Continuation: cont})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Docs) > 3 {
			t.Fatalf("page of %d documents with page size 3", len(page.Docs))
		}
		for _, d := range page.Docs {
			o, _ := jsonv.ParseObject(d)
			id, _ := o.Get("id")
			ids = append(ids, id.(string))
		}
		if cont = page.Continuation; cont == "" {
			break
		}
	}
	if got := strings.Join(ids, ","); got != "z,a,m,b,y,c,x" {
		t.Errorf("feed order %s; want insertion order z,a,m,b,y,c,x", got)
	}
	page, err := te.ReadFeed(ctx, "db", "c", FeedOptions{PK: pk("q")})
	if err != nil || len(page.Docs) != 3 {
		t.Errorf("partition q feed: %d documents, %v; want 3", len(page.Docs), err)
	}
	first, _ := te.ReadFeed(ctx, "db", "c", FeedOptions{MaxItems: 1})
	if _, err := te.ReadFeed(ctx, "db", "other", FeedOptions{Continuation: first.Continuation}); lethe.ErrorCode(err) != lethe.CodeBadRequest {
		t.Errorf("continuation from another container = %v; want BadRequest", err)
	}
	if _, err := te.ReadFeed(ctx, "db", "c", FeedOptions{Continuation: "garbage!"}); lethe.ErrorCode(err) != lethe.CodeBadRequest {
		t.Errorf("garbage continuation = %v; want BadRequest", err)
	}
}

// TestPatchConditionSeesRequestInstant: current-time functions in a patch
// condition read the request's instant.
func TestPatchConditionSeesRequestInstant(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	// The fake clock starts at 2023-11-14T22:13:20Z.
	if err := te.create("c", `{"id":"a","pk":"p","until":"2023-11-14T22:13:25.0000000Z"}`); err != nil {
		t.Fatal(err)
	}
	p, err := ParsePatch([]byte(`{"condition":"FROM c WHERE c.until > GetCurrentDateTime()","operations":[{"op":"incr","path":"/n","value":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.PatchDocument(ctx, ref("c", "a", "p"), p, Conditions{}); err != nil {
		t.Fatalf("condition before the instant: %v", err)
	}
	te.clock.Advance(10 * time.Second)
	if _, err := te.PatchDocument(ctx, ref("c", "a", "p"), p, Conditions{}); lethe.ErrorCode(err) != lethe.CodePreconditionFailed {
		t.Fatalf("condition after the instant: %v; want PreconditionFailed", err)
	}
}
