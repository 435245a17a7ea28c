package engine

import (
	"testing"

	"github.com/lethe-db/lethe/changefeed"
)

// TestLookupCacheable: the lookup cache keeps the keys read by key again and
// again (documents, storage tallies, the change feed log's first second),
// not the entries written once a version (its order, expiry and feed
// entries, its log record) nor the index entries, which are scanned.
func TestLookupCacheable(t *testing.T) {
	rid := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	feed := changefeed.Key{Second: 1_700_000_000, Seq: 42}
	for _, c := range []struct {
		name string
		key  []byte
		want bool
	}{
		{"document", docKey(rid, []byte("suffix")), true},
		{"usage tally", collKey(pfxUsage, rid), true},
		{"expiry tally", collKey(pfxExpiryBucket, rid), true},
		{"log's first second", collKey(pfxFeedFrom, rid), true},
		{"order entry", orderKey(rid, 7), false},
		{"expiry entry", tsKey(pfxByExpiry, rid, 1_700_003_600, 7), false},
		{"log record", feedLogKey(rid, feed), false},
		{"feed entry", feedKey(rid, feed), false},
		{"index entry", collKey(pfxIndex, rid), false},
		{"container record", containerKey([4]byte{1}, "c"), false},
		{"empty", nil, false},
	} {
		if got := LookupCacheable(c.key); got != c.want {
			t.Errorf("%s (%x): cacheable %v, want %v", c.name, c.key, got, c.want)
		}
	}
}
