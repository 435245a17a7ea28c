package engine

import (
	"fmt"
	"strings"
	"testing"
)

// doc1K returns a document of about 1 KB with ten scalar properties, so that
// default indexing writes about ten index terms.
func doc1K(id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"pk":"p"`, id)
	for i := range 8 {
		fmt.Fprintf(&b, `,"f%d":%d`, i, i)
	}
	fmt.Fprintf(&b, `,"pad":%q}`, strings.Repeat("x", 900))
	return b.String()
}

func TestChargesFollowTheWork(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	te.mustContainer("plain", `"indexingPolicy":{"indexingMode":"none","automatic":false}`)

	create := func(coll, id string) float64 {
		t.Helper()
		res, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: coll, PK: pk("p")}, []byte(doc1K(id)))
		if err != nil {
			t.Fatal(err)
		}
		return res.Charge
	}
	indexed, unindexed := create("c", "a"), create("plain", "a")
	if indexed < 5 || indexed > 6.5 {
		t.Errorf("1 KB create with default indexing: %v RU, want about 5.5", indexed)
	}
	if unindexed >= indexed {
		t.Errorf("create without indexing (%v RU) is not cheaper than with (%v RU)", unindexed, indexed)
	}
	read, err := te.ReadDocument(ctx, ref("c", "a", "p"), Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	if read.Charge < 1 || read.Charge > 1.1 { // the stored document is a little over 1 KB
		t.Errorf("1 KB point read: %v RU, want about 1", read.Charge)
	}
	rep, err := te.ReplaceDocument(ctx, ref("c", "a", "p"), []byte(doc1K("a")), Conditions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Charge <= indexed {
		t.Errorf("replace (%v RU) is not dearer than create (%v RU): it also removes the old terms", rep.Charge, indexed)
	}
	// The same write charges the same: the model is deterministic.
	if again := create("c", "b"); again != indexed {
		t.Errorf("two identical creates charged %v and %v", indexed, again)
	}

	for i := range 40 {
		create("c", fmt.Sprintf("q%d", i))
	}
	q := func(text string) QueryPage {
		t.Helper()
		page, err := te.QueryDocuments(ctx, "db", "c", QueryOptions{Text: text, MaxItems: 100})
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	point := q(`SELECT * FROM c WHERE c.id = "q1"`)
	scan := q(`SELECT * FROM c WHERE c.f0 + 0 = 0`) // no index can answer: every document is loaded
	if point.Charge < 2.3 || point.Charge >= scan.Charge {
		t.Errorf("indexed one-row query %v RU, scanning query %v RU: want 2.3 <= indexed < scan", point.Charge, scan.Charge)
	}
}
