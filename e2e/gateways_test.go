package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// gatewayInfo is GET /_lethe/gateway.
type gatewayInfo struct {
	Shared        bool
	ID            string
	Slot          int
	OtherGateways int
}

func (s *server) gateway(t testing.TB) gatewayInfo {
	t.Helper()
	r := s.send(t, "GET", "/_lethe/gateway", adminKey, nil)
	var g gatewayInfo
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &g) != nil {
		t.Fatalf("GET /_lethe/gateway: %d %s", r.Status, r.Body)
	}
	return g
}

// ttlStatus is the part of GET /_lethe/dbs/{db}/colls/{coll}/ttl these tests read.
type ttlStatus struct {
	Backlog struct{ Documents int64 }
	Purged  int64
	// PurgeLease is absent when no gateway holds it.
	PurgeLease *struct{ Holder string }
}

func (s *server) ttlStatus(t testing.TB, db, coll string) ttlStatus {
	t.Helper()
	r := s.send(t, "GET", "/_lethe/dbs/"+db+"/colls/"+coll+"/ttl", adminKey, nil)
	var st ttlStatus
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &st) != nil {
		t.Fatalf("TTL status: %d %s", r.Status, r.Body)
	}
	return st
}

// waitFor polls cond, a status the servers report, until it holds; the test
// fails after a minute.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after a minute for %s", what)
		}
	}
}

// startGateways starts n servers on one PostgreSQL database and waits until
// each sees the others registered.
func startGateways(t *testing.T, n int, args ...string) []*server {
	t.Helper()
	opts := serverOpts{Store: pgtest.Database(t), Args: args}
	gws := make([]*server, n)
	slots := map[int]bool{}
	for i := range gws {
		gws[i] = startServer(t, opts)
		g := gws[i].gateway(t)
		if !g.Shared || slots[g.Slot] {
			t.Fatalf("gateway %d: %+v; slots taken %v", i, g, slots)
		}
		slots[g.Slot] = true
	}
	waitFor(t, "every gateway to see the others", func() bool {
		for _, s := range gws {
			if s.gateway(t).OtherGateways != n-1 {
				return false
			}
		}
		return true
	})
	return gws
}

// TestPostgresGatewaysTTL: three gateways over one database, under one
// manual clock that any of them moves. Documents written through each expire
// at exactly _ts + ttl as seen from every gateway: a read, a query and the
// count one second before are the same everywhere, and so is their absence
// at the instant; the change feed of every gateway shows every gateway's
// writes once the clock has passed their second; and a purge through one
// gateway removes exactly the expired documents, as every gateway's TTL
// backlog then shows.
func TestPostgresGatewaysTTL(t *testing.T) {
	t.Parallel()
	gws := startGateways(t, 3, "--clock=manual", "--disable-purger")
	ccs := make([]*azcosmos.ContainerClient, len(gws))
	mustContainer(t, mustDatabase(t, gws[0].client(t), "db"), pkContainer("c", i32(20)))
	for i, s := range gws {
		cc, err := s.client(t).NewContainer("db", "c")
		if err != nil {
			t.Fatal(err)
		}
		ccs[i] = cc
	}
	pk := azcosmos.NewPartitionKeyString("p")
	type doc struct {
		id  string
		ttl int64 // 0: the container's 20
	}
	var docs []doc
	var firstTS int64
	for i := range ccs {
		for j, ttl := range []int64{0, 10, 15} {
			d := doc{fmt.Sprintf("g%d-%d", i, j), ttl}
			body := map[string]any{"id": d.id, "pk": "p"}
			if ttl != 0 {
				body["ttl"] = ttl
			}
			created := createDoc(t, ccs[i], pk, body)
			if d.ttl == 0 {
				d.ttl = 20
			}
			if ts := tsOf(t, created); firstTS == 0 {
				firstTS = ts
			} else if ts != firstTS {
				t.Fatalf("%s: _ts %d, the first document's %d: one clock stamps every gateway's writes", d.id, ts, firstTS)
			}
			docs = append(docs, d)
		}
	}
	start := gws[0].clock(t)
	if start != firstTS {
		t.Fatalf("the clock reads %d, the documents' _ts is %d", start, firstTS)
	}

	// The change feed: every gateway's writes, from every gateway, once
	// the clock has passed their second and every gateway has published
	// its floor (a few times a second); before, none. Under the manual
	// clock only the floors can show them before they are 6 s old.
	for i, cc := range ccs {
		if n := feedCount(t, cc); n != 0 {
			t.Fatalf("gateway %d: %d changes in the second they were made", i, n)
		}
	}
	gws[1].advanceClock(t, 1)
	for i, cc := range ccs {
		waitFor(t, fmt.Sprintf("gateway %d's change feed to show %d changes a second after them", i, len(docs)), func() bool {
			return feedCount(t, cc) == len(docs)
		})
	}
	gws[1].advanceClock(t, 6)
	for i, cc := range ccs {
		if n := feedCount(t, cc); n != len(docs) {
			t.Fatalf("gateway %d: %d changes, want %d", i, n, len(docs))
		}
	}

	// Second by second, through every gateway alike.
	for now := start + 7; now <= start+21; now++ {
		var live []string
		for _, d := range docs {
			if now < start+d.ttl {
				live = append(live, d.id)
			}
		}
		for i, cc := range ccs {
			for _, d := range docs {
				want := http.StatusOK
				if !slices.Contains(live, d.id) {
					want = http.StatusNotFound
				}
				if st := readStatus(t, cc, pk, d.id); st != want {
					t.Fatalf("at _ts+%d, gateway %d reads %s: %d, want %d", now-start, i, d.id, st, want)
				}
			}
			if got := queryIDs(t, cc, "SELECT VALUE c.id FROM c ORDER BY c.id", pk, nil); strings.Join(got, ",") != strings.Join(sorted(live), ",") {
				t.Fatalf("at _ts+%d, gateway %d queries %v, want %v", now-start, i, got, live)
			}
			if n := mustQuery(t, cc, "SELECT VALUE COUNT(1) FROM c", pk, nil).rows; len(n) != 1 || n[0] != float64(len(live)) {
				t.Fatalf("at _ts+%d, gateway %d counts %v, want %d", now-start, i, n, len(live))
			}
		}
		if now == start+16 {
			// 6 expired (ttl 10 and 15), through the third gateway's purge.
			if n := gws[2].purgeNow(t); n != 6 {
				t.Fatalf("purged %d, want 6", n)
			}
			for i, s := range gws {
				if st := s.ttlStatus(t, "db", "c"); st.Backlog.Documents != 0 {
					t.Fatalf("gateway %d: backlog %d after the purge", i, st.Backlog.Documents)
				}
			}
		}
		gws[int(now)%len(gws)].advanceClock(t, 1)
	}
}

