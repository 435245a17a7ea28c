package engine

import (
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/query"
	"github.com/lethe-db/lethe/ru"
)

// liveCountSource is the source of a query over a whole container that
// reads none of its documents and has no WHERE ("SELECT VALUE COUNT(1) FROM
// c"): as many blank documents as the container has live ones, which its
// tallies tell (the stored documents less those expired and not yet
// purged: liveTally), and which the executor takes in at once
// (query.Blanks). The count costs what reading the tallies does, however
// many documents there are.
type liveCountSource struct {
	*query.Blanks
}

// liveCount returns the scope's container's liveCountSource; false when
// its tallies cannot be read (the page then counts the documents' entries).
func (s *scope) liveCount(r kv.Reader) (*liveCountSource, bool) {
	live, err := s.liveTally(r)
	if err != nil || live.count < 0 {
		return nil, false
	}
	return &liveCountSource{&query.Blanks{N: live.count}}, true
}

func (x *liveCountSource) seek(uint64) {} // one page holds the count
func (x *liveCountSource) close()      {}

// work implements querySource: the tallies are read as one index entry.
func (x *liveCountSource) work() (ru.Query, error) { return ru.Query{IndexEntries: 1}, nil }
