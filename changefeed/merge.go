package changefeed

import (
	"bytes"
	"slices"
)

// Item is one record of the all versions and deletes feed on its way to a
// reader: its encoded order key, the document's primary key suffix (which
// scopes a read and names a deleted document) and the record.
type Item struct {
	Key    []byte
	Suffix []byte
	Rec    Record
}

// Stream yields items in order key order: Cur is the current one, nil at
// the end or before the first Next. The all-versions reader merges one
// stream over the log with the expiries synthesised from each expiry index.
type Stream interface {
	Cur() *Item
	Next() error
	Close() error
}

// SliceStream is a Stream over items gathered beforehand, sorted by key.
type SliceStream struct {
	items   []*Item
	started bool
}

// NewSliceStream returns a stream over items, which it sorts by key.
func NewSliceStream(items []*Item) *SliceStream {
	slices.SortFunc(items, func(a, b *Item) int { return bytes.Compare(a.Key, b.Key) })
	return &SliceStream{items: items}
}

// Cur implements Stream.
func (st *SliceStream) Cur() *Item {
	if !st.started || len(st.items) == 0 {
		return nil
	}
	return st.items[0]
}

// Next implements Stream.
func (st *SliceStream) Next() error {
	if st.started && len(st.items) > 0 {
		st.items = st.items[1:]
	}
	st.started = true
	return nil
}

// Close implements Stream.
func (st *SliceStream) Close() error { return nil }

// Merged is where a merge stopped.
type Merged struct {
	// Last is the key of the last item the merge stepped over (emitted or
	// filtered out); the after key when it stepped over none.
	Last []byte
	// Full reports that the page filled up (item or byte limit) before the
	// streams ended: the read resumes after Last, not at the watermark.
	Full bool
}

// Merge reads one page from streams, each already positioned on its first
// item past after: their items in key order, each key once (an expiry that
// two TTL epochs' streams both produce is one record). It emits those whose
// suffix match accepts, at most limit of them, until the bytes emit reports
// reach maxBytes (the item that crosses it is emitted). It leaves the
// streams open.
func Merge(streams []Stream, after []byte, match func(suffix []byte) bool, limit, maxBytes int, emit func(*Item) int) (Merged, error) {
	m := Merged{Last: after}
	emitted, bytesOut := 0, 0
	for {
		var best Stream
		for _, st := range streams {
			if c := st.Cur(); c != nil && (best == nil || bytes.Compare(c.Key, best.Cur().Key) < 0) {
				best = st
			}
		}
		if best == nil {
			return m, nil
		}
		item := best.Cur()
		if bytes.Compare(item.Key, m.Last) > 0 {
			if match(item.Suffix) {
				if emitted >= limit || bytesOut >= maxBytes {
					m.Full = true
					return m, nil
				}
				emitted++
				bytesOut += emit(item)
			}
			m.Last = item.Key
		}
		if err := best.Next(); err != nil {
			return m, err
		}
	}
}
