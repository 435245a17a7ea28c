package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestReadFeed proves the raw read feed (GET .../docs; the Go SDK has no read
// feed API): documents come back in insertion order, pages respect
// x-ms-max-item-count, following x-ms-continuation visits every document exactly
// once and ends with no continuation, writes between pages are seen without
// duplicates, a partition-scoped feed returns only that partition (including
// keys that are prefixes of one another), and a continuation token from another
// container is refused with 400.
func TestReadFeed(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{InMemory: true})
	c := s.client(t)
	db := mustDatabase(t, c, "feed")
	cc := mustContainer(t, db, pkContainer("c", nil))
	other := mustContainer(t, db, pkContainer("other", nil))

	pks := []string{"a", "ab", "b"}
	var all []string
	byPK := map[string][]string{}
	for i := range 23 {
		id := fmt.Sprintf("d%02d", i)
		pk := pks[i%len(pks)]
		if _, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), mustMarshal(t, map[string]any{"id": id, "pk": pk}), nil); err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
		byPK[pk] = append(byPK[pk], id)
	}
	for i := range 7 {
		id := fmt.Sprintf("o%02d", i)
		if _, err := other.CreateItem(ctx, azcosmos.NewPartitionKeyString("a"), mustMarshal(t, map[string]any{"id": id, "pk": "a"}), nil); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("page sizes", func(t *testing.T) {
		for _, size := range []int{0, 1, 5, 7, 23, 24, 1000} {
			if got := s.readFeedAll(t, "feed", "c", size, ""); !slices.Equal(got, all) {
				t.Errorf("page size %d: %v; want %v", size, got, all)
			}
		}
		// -1 means "server default".
		p, r := s.readFeedPage(t, "feed", "c", hdr("x-ms-max-item-count", "-1"))
		r.wantStatus(t, "page size -1", http.StatusOK)
		if len(p.Docs) != len(all) || p.Continuation != "" {
			t.Errorf("page size -1: %d docs, continuation %q", len(p.Docs), p.Continuation)
		}
	})

	t.Run("page shape", func(t *testing.T) {
		cont := ""
		var pages []int
		for {
			h := hdr("x-ms-max-item-count", "5")
			if cont != "" {
				h["x-ms-continuation"] = cont
			}
			p, r := s.readFeedPage(t, "feed", "c", h)
			r.wantStatus(t, "page", http.StatusOK)
			if n, _ := strconv.Atoi(r.Header.Get("x-ms-item-count")); n != len(p.Docs) {
				t.Errorf("x-ms-item-count %q with %d documents", r.Header.Get("x-ms-item-count"), len(p.Docs))
			}
			if r.charge() <= 0 {
				t.Errorf("read feed charge %v", r.charge())
			}
			for _, d := range p.Docs {
				if d["_rid"] == nil || d["_etag"] == nil || d["_ts"] == nil {
					t.Errorf("feed document without system properties: %v", d)
				}
			}
			pages = append(pages, len(p.Docs))
			if p.Continuation == "" {
				break
			}
			cont = p.Continuation
		}
		// 23 documents in pages of 5: four full pages and one of 3.
		if !slices.Equal(pages, []int{5, 5, 5, 5, 3}) {
			t.Errorf("page sizes %v; want [5 5 5 5 3]", pages)
		}
	})

	t.Run("partition scoped", func(t *testing.T) {
		for _, pk := range pks {
			for _, size := range []int{0, 2} {
				got := s.readFeedAll(t, "feed", "c", size, pkHeader(pk))
				if !slices.Equal(got, byPK[pk]) {
					t.Errorf("feed of %q (page size %d) = %v; want %v", pk, size, got, byPK[pk])
				}
			}
		}
		if got := s.readFeedAll(t, "feed", "c", 0, `["none"]`); len(got) != 0 {
			t.Errorf("feed of an empty partition = %v", got)
		}
	})

	t.Run("continuation from another container", func(t *testing.T) {
		p, _ := s.readFeedPage(t, "feed", "other", hdr("x-ms-max-item-count", "2"))
		if p.Continuation == "" {
			t.Fatal("no continuation from the other container")
		}
		_, r := s.readFeedPage(t, "feed", "c", hdr("x-ms-max-item-count", "2", "x-ms-continuation", p.Continuation))
		r.wantError(t, "continuation from another container", http.StatusBadRequest)
		_, r = s.readFeedPage(t, "feed", "c", hdr("x-ms-continuation", "garbage!"))
		r.wantError(t, "garbage continuation", http.StatusBadRequest)
	})

	t.Run("writes between pages", func(t *testing.T) {
		db2 := mustDatabase(t, c, "feed2")
		c2 := mustContainer(t, db2, pkContainer("c", nil))
		pk := azcosmos.NewPartitionKeyString("p")
		for i := range 10 {
			if _, err := c2.CreateItem(ctx, pk, mustMarshal(t, map[string]any{"id": fmt.Sprintf("w%02d", i), "pk": "p"}), nil); err != nil {
				t.Fatal(err)
			}
		}
		p, _ := s.readFeedPage(t, "feed2", "c", hdr("x-ms-max-item-count", "4"))
		var seen []string
		for _, d := range p.Docs {
			seen = append(seen, d["id"].(string))
		}
		// Delete one not yet served, replace one already served and one not yet
		// served, and add two.
		if _, err := c2.DeleteItem(ctx, pk, "w06", nil); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"w01", "w08"} {
			if _, err := c2.UpsertItem(ctx, pk, mustMarshal(t, map[string]any{"id": id, "pk": "p", "changed": true}), nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"w10", "w11"} {
			if _, err := c2.CreateItem(ctx, pk, mustMarshal(t, map[string]any{"id": id, "pk": "p"}), nil); err != nil {
				t.Fatal(err)
			}
		}
		cont := p.Continuation
		for cont != "" {
			p, r := s.readFeedPage(t, "feed2", "c", hdr("x-ms-max-item-count", "4", "x-ms-continuation", cont))
			r.wantStatus(t, "next page", http.StatusOK)
			for _, d := range p.Docs {
				seen = append(seen, d["id"].(string))
			}
			cont = p.Continuation
		}
		want := []string{"w00", "w01", "w02", "w03", "w04", "w05", "w07", "w08", "w09", "w10", "w11"}
		if !slices.Equal(seen, want) {
			t.Errorf("feed across writes = %v; want %v", seen, want)
		}
	})
}
