package throttle

import "time"

// slotWidth and slots define the sliding window: "the last second" is the
// current slot and the slots before it, within one second. Spend is counted
// per 50 ms slot, so the window is exact to within one slot.
const (
	slotWidth = 50 * time.Millisecond
	slots     = int(time.Second / slotWidth)
)

// window sums amounts recorded over the last second, in fixed slots. Its
// zero value is empty.
type window struct {
	amount [slots]float64
	index  [slots]int64 // the slot number each amount belongs to
}

func slotOf(t time.Time) int64 { return t.UnixNano() / int64(slotWidth) }

func (w *window) add(now time.Time, v float64) {
	n := slotOf(now)
	i := int(((n % int64(slots)) + int64(slots)) % int64(slots))
	if w.index[i] != n {
		w.index[i], w.amount[i] = n, 0
	}
	w.amount[i] += v
}

// sum returns the amounts recorded in the slots of the second ending at now.
func (w *window) sum(now time.Time) float64 {
	n := slotOf(now)
	total := 0.0
	for i := range w.amount {
		if idx := w.index[i]; idx > n-int64(slots) && idx <= n {
			total += w.amount[i]
		}
	}
	return total
}
