package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lethe-db/lethe"
)

// legacyPolicy is what the older SDKs (the Node documentdb SDK, .NET v2)
// send: a root path spelled "/", index arrays with kinds, data types and
// precisions, a mode in another case, and an excluded path with indexes.
const legacyPolicy = `"indexingPolicy":{"indexingMode":"Consistent","automatic":true,
	"includedPaths":[{"path":"/","indexes":[{"kind":"Hash","dataType":"String","precision":3},{"kind":"Range","dataType":"Number","precision":-1},{"kind":"Spatial","dataType":"Point"}]},
		{"path":"/n/?","indexes":[{"kind":"range","dataType":"number"}]}],
	"excludedPaths":[{"path":"/skip/*","indexes":[{"kind":"Hash","dataType":"String","precision":8}]}]}`

// policyOf returns a container's indexingPolicy as served.
func (te *testEngine) policyOf(coll string) map[string]any {
	te.t.Helper()
	res, _, err := te.ReadContainer(ctx, "db", coll)
	if err != nil {
		te.t.Fatal(err)
	}
	var body struct {
		IndexingPolicy map[string]any `json:"indexingPolicy"`
	}
	if err := json.Unmarshal(res.Body, &body); err != nil {
		te.t.Fatal(err)
	}
	return body.IndexingPolicy
}

func TestLegacyIndexingPolicyAccepted(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("legacy", legacyPolicy)

	got, _ := json.Marshal(te.policyOf("legacy"))
	want := `{"automatic":true,"excludedPaths":[{"indexes":[],"path":"/skip/*"},{"path":"/\"_etag\"/?"}],` +
		`"includedPaths":[{"indexes":[],"path":"/"},{"indexes":[],"path":"/n/?"}],"indexingMode":"consistent"}`
	if string(got) != want {
		t.Errorf("policy read back as\n%s\nwant\n%s", got, want)
	}

	// "/" indexes the whole document, like "/*"; /skip/* stays out.
	for _, body := range []string{
		`{"id":"a","pk":"p","n":1,"s":"x","o":{"deep":5},"skip":{"v":1}}`,
		`{"id":"b","pk":"p","n":2,"s":"y","o":{"deep":6},"skip":{"v":2}}`,
	} {
		if err := te.create("legacy", body); err != nil {
			t.Fatal(err)
		}
	}
	if n := te.indexEntryCount("legacy", "s"); n != 2 {
		t.Errorf("/s has %d index entries; want 2", n)
	}
	if n := te.indexEntryCount("legacy", "o", "deep"); n != 2 {
		t.Errorf("/o/deep has %d index entries; want 2", n)
	}
	if n := te.indexEntryCount("legacy", "skip", "v"); n != 0 {
		t.Errorf("/skip/v (excluded) has %d index entries; want 0", n)
	}
	page, err := te.QueryDocuments(ctx, "db", "legacy", QueryOptions{Text: "SELECT VALUE c.id FROM c WHERE c.o.deep = 6", IndexMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) != 1 || string(page.Rows[0]) != `"b"` {
		t.Errorf("indexed query rows %q; want [\"b\"]", page.Rows)
	}
	if m, _ := base64Decode(page.IndexMetrics); !strings.Contains(string(m), `"IndexSpec":"/o/deep/?"`) {
		t.Errorf("index metrics %s do not name /o/deep/?", m)
	}

	// Replacing with the policy as read back changes nothing: no re-index.
	res, _, err := te.ReadContainer(ctx, "db", "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.ReplaceContainer(ctx, "db", "legacy", res.Body, ""); err != nil {
		t.Fatalf("replace with the policy read back: %v", err)
	}
	if n, err := te.BuildIndexes(ctx); err != nil || n != 0 {
		t.Errorf("the same policy re-indexed %d documents (%v)", n, err)
	}
}

func TestLegacyIndexingPolicyRefusals(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	cases := []struct{ policy, want string }{
		{`{"includedPaths":[{"path":"a/?"}]}`, "could not be accepted"},
		{`{"includedPaths":[{"path":"/a"}]}`, "could not be accepted"},
		{`{"includedPaths":[{"path":"/*","indexes":{"kind":"Hash"}}]}`, "'indexes' must be an array"},
		{`{"includedPaths":[{"path":"/*","indexes":["Hash"]}]}`, "must be an object"},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"BTree","dataType":"String"}]}]}`, `kind "BTree" is unknown`},
		{`{"includedPaths":[{"path":"/*","indexes":[{"dataType":"String"}]}]}`, "kind null is unknown"},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Hash","dataType":"Point"}]}]}`, `data type "Point" cannot have a Hash index`},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Spatial","dataType":"String"}]}]}`, "cannot have a Spatial index"},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Range","dataType":"Date"}]}]}`, `data type "Date"`},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Hash","dataType":"String","precision":9}]}]}`, "precision 9 is out of range for a hash index"},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Hash","dataType":"String","precision":0}]}]}`, "precision 0 is out of range"},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Range","dataType":"Number","precision":101}]}]}`, "precision 101 is out of range for a range index"},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Range","dataType":"Number","precision":2.5}]}]}`, "precision 2.5"},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Range","dataType":"Number","precision":"3"}]}]}`, `precision "3"`},
		{`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Spatial","dataType":"Point","precision":3}]}]}`, "a spatial index has no precision"},
		{`{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/x/*","indexes":[{"kind":"Hash","dataType":"Number","precision":-2}]}]}`, "precision -2"},
		{`{"automatic":"yes"}`, "'automatic' must be true or false"},
	}
	for i, c := range cases {
		body := `{"id":"bad","partitionKey":{"paths":["/pk"]},"indexingPolicy":` + c.policy + `}`
		_, err := te.CreateContainer(ctx, "db", []byte(body))
		if lethe.ErrorCode(err) != lethe.CodeBadRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d %s: err %v; want BadRequest containing %q", i, c.policy, err, c.want)
		}
	}
	// Nothing was created.
	list, err := te.ListContainers(ctx, "db")
	if err != nil || len(list) != 0 {
		t.Errorf("after refusals: %d containers (%v); want none", len(list), err)
	}
}
