package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/lethe-db/lethe/changefeed"
)

// avWireRecord is one record of the all versions and deletes feed as it
// comes off the wire.
type avWireRecord = changefeed.WireRecord

// recordPK returns the record's partition key value (of /pk).
func recordPK(r avWireRecord) string {
	if r.Metadata.OperationType == "delete" {
		var pk struct{ PK string }
		_ = json.Unmarshal(r.Metadata.PartitionKey, &pk)
		return pk.PK
	}
	pk, _ := r.Current["pk"].(string)
	return pk
}

// allVersionsPage reads one page of a container's all versions and deletes
// feed after token ("" for the beginning of the retained window), returning
// its records, the next token and the status; an error when the server
// cannot be reached (it may have been killed).
func (s *server) allVersionsPage(db, coll, token string, maxItems int) ([]avWireRecord, string, int, error) {
	path := docsPath(db, coll)
	req, err := http.NewRequest("GET", s.URL+path, nil)
	if err != nil {
		return nil, "", 0, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("X-Ms-Date", date)
	req.Header.Set("X-Ms-Version", "2020-11-05")
	req.Header.Set("Authorization", signRequest("GET", path, date))
	req.Header.Set("A-IM", "Full-Fidelity Feed")
	req.Header.Set("X-Ms-Cosmos-Changefeed-Wire-Format-Version", "2021-09-15")
	req.Header.Set("X-Ms-Max-Item-Count", fmt.Sprint(maxItems))
	if token != "" {
		req.Header.Set("If-None-Match", token)
	}
	resp, err := s.rawClient().Do(req)
	if err != nil {
		return nil, "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", 0, err
	}
	next := resp.Header.Get("Etag")
	switch resp.StatusCode {
	case http.StatusNotModified:
		return nil, next, resp.StatusCode, nil
	case http.StatusOK:
	default:
		return nil, "", resp.StatusCode, fmt.Errorf("all versions feed: status %d: %s", resp.StatusCode, truncateForLog(body))
	}
	var page struct{ Documents []avWireRecord }
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, "", resp.StatusCode, fmt.Errorf("all versions feed body %q: %w", truncateForLog(body), err)
	}
	return page.Documents, next, resp.StatusCode, nil
}

// avOp is one write a writer attempted: its operation as the feed names it,
// the document, and whether the server acknowledged it.
type avOp struct {
	op, id string
	acked  bool
}

