package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Keys picks document numbers in [0, N) for the workloads that address
// existing documents (reads, replaces, upserts, queries). Implementations are
// read-only after construction, so one value serves every worker; each worker
// passes its own random source.
type Keys interface {
	Next(r *rand.Rand) int
}

// NewKeys returns the key distribution named dist ("uniform" or "zipf") over
// [0, n).
func NewKeys(dist string, n int) (Keys, error) {
	if n <= 0 {
		return nil, fmt.Errorf("key space must be positive, got %d", n)
	}
	switch dist {
	case "uniform", "":
		return Uniform{N: n}, nil
	case "zipf", "zipfian":
		return NewZipf(n, ZipfTheta), nil
	}
	return nil, fmt.Errorf("key distribution %q is not uniform or zipf", dist)
}

// Uniform picks every key in [0, N) with the same probability.
type Uniform struct{ N int }

// Next returns a key in [0, N).
func (u Uniform) Next(r *rand.Rand) int { return r.IntN(u.N) }

// ZipfTheta is YCSB's default skew: key 0 is the hottest, and a few percent
// of the keys take most of the requests.
const ZipfTheta = 0.99

// Zipf picks keys in [0, n) with probability proportional to 1/(k+1)^theta,
// using the rejection-free method of Gray et al., "Quickly generating
// billion-record synthetic databases" (SIGMOD 1994), as YCSB does. Unlike
// math/rand's Zipf it accepts theta < 1, YCSB's usual skew.
type Zipf struct {
	n                 int
	theta, alpha, eta float64
	zetan, half2theta float64
}

// NewZipf returns the distribution over [0, n) with skew theta (0 < theta < 1).
// It costs O(n) to build (the zeta constant) and O(1) per key.
func NewZipf(n int, theta float64) *Zipf {
	zetan := zeta(n, theta)
	zeta2 := zeta(2, theta)
	return &Zipf{
		n:          n,
		theta:      theta,
		alpha:      1 / (1 - theta),
		zetan:      zetan,
		eta:        (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/zetan),
		half2theta: 1 + math.Pow(0.5, theta),
	}
}

func zeta(n int, theta float64) float64 {
	var s float64
	for i := 1; i <= n; i++ {
		s += 1 / math.Pow(float64(i), theta)
	}
	return s
}

// Next returns a key in [0, n).
func (z *Zipf) Next(r *rand.Rand) int {
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < z.half2theta {
		return min(1, z.n-1)
	}
	k := int(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(max(k, 0), z.n-1)
}

// Prob returns the probability of key k, for tests.
func (z *Zipf) Prob(k int) float64 { return 1 / math.Pow(float64(k+1), z.theta) / z.zetan }
