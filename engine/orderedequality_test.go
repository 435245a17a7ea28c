package engine

import (
	"fmt"
	"testing"

	"github.com/lethe-db/lethe"
)

// TestOrderedOverEquality: an ORDER BY on an indexed path whose WHERE has an
// equality or IN on another reads the ORDER BY's index in order while that
// is cheap, and the equality's list, sorted, when it is short or its
// documents lie far down the index (orderedOverEquality, raceOrdered). Every
// page is the one a scan gives, whichever way is taken, and the charge stays
// within a small multiple of the cheaper way.
func TestOrderedOverEquality(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	// race: the default policy. ordered: /status left out, so only the
	// ordered index serves. equality: /t left out, so only the equality's
	// list does. scan: no index.
	policies := map[string]string{
		"race":     "",
		"ordered":  `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/status/?"}]}`,
		"equality": `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/t/?"}]}`,
		"scan":     `,"indexingPolicy":{"indexingMode":"none","automatic":false}`,
	}
	names := []string{"race", "ordered", "equality", "scan"}
	createContainers(t, te, names, policies)
	// "mid" documents are written first, so that they come last in
	// descending t, below every "common" one: the ordered read spends its
	// budget before the race turns to their list (200, more than a list
	// read without a race). "rare" ones are few and spread out. Some
	// documents have no t or no status; every _ts is shared by many.
	var bodies [][2]string
	for i := range 1200 {
		status := `"common"`
		switch {
		case i < 200:
			status = `"mid"`
		case i%250 == 7:
			status = `"rare"`
		case i%111 == 0:
			status = `null`
		case i%131 == 0:
			status = ``
		}
		if status != "" {
			status = `,"status":` + status
		}
		tv := fmt.Sprintf(`,"t":%d`, i)
		if i%97 == 0 {
			tv = ""
		}
		p := fmt.Sprintf("p%d", i%13)
		bodies = append(bodies, [2]string{p, fmt.Sprintf(`{"id":"d%d","pk":%q%s%s}`, i, p, status, tv)})
	}
	for i, b := range bodies {
		for _, name := range names {
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: name, PK: lethe.PartitionKey{b[0]}}, []byte(b[1])); err != nil {
				t.Fatal(err)
			}
		}
		if i%300 == 299 {
			te.clock.Advance(1e9) // four seconds of 300 documents
		}
	}
	for _, text := range []string{
		"SELECT c.id, c.t FROM c WHERE c.status = 'common' ORDER BY c.t DESC",
		"SELECT c.id FROM c WHERE c.status = 'mid' ORDER BY c.t DESC",
		"SELECT c.id FROM c WHERE c.status = 'rare' ORDER BY c.t DESC",
		"SELECT c.id FROM c WHERE c.status IN ('mid', 'rare') ORDER BY c.t DESC",
		"SELECT TOP 5 c.id FROM c WHERE c.status = 'common' ORDER BY c.t DESC",
		"SELECT c.id FROM c WHERE c.status = 'mid' ORDER BY c.t DESC OFFSET 3 LIMIT 20",
		"SELECT c.id FROM c WHERE c.status = 'common' AND c.t > 900 ORDER BY c.t",
		"SELECT c.id, c._ts FROM c WHERE c.status = 'common' ORDER BY c._ts DESC",
		"SELECT c.id, c._ts FROM c WHERE c.status = 'mid' ORDER BY c._ts",
		"SELECT c.id FROM c WHERE c.status = null ORDER BY c.t DESC",
		"SELECT c.id FROM c WHERE c.t IN (5, 50, 500, 1100) ORDER BY c.t DESC",
		"SELECT c.id, c.t FROM c WHERE c.status = 'common' ORDER BY c.t DESC, c.id",
	} {
		for _, size := range []int{7, 100} {
			charges := te.samePages(names, QueryOptions{Text: text, MaxItems: size, ServeAll: true})
			if best := min(charges[1], charges[2]); charges[0] > 4*best+10 {
				t.Errorf("%q, page size %d: charged %.1f, the ordered index alone %.1f, the equality alone %.1f; want at most four times the cheaper",
					text, size, charges[0], charges[1], charges[2])
			}
		}
	}
	// The first page of a long list's query reads about a page, where the
	// equality alone reads and sorts all of it.
	for _, text := range []string{
		"SELECT * FROM c WHERE c.status = 'common' ORDER BY c.t DESC",
		"SELECT * FROM c WHERE c.status IN ('common', 'rare') ORDER BY c.t DESC",
	} {
		for _, name := range []string{"race", "equality"} {
			page, err := te.QueryDocuments(ctx, "db", name, QueryOptions{Text: text, MaxItems: 10, ServeAll: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Rows) != 10 {
				t.Fatalf("%s %q: %d rows, want 10", name, text, len(page.Rows))
			}
			if name == "race" && page.Examined > 30 {
				t.Errorf("%q: the first page read %d documents, want at most 30", text, page.Examined)
			}
			if name == "equality" && page.Examined < 800 {
				t.Errorf("%q without an index of the ORDER BY: the first page read %d documents; the reference case should read the list", text, page.Examined)
			}
		}
	}
}
