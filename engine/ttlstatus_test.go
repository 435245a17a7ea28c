package engine

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lethe-db/lethe/ttl"
)

// TestContainerTTLStatusMatchesDocuments writes documents with random own
// ttls (and none, under a random defaultTtl) at random times, then checks
// the status's minute and hour counts against each live document's expiry
// instant under the server's rule (ttl.ExpiresAt), and its backlog against
// the documents expired but not purged; after the clock moves on a minute, those documents leave the counts and join the backlog.
func TestContainerTTLStatusMatchesDocuments(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			te := newTestEngine(t)
			te.mustDB("db")
			def := []int64{-1, 90, 5000}[rng.IntN(3)]
			te.mustContainer("c", fmt.Sprintf(`"defaultTtl":%d`, def))
			type doc struct {
				ts  int64
				own ttl.Own
			}
			var docs []doc
			for i := range 300 {
				te.clock.Advance(time.Duration(rng.IntN(20)) * time.Second)
				body := fmt.Sprintf(`{"id":"d%d","pk":"p%d"`, i, i%7)
				own := ttl.Own{}
				switch rng.IntN(4) {
				case 0:
					n := 1 + rng.Int64N(7200)
					body += fmt.Sprintf(`,"ttl":%d`, n)
					own = ttl.Own{Kind: ttl.OwnSeconds, Seconds: n}
				case 1:
					body += `,"ttl":-1`
					own = ttl.Own{Kind: ttl.OwnNever}
				}
				res, err := te.CreateDocument(ctx, ref("c", "", fmt.Sprintf("p%d", i%7)), []byte(body+"}"))
				if err != nil {
					t.Fatal(err)
				}
				var written struct {
					Ts int64 `json:"_ts"`
				}
				if err := json.Unmarshal(res.Body, &written); err != nil {
					t.Fatal(err)
				}
				docs = append(docs, doc{ts: written.Ts, own: own})
			}
			check := func(when string) TTLStatus {
				st, err := te.ContainerTTLStatus(ctx, "db", "c")
				if err != nil {
					t.Fatal(err)
				}
				var byMinute [60]int64
				var byHour [24]int64
				var pending int64
				for _, d := range docs {
					at, ok := ttl.ExpiresAt(d.ts, d.own, st.Policy)
					switch {
					case !ok:
					case at <= st.Now:
						pending++
					case at-st.Now <= 24*3600:
						in := at - st.Now - 1
						if in < 3600 {
							byMinute[in/60]++
						}
						byHour[in/3600]++
					}
				}
				if st.ByMinute != byMinute || st.ByHour != byHour || st.PendingDocuments != pending {
					t.Fatalf("%s (defaultTtl %d): status by minute %v, by hour %v, pending %d; the documents say %v, %v, %d",
						when, def, st.ByMinute, st.ByHour, st.PendingDocuments, byMinute, byHour, pending)
				}
				return st
			}
			before := check("after the writes")
			te.clock.Advance(60 * time.Second)
			after := check("a minute later")
			if after.PendingDocuments != before.PendingDocuments+before.ByMinute[0] {
				t.Fatalf("the first minute's %d documents did not join the backlog of %d: %d", before.ByMinute[0], before.PendingDocuments, after.PendingDocuments)
			}
		})
	}
}
