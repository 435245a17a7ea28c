package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestUniformKeys(t *testing.T) {
	const n, draws = 100, 200_000
	k, err := NewKeys("uniform", n)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	counts := make([]int, n)
	for range draws {
		v := k.Next(r)
		if v < 0 || v >= n {
			t.Fatalf("key %d outside [0, %d)", v, n)
		}
		counts[v]++
	}
	// Each count is binomial(draws, 1/n): mean 2000, sd about 44. Allow 6 sd.
	for v, c := range counts {
		if math.Abs(float64(c)-draws/n) > 6*math.Sqrt(draws/n) {
			t.Errorf("key %d drawn %d times, want about %d", v, c, draws/n)
		}
	}
}

func TestZipfKeys(t *testing.T) {
	for _, n := range []int{1, 2, 3, 1000, 100_000} {
		k, err := NewKeys("zipf", n)
		if err != nil {
			t.Fatal(err)
		}
		z := k.(*Zipf)
		r := rand.New(rand.NewPCG(5, uint64(n)))
		const draws = 200_000
		counts := make([]int, n)
		for range draws {
			v := z.Next(r)
			if v < 0 || v >= n {
				t.Fatalf("n=%d: key %d outside [0, %d)", n, v, n)
			}
			counts[v]++
		}
		if n < 10 {
			continue
		}
		// The head follows 1/(k+1)^theta: the first keys are drawn about as
		// often as the distribution says (Gray's method is exact for keys 0
		// and 1 and close beyond), and the hottest key is key 0.
		for v := range 2 {
			want := z.Prob(v) * draws
			if math.Abs(float64(counts[v])-want) > 6*math.Sqrt(want) {
				t.Errorf("n=%d: key %d drawn %d times, want about %.0f", n, v, counts[v], want)
			}
		}
		if counts[0] <= counts[1] || counts[1] <= counts[n-1] {
			t.Errorf("n=%d: not skewed: counts[0]=%d counts[1]=%d counts[n-1]=%d", n, counts[0], counts[1], counts[n-1])
		}
		// Skew: the hottest 10% of keys take well over half the draws
		// (about 70% for theta 0.99 at these sizes), unlike uniform's 10%.
		hot := 0
		for v := range n / 10 {
			hot += counts[v]
		}
		if frac := float64(hot) / draws; frac < 0.55 || frac > 0.9 {
			t.Errorf("n=%d: the hottest 10%% of keys took %.2f of the draws", n, frac)
		}
		// Every key can be drawn: the tail is reached.
		tail := 0
		for v := n / 2; v < n; v++ {
			tail += counts[v]
		}
		if tail == 0 {
			t.Errorf("n=%d: no key in the upper half was ever drawn", n)
		}
	}
}

func TestNewKeysErrors(t *testing.T) {
	if _, err := NewKeys("pareto", 10); err == nil {
		t.Error("an unknown distribution was accepted")
	}
	if _, err := NewKeys("uniform", 0); err == nil {
		t.Error("an empty key space was accepted")
	}
}
