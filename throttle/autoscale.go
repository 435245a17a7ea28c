package throttle

import "math"

// AutoscaleThroughput is the throughput an autoscale resource with the given
// maximum reports for the user charges of the last second: the use rounded
// up to a multiple of 100 RU/s, never below 10% of the maximum (what an idle
// autoscale resource bills) and never above the maximum. The budget it
// enforces is always the maximum; this is the figure offers report as
// offerThroughput.
func AutoscaleThroughput(maxRU int, used float64) int {
	floor := maxRU / 10
	if !(used > 0) {
		return floor
	}
	cur := int(math.Ceil(used/100)) * 100
	return min(maxRU, max(floor, cur))
}
