package engine

import (
	"fmt"
	"testing"

	"github.com/lethe-db/lethe"
)

// TestPartitionOrderBy: an ORDER BY scoped to one partition, which the
// ordered index could serve, reads the index in order while that is cheap
// and the partition whole when its documents lie far down the index; a
// range scoped to a partition is gathered from the index while that is cheap
// and read from the partition otherwise (raceOrdered). Pages are the ones a scan gives, whichever way is
// taken, and the charge stays within a small multiple of the cheaper way.
func TestPartitionOrderBy(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	// race: the default policy. ordered: the partition key path left out,
	// so only the ordered index serves. partition: /t left out, so only the
	// partition's list does. scan: no index.
	policies := map[string]string{
		"race":      "",
		"ordered":   `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/pk/?"}]}`,
		"partition": `,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/t/?"}]}`,
		"scan":      `,"indexingPolicy":{"indexingMode":"none","automatic":false}`,
	}
	names := []string{"race", "ordered", "partition", "scan"}
	createContainers(t, te, names, policies)
	// "old" is written first (the smallest t: last in descending order),
	// "busy" all along, p0..p19 in between; a few documents have no t.
	var bodies [][2]string
	for i := range 30 {
		bodies = append(bodies, [2]string{"old", fmt.Sprintf(`{"id":"o%d","pk":"old","t":%d}`, i, i)})
	}
	for i := 30; i < 2000; i++ {
		p := fmt.Sprintf("p%d", i%20)
		if i%4 == 0 {
			p = "busy"
		}
		t := fmt.Sprintf(`,"t":%d`, i)
		if i%97 == 0 {
			t = ""
		}
		bodies = append(bodies, [2]string{p, fmt.Sprintf(`{"id":"d%d","pk":%q%s}`, i, p, t)})
	}
	for _, b := range bodies {
		for _, name := range names {
			if _, err := te.CreateDocument(ctx, DocRef{DB: "db", Coll: name, PK: lethe.PartitionKey{b[0]}}, []byte(b[1])); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, key := range []string{"old", "busy", "p3", "p5"} {
		for _, text := range []string{
			"SELECT c.id, c.t FROM c ORDER BY c.t DESC",
			"SELECT TOP 3 c.id FROM c ORDER BY c.t DESC",
			"SELECT c.id FROM c WHERE c.t >= 10 ORDER BY c.t",
			"SELECT c.id FROM c ORDER BY c.t DESC OFFSET 2 LIMIT 5",
			// a range, gathered whole across partitions, or the partition
			"SELECT c.id FROM c WHERE c.t >= 10",
			"SELECT c.id, c.t FROM c WHERE c.t < 1000",
		} {
			for _, size := range []int{3, 50} {
				charges := te.samePages(names, QueryOptions{Text: text, PK: lethe.PartitionKey{key}, MaxItems: size})
				// The first attempt's budget of entries is paid even where
				// the partition is cheaper: hence the constant.
				if key == "old" && size == 50 && text == "SELECT c.id, c.t FROM c ORDER BY c.t DESC" && charges[0] > charges[1]/2 {
					t.Errorf("%s %q: charged %.1f, the index alone %.1f; want the partition read, for at most half", key, text, charges[0], charges[1])
				}
				if best := min(charges[1], charges[2]); charges[0] > 4*best+5 {
					t.Errorf("%s %q, page size %d: charged %.1f, the ordered index alone %.1f, the partition alone %.1f; want at most four times the cheaper",
						key, text, size, charges[0], charges[1], charges[2])
				}
			}
		}
	}
}
