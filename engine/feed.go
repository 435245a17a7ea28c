package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ru"
	"github.com/lethe-db/lethe/ttl"
)

// FeedOptions select one page of a container's read feed.
type FeedOptions struct {
	// PK restricts the feed to one partition key value; nil reads every partition.
	PK lethe.PartitionKey
	// MaxItems is the page size: 0 or negative means the default (100); at most 1000.
	MaxItems int
	// Continuation resumes after the previous page; "" starts at the beginning.
	Continuation string
	// Scope restricts the feed to a partition key range or an effective
	// partition key range; the zero value reads every range.
	Scope Scope
}

// FeedPage is one page of documents.
type FeedPage struct {
	// Docs are the live documents of the page, in insertion order.
	Docs [][]byte
	// Expires holds, for each of Docs, when it expires under the
	// container's current TTL policy (Unix seconds), or 0 if it never does.
	Expires []int64
	// Continuation resumes the feed; "" when there is nothing more.
	Continuation string
	// Charge is the request charge.
	Charge float64
	// ContainerRID is the container's _rid.
	ContainerRID string
	// RangeIDs are the partition key ranges the page read, for its session
	// token.
	RangeIDs []string
}

// feedToken is the decoded continuation token: the container it belongs to and
// the last sequence number served. Binding it to the container makes a token
// from another container a clear error instead of a wrong page.
type feedToken struct {
	RID string `json:"rid"`
	Seq uint64 `json:"seq"`
}

// pageLimit is the page size of a feed read that asked for n items (0 or
// less: the default), capped at maxPage.
func pageLimit(n int) int {
	if n <= 0 {
		n = defaultPage
	}
	return min(n, maxPage)
}

func badContinuation() error {
	return lethe.Errorf(lethe.CodeBadRequest, "The continuation token is invalid or does not belong to this container.")
}

// ReadFeed returns one page of a container's live documents in insertion order.
// Expired documents are never returned. Returns NotFound (container),
// BadRequest (continuation token).
func (e *Engine) ReadFeed(ctx context.Context, dbID, collID string, opts FeedOptions) (FeedPage, error) {
	defer e.begin()()
	var page FeedPage
	err := e.view(ctx, dbID, collID, func(r kv.Reader, s *scope) error {
		var err error
		page, err = s.readFeedPage(r, opts, 0)
		return err
	})
	return page, err
}

// readFeedPage reads one page of the read feed in scope s. Its scan looks
// documents up lookAhead at a time at first; 0 means as many as the page
// reads: its documents and the one after them.
func (s *scope) readFeedPage(r kv.Reader, opts FeedOptions, lookAhead int) (FeedPage, error) {
	limit := pageLimit(opts.MaxItems)
	if lookAhead == 0 {
		lookAhead = limit + 1
	}
	page := FeedPage{ContainerRID: s.c.RID}
	var after uint64
	if opts.Continuation != "" {
		raw, err := base64.RawURLEncoding.DecodeString(opts.Continuation)
		var tok feedToken
		if err != nil || json.Unmarshal(raw, &tok) != nil || tok.RID != s.c.RID {
			return FeedPage{}, badContinuation()
		}
		after = tok.Seq
	}
	filter, ranges, err := s.filter(opts.PK, false, opts.Scope)
	if err != nil {
		return FeedPage{}, err
	}
	page.RangeIDs = ranges
	part := s.partitionPlan(opts.PK)
	src := s.inOrder(r, part, filter, lookAhead, false)
	src.seek(after + 1)
	defer src.close()
	bytesOut := 0
	var last uint64
	for {
		rec, seq, ok, err := src.nextRecord()
		if err != nil {
			return FeedPage{}, err
		}
		if !ok {
			break
		}
		if len(page.Docs) >= limit || bytesOut >= maxPageBytes {
			tok, _ := json.Marshal(feedToken{RID: s.c.RID, Seq: last})
			page.Continuation = base64.RawURLEncoding.EncodeToString(tok)
			break
		}
		page.Docs = append(page.Docs, rec.json) // the store's copy, owned
		at, expires := ttl.ExpiresAt(rec.ts, rec.own, s.pol)
		if !expires {
			at = 0
		}
		page.Expires = append(page.Expires, at)
		bytesOut += len(rec.json)
		last = seq
	}
	work, err := src.work()
	if err != nil {
		return FeedPage{}, err
	}
	page.Charge = ru.Feed(work.Documents, work.BytesLoaded)
	return page, nil
}
