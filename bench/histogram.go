package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram bucketing. A value v below 2^(subBits+1) has a bucket of its own.
// Above that, each power-of-two range [2^m, 2^(m+1)) is split into 2^subBits
// linear sub-buckets, so a bucket is never wider than 1/2^subBits of its lower
// bound: with subBits = 7 a recorded value is known to within 0.8%, which is
// what HdrHistogram calls 2 significant digits.
const (
	subBits    = 7
	subCount   = 1 << subBits
	maxBits    = 40 // values are clamped below 2^40 ns (about 18 minutes)
	numBuckets = (maxBits-subBits)*subCount + subCount
)

// Histogram records durations in log-linear buckets (HdrHistogram's layout)
// and answers percentiles to within one bucket: a relative error below 1/128.
// It is not safe for concurrent use: give each goroutine its own and Merge
// them at the end.
//
//	var h Histogram
//	h.Record(d)
//	p99 := h.Percentile(0.99)
type Histogram struct {
	counts [numBuckets]uint64
	total  uint64
	sum    float64 // nanoseconds, for the mean
	min    uint64
	max    uint64
}

// bucketOf returns the index of the bucket holding v nanoseconds.
func bucketOf(v uint64) int {
	if v >= 1<<maxBits {
		v = 1<<maxBits - 1
	}
	msb := bits.Len64(v) - 1
	if msb <= subBits {
		return int(v) // v < 2^(subBits+1): exact
	}
	shift := msb - subBits
	// v>>shift is in [subCount, 2*subCount).
	return (shift+1)*subCount + int(v>>shift) - subCount
}

// bucketRange returns the smallest and largest value bucket i holds.
func bucketRange(i int) (lo, hi uint64) {
	if i < 2*subCount {
		return uint64(i), uint64(i)
	}
	shift := i/subCount - 1
	sub := uint64(i%subCount + subCount)
	return sub << shift, (sub+1)<<shift - 1
}

// Record adds one duration. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	if h.total == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.total++
	h.sum += float64(v)
}

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.total += o.total
	h.sum += o.sum
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Min and Max return the exact extremes; zero when empty.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max returns the largest recorded value; zero when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the exact mean; zero when empty.
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.total))
}

// Percentile returns the value below which a fraction q (0 < q <= 1) of the
// recorded values fall: the midpoint of the bucket holding the value of rank
// ceil(q*count), clamped to the exact min and max. Zero when empty.
func (h *Histogram) Percentile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			mid := lo + (hi-lo)/2
			return time.Duration(min(max(mid, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
