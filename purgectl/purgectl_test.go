package purgectl

import (
	"testing"
	"time"
)

func TestShareGrowsWithTheOldestAge(t *testing.T) {
	s := Settings{TargetAge: 5 * time.Second, MaxShare: 0.5}
	prev := 0.0
	for _, age := range []time.Duration{0, Grace, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second} {
		got := s.Share(age)
		if got < prev {
			t.Fatalf("Share(%v) = %v, less than %v at a younger age", age, got, prev)
		}
		prev = got
	}
	if got := s.Share(0); got != MinShare {
		t.Errorf("Share(0) = %v, want MinShare %v", got, MinShare)
	}
	if got := s.Share(Grace); got != MinShare {
		t.Errorf("Share(Grace) = %v, want MinShare: a document just expired is not a backlog", got)
	}
	if got, want := s.Share(3*time.Second), MinShare+0.5*(0.5-MinShare); !near(got, want) {
		t.Errorf("Share(3s) = %v, want %v (half way between Grace and the target)", got, want)
	}
	if got := s.Share(2 * time.Second); !(got > MinShare && got < 0.5) {
		t.Errorf("Share(2s) = %v, want strictly between the minimum and the maximum", got)
	}
	for _, age := range []time.Duration{5 * time.Second, time.Minute, 24 * time.Hour} {
		if got := s.Share(age); got != 0.5 {
			t.Errorf("Share(%v) = %v, want the maximum 0.5", age, got)
		}
	}
}

func TestShareIsGivenBackAsTheBacklogDrains(t *testing.T) {
	var s Settings // defaults
	high := s.Share(time.Minute)
	if high != DefaultMaxShare {
		t.Fatalf("Share(1m) = %v, want DefaultMaxShare", high)
	}
	// The backlog drains: the oldest age falls back towards nothing, and the
	// share with it, down to the minimum once nothing has waited past Grace.
	prev := high
	for age := DefaultTargetAge; age >= 0; age -= 500 * time.Millisecond {
		got := s.Share(age)
		if got > prev {
			t.Fatalf("Share(%v) = %v rose while the age fell (previous %v)", age, got, prev)
		}
		prev = got
	}
	if prev != MinShare || Behind(prev) {
		t.Errorf("drained: share %v, behind %v; want MinShare and not behind", prev, Behind(prev))
	}
}

func TestSettingsDefaultsAndBounds(t *testing.T) {
	cases := []struct {
		s    Settings
		age  time.Duration
		want float64
	}{
		{Settings{}, DefaultTargetAge, DefaultMaxShare},
		{Settings{MaxShare: 2}, time.Hour, 1},
		{Settings{MaxShare: 0.001}, time.Hour, MinShare},
		{Settings{TargetAge: time.Millisecond, MaxShare: 0.3}, Grace + time.Second, 0.3},
	}
	for _, c := range cases {
		if got := c.s.Share(c.age); !near(got, c.want) {
			t.Errorf("%+v.Share(%v) = %v, want %v", c.s, c.age, got, c.want)
		}
	}
}

func TestBatchAndRestFollowTheShare(t *testing.T) {
	if got := Batch(MinShare); got != MinBatch {
		t.Errorf("Batch(MinShare) = %d, want %d", got, MinBatch)
	}
	if got := Batch(1); got != MaxBatch {
		t.Errorf("Batch(1) = %d, want %d", got, MaxBatch)
	}
	if a, b := Batch(0.1), Batch(0.2); a > b {
		t.Errorf("Batch(0.1) = %d > Batch(0.2) = %d", a, b)
	}
	took := 2 * time.Millisecond
	if got := Rest(MinShare, took); got != 16*took {
		t.Errorf("Rest(MinShare, 2ms) = %v, want 32ms (busy one part in 17)", got)
	}
	if got := Rest(0.5, took); got != took {
		t.Errorf("Rest(0.5, 2ms) = %v, want 2ms", got)
	}
	if got := Rest(1, took); got != 0 {
		t.Errorf("Rest(1, 2ms) = %v, want 0", got)
	}
	for _, share := range []float64{MinShare, 0.1, 0.25, 0.5, 0.9} {
		rest := Rest(share, took)
		if got := float64(took) / float64(took+rest); got-share > 1e-6 || share-got > 1e-6 {
			t.Errorf("share %v: busy fraction %v", share, got)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