// clock returns the server's time.
func (s *server) clock(t testing.TB) int64 {
	t.Helper()
	return clockOf(t, s.send(t, "GET", "/_lethe/clock", adminKey, nil))
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// feedCount counts the changes a change feed read from the beginning returns.
func feedCount(t testing.TB, cc *azcosmos.ContainerClient) int {
	t.Helper()
	ranges, err := cc.ReadFeedRanges(ctx, nil)
	if err != nil || len(ranges) != 1 {
		t.Fatalf("feed ranges %v, %v", ranges, err)
	}
	feed, err := cc.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], MaxItemCount: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return int(feed.Count)
}

// TestPostgresGatewayKilledHoldingPurgeLease: two gateways with their
// background purgers on; the one holding the container's purge lease is
// killed; the other takes the lease over once it lapses and purges what
// expires after the kill, down to an empty backlog.
func TestPostgresGatewayKilledHoldingPurgeLease(t *testing.T) {
	t.Parallel()
	gws := startGateways(t, 2)
	cc := mustContainer(t, mustDatabase(t, gws[0].client(t), "db"), pkContainer("c", i32(1)))
	pk := azcosmos.NewPartitionKeyString("p")
	for i := range 20 {
		createDoc(t, cc, pk, map[string]any{"id": fmt.Sprint("a", i), "pk": "p"})
	}
	var holder string
	waitFor(t, "a gateway to purge the first documents", func() bool {
		st := gws[0].ttlStatus(t, "db", "c")
		if st.PurgeLease == nil || st.Backlog.Documents != 0 {
			return false
		}
		holder = st.PurgeLease.Holder
		return true
	})
	victim, survivor := gws[0], gws[1]
	if survivor.gateway(t).ID == holder {
		victim, survivor = survivor, victim
	} else if victim.gateway(t).ID != holder {
		t.Fatalf("the purge lease's holder %q is neither gateway", holder)
	}
	victim.kill()
	scc, err := survivor.client(t).NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		createDoc(t, scc, pk, map[string]any{"id": fmt.Sprint("b", i), "pk": "p"})
	}
	me := survivor.gateway(t).ID
	waitFor(t, "the survivor to take the purge lease over and purge", func() bool {
		st := survivor.ttlStatus(t, "db", "c")
		return st.PurgeLease != nil && st.PurgeLease.Holder == me && st.Backlog.Documents == 0 && st.Purged >= 20
	})
	if got := queryIDs(t, scc, "SELECT VALUE c.id FROM c", pk, nil); len(got) != 0 {
		t.Fatalf("documents left after the purge: %v", got)
	}
}