// TestAllVersionsFeedAcrossKills: writers create, replace and delete
// documents, and create documents that expire a second later, through the Go
// SDK, while a reader follows the all versions and deletes feed with its
// continuation; the server, with its background purge on, is killed with
// SIGKILL and restarted three times. At the end, the reader's records for
// each writer are its acknowledged writes, each once, in order, with at most
// the write in flight at each kill besides; each expiring document's create
// and expiry each once, the expiry at _ts + 1; and the documents still
// stored are those whose last record is a write, at that version: nothing
// the feed served was lost.
func TestAllVersionsFeedAcrossKills(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The Go SDK cannot set a changeFeedPolicy: the server default gives the
	// container its log.
	opts := serverOpts{DataDir: dir, Args: []string{"--change-feed-retention", "60m"}}
	s := startServer(t, opts)
	mustContainer(t, mustDatabase(t, s.client(t), "av"), pkContainer("c", i32(-1)))

	const writers, rounds = 3, 3
	ops := make([][]avOp, writers)      // per writer, what it attempted, in order
	expiring := make([][]avOp, writers) // per writer, its expiring creates
	expiryOf := map[string]int64{}      // an acknowledged expiring create's _ts + 1
	var expiryMu sync.Mutex
	var (
		got   []avWireRecord // every record the reader got, in feed order
		gotMu sync.Mutex
		token string
	)
	// read drains the feed from the reader's position until a 304.
	read := func(s *server) error {
		for {
			recs, next, status, err := s.allVersionsPage("av", "c", token, 40)
			if err != nil {
				return err
			}
			gotMu.Lock()
			got = append(got, recs...)
			gotMu.Unlock()
			token = next
			if status == http.StatusNotModified {
				return nil
			}
		}
	}

	withContent := &azcosmos.ItemOptions{EnableContentResponseOnWrite: true}
	next := make([]int, writers)
	for round := range rounds {
		cc, err := s.client(t).NewContainer("av", "c")
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var ackedN atomic.Int64
		for w := range writers {
			wg.Go(func() {
				pk := fmt.Sprintf("w%d", w)
				key := azcosmos.NewPartitionKeyString(pk)
				ttlKey := azcosmos.NewPartitionKeyString(pk + "-ttl")
				// attempt runs one write and records it; false once the
				// server is gone.
				attempt := func(list *[]avOp, op, id string, do func() error) bool {
					*list = append(*list, avOp{op: op, id: id})
					if do() != nil {
						return false
					}
					(*list)[len(*list)-1].acked = true
					ackedN.Add(1)
					return true
				}
				for runCtx.Err() == nil {
					id := fmt.Sprintf("%s-%05d", pk, next[w])
					next[w]++
					ok := attempt(&ops[w], "create", id, func() error {
						_, err := cc.CreateItem(runCtx, key, fmt.Appendf(nil, `{"id":%q,"pk":%q,"v":0}`, id, pk), nil)
						return err
					}) && attempt(&ops[w], "replace", id, func() error {
						_, err := cc.UpsertItem(runCtx, key, fmt.Appendf(nil, `{"id":%q,"pk":%q,"v":1}`, id, pk), nil)
						return err
					})
					if ok && next[w]%2 == 0 {
						ok = attempt(&ops[w], "delete", id, func() error {
							_, err := cc.DeleteItem(runCtx, key, id, nil)
							return err
						})
					}
					if ok && next[w]%3 == 0 {
						ttlID := id + "-ttl"
						ok = attempt(&expiring[w], "create", ttlID, func() error {
							resp, err := cc.CreateItem(runCtx, ttlKey, fmt.Appendf(nil, `{"id":%q,"pk":"%s-ttl","ttl":1}`, ttlID, pk), withContent)
							if err != nil {
								return err
							}
							var d struct {
								Ts int64 `json:"_ts"`
							}
							if err := json.Unmarshal(resp.Value, &d); err != nil || d.Ts == 0 {
								return fmt.Errorf("create response %s: %v", resp.Value, err)
							}
							expiryMu.Lock()
							expiryOf[ttlID] = d.Ts + 1
							expiryMu.Unlock()
							return nil
						})
					}
					if !ok {
						return // the server is gone
					}
				}
			})
		}
		readerDone := make(chan struct{})
		go func() {
			defer close(readerDone)
			for runCtx.Err() == nil {
				if read(s) != nil {
					return // the server is gone
				}
			}
		}()
		waitCount(t, &ackedN, 300, fmt.Sprintf("round %d: writes acknowledged", round))
		s.kill()
		cancel()
		wg.Wait()
		<-readerDone
		s = startServer(t, opts)
	}

	// Catch up: once every expiring document has expired, write a marker
	// whose _ts is past the last expiry, and read until it comes.
	var last int64
	for _, e := range expiryOf {
		last = max(last, e)
	}
	cc, err := s.client(t).NewContainer("av", "c")
	if err != nil {
		t.Fatal(err)
	}
	marker := ""
	for i := 0; marker == ""; i++ {
		id := fmt.Sprintf("marker-%d", i)
		resp, err := cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("marker"), fmt.Appendf(nil, `{"id":%q,"pk":"marker"}`, id), withContent)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Ts int64 `json:"_ts"`
		}
		if err := json.Unmarshal(resp.Value, &d); err != nil {
			t.Fatal(err)
		}
		if d.Ts > last {
			marker = id
		} else {
			time.Sleep(100 * time.Millisecond) // the next second comes in its own time
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if err := read(s); err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 && got[len(got)-1].DocID() == marker {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the marker %s did not come in a minute", marker)
		}
	}

	// Per partition key, in feed order.
	byPK := map[string][]avWireRecord{}
	seenLSN := map[uint64]bool{}
	for _, r := range got {
		if seenLSN[r.Metadata.LSN] {
			t.Errorf("LSN %d (%s %s) read twice", r.Metadata.LSN, r.Metadata.OperationType, r.DocID())
		}
		seenLSN[r.Metadata.LSN] = true
		byPK[recordPK(r)] = append(byPK[recordPK(r)], r)
	}
	total := 0
	for w := range writers {
		// The writes: the acknowledged ones each once, in order; an
		// unacknowledged one (in flight at a kill) at most once, in its place.
		recs := byPK[fmt.Sprintf("w%d", w)]
		i := 0
		for _, op := range ops[w] {
			if op.acked {
				total++
			}
			if i < len(recs) && recs[i].Metadata.OperationType == op.op && recs[i].DocID() == op.id {
				i++
			} else if op.acked {
				t.Fatalf("writer %d: acknowledged %s %s is not next in the feed (next: %s %s)", w, op.op, op.id, opOf(recs, i), idOf(recs, i))
			}
		}
		if i != len(recs) {
			t.Fatalf("writer %d: the feed has %d records beyond its writes, from %s %s", w, len(recs)-i, opOf(recs, i), idOf(recs, i))
		}
		// The expiring documents: create, then expiry at _ts + 1, each once.
		state := map[string]string{}
		var prevCRTS int64
		for _, r := range byPK[fmt.Sprintf("w%d-ttl", w)] {
			id, m := r.DocID(), r.Metadata
			if m.CRTS < prevCRTS {
				t.Errorf("%s %s at %d after a record at %d", m.OperationType, id, m.CRTS, prevCRTS)
			}
			prevCRTS = m.CRTS
			switch {
			case m.OperationType == "create" && state[id] == "":
				state[id] = "created"
			case m.OperationType == "delete" && m.TimeToLiveExpired && state[id] == "created":
				state[id] = "expired"
				if e, ok := expiryOf[id]; ok && m.CRTS != e {
					t.Errorf("%s expired at %d, want its _ts + 1 = %d", id, m.CRTS, e)
				}
			default:
				t.Errorf("%s: %s (expired %v) after %q", id, m.OperationType, m.TimeToLiveExpired, state[id])
			}
		}
		for _, op := range expiring[w] {
			if op.acked {
				total++
				if state[op.id] != "expired" {
					t.Errorf("acknowledged expiring %s: %q in the feed, want created then expired", op.id, state[op.id])
				}
			}
		}
	}

	// Nothing served was lost: the stored documents are those whose last
	// record is a write, at that version.
	lastOf := map[string]avWireRecord{}
	for _, r := range got {
		lastOf[r.DocID()] = r
	}
	stored := map[string]map[string]any{}
	for _, d := range s.readFeedAllDocs(t, "av", "c") {
		stored[d["id"].(string)] = d
	}
	for id, r := range lastOf {
		d, ok := stored[id]
		if live := r.Metadata.OperationType != "delete"; live != ok {
			t.Errorf("%s: the feed's last record is a %s, stored: %v", id, r.Metadata.OperationType, ok)
		} else if ok && d["_etag"] != r.Current["_etag"] {
			t.Errorf("%s: stored %v, the feed's last version %v", id, d, r.Current)
		}
	}
	for id := range stored {
		if _, ok := lastOf[id]; !ok {
			t.Errorf("%s is stored but the feed never served it", id)
		}
	}
	t.Logf("%d acknowledged writes over %d kills; the reader read %d records", total, rounds, len(got))
}

func opOf(recs []avWireRecord, i int) string {
	if i >= len(recs) {
		return "(end)"
	}
	return recs[i].Metadata.OperationType
}

func idOf(recs []avWireRecord, i int) string {
	if i >= len(recs) {
		return ""
	}
	return recs[i].DocID()
}
