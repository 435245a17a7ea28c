package query

import "bytes"

// topK keeps the k rows with the smallest positions pushed so far: a
// max-heap whose root is the row to evict next. With held set it also
// indexes the rows it holds by position (DISTINCT): a position evicted
// once is larger than k held ones, so it can never come back.
type topK struct {
	k    int
	rows []*posRow
	held map[string]*posRow
}

// admits reports whether a row at pos would be kept.
func (h *topK) admits(pos []byte) bool {
	return len(h.rows) < h.k || bytes.Compare(pos, h.rows[0].pos) < 0
}

// push adds r, which admits accepted, evicting the largest row if full.
func (h *topK) push(r *posRow) {
	if h.held != nil {
		h.held[string(r.pos)] = r
	}
	if len(h.rows) < h.k {
		h.rows = append(h.rows, r)
		h.up(len(h.rows) - 1)
		return
	}
	if h.held != nil {
		delete(h.held, string(h.rows[0].pos))
	}
	h.rows[0] = r
	h.down(0)
}

func (h *topK) less(i, j int) bool { return bytes.Compare(h.rows[i].pos, h.rows[j].pos) > 0 }

func (h *topK) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.rows[i], h.rows[parent] = h.rows[parent], h.rows[i]
		i = parent
	}
}

func (h *topK) down(i int) {
	n := len(h.rows)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.less(r, l) {
			c = r
		}
		if !h.less(c, i) {
			return
		}
		h.rows[i], h.rows[c] = h.rows[c], h.rows[i]
		i = c
	}
}

// sorted returns the kept rows in ascending position.
func (h *topK) sorted() []posRow {
	rows := make([]posRow, len(h.rows))
	for i, r := range h.rows {
		rows[i] = *r
	}
	sortRows(rows)
	return rows
}
