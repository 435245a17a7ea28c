package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketLayout(t *testing.T) {
	// Buckets tile [0, 2^maxBits) with no gap and no overlap, and none is
	// wider than 1/subCount of its lower bound.
	next := uint64(0)
	for i := range numBuckets {
		lo, hi := bucketRange(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		if hi < lo {
			t.Fatalf("bucket %d is empty: [%d, %d]", i, lo, hi)
		}
		if lo >= 2*subCount && float64(hi-lo+1) > float64(lo)/subCount {
			t.Fatalf("bucket %d [%d, %d] is wider than 1/%d of %d", i, lo, hi, subCount, lo)
		}
		for _, v := range []uint64{lo, hi, lo + (hi-lo)/2} {
			if got := bucketOf(v); got != i {
				t.Fatalf("bucketOf(%d) = %d, want %d", v, got, i)
			}
		}
		next = hi + 1
	}
	if next != 1<<maxBits {
		t.Fatalf("buckets end at %d, want 2^%d", next, maxBits)
	}
	if got := bucketOf(math.MaxUint64); got != numBuckets-1 {
		t.Fatalf("huge values go to bucket %d, want the last (%d)", got, numBuckets-1)
	}
}

func TestHistogramPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
	}{
		{"log-uniform 1us..1s", func() time.Duration { return time.Duration(math.Exp(r.Float64()*math.Log(1e6)) * 1e3) }},
		{"exponential mean 300us", func() time.Duration { return time.Duration(r.ExpFloat64() * 300e3) }},
		{"small exact values", func() time.Duration { return time.Duration(r.IntN(200)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parts [4]Histogram // recorded separately and merged, as workers do
			var all []time.Duration
			for i := range 100_000 {
				d := tc.gen()
				parts[i%4].Record(d)
				all = append(all, d)
			}
			var h Histogram
			for i := range parts {
				h.Merge(&parts[i])
			}
			slices.Sort(all)
			if h.Count() != uint64(len(all)) {
				t.Fatalf("count %d, want %d", h.Count(), len(all))
			}
			if h.Min() != all[0] || h.Max() != all[len(all)-1] {
				t.Errorf("min/max %v/%v, want %v/%v", h.Min(), h.Max(), all[0], all[len(all)-1])
			}
			for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
				rank := int(math.Ceil(q * float64(len(all))))
				want := all[rank-1]
				got := h.Percentile(q)
				// Within one bucket: half a bucket's width, at most want/256,
				// plus a nanosecond of rounding.
				tol := float64(want)/subCount + 1
				if math.Abs(float64(got-want)) > tol {
					t.Errorf("p%v = %v, want %v (±%.0fns)", q*100, got, want, tol)
				}
			}
			var sum float64
			for _, d := range all {
				sum += float64(d)
			}
			if mean := time.Duration(sum / float64(len(all))); absDur(h.Mean()-mean) > 1 {
				t.Errorf("mean %v, want %v", h.Mean(), mean)
			}
		})
	}
}

func TestHistogramEmptyAndClamped(t *testing.T) {
	var h Histogram
	if h.Percentile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatal("an empty histogram reports non-zero values")
	}
	h.Record(-time.Second)
	h.Record(time.Hour) // beyond 2^40 ns: clamped into the last bucket
	if h.Min() != 0 || h.Max() != time.Hour {
		t.Errorf("min/max %v/%v, want 0/1h", h.Min(), h.Max())
	}
	if p := h.Percentile(1); p > time.Hour || p < 18*time.Minute {
		t.Errorf("p100 = %v, want the last bucket, clamped to the max", p)
	}
	if p := h.Percentile(0.5); p != 0 {
		t.Errorf("p50 = %v, want 0", p)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
