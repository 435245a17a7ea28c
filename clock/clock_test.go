package clock

import (
	"errors"
	"sync"
	"testing"
	"time"
)

var start = time.Date(2030, 6, 1, 12, 0, 0, 500_000_000, time.UTC)

func TestManualStandsStill(t *testing.T) {
	c := NewManual(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("second Now() = %v, want %v", got, start)
	}
}

func TestManualDropsMonotonicReading(t *testing.T) {
	wall := time.Now() // carries a monotonic reading
	c := NewManual(wall)
	if got := c.Now(); got != wall.Round(0) {
		t.Fatalf("Now() = %#v, want the wall time only %#v", got, wall.Round(0))
	}
}

func TestManualAdvance(t *testing.T) {
	c := NewManual(start)
	got, err := c.Advance(30 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := start.Add(30 * time.Minute)
	if !got.Equal(want) || !c.Now().Equal(want) {
		t.Fatalf("after Advance(30m): returned %v, Now() %v, want %v", got, c.Now(), want)
	}
	if got, err := c.Advance(0); err != nil || !got.Equal(want) {
		t.Fatalf("Advance(0) = %v, %v; want %v, nil", got, err, want)
	}
}

func TestManualAdvanceBackwards(t *testing.T) {
	c := NewManual(start)
	got, err := c.Advance(-time.Nanosecond)
	if !errors.Is(err, ErrBackwards) {
		t.Fatalf("Advance(-1ns) error = %v, want ErrBackwards", err)
	}
	if !got.Equal(start) || !c.Now().Equal(start) {
		t.Fatalf("after refused Advance: returned %v, Now() %v, want %v", got, c.Now(), start)
	}
}

func TestManualSet(t *testing.T) {
	for _, tc := range []struct {
		name    string
		to      time.Time
		want    time.Time
		wantErr bool
	}{
		{"forward", start.Add(time.Hour), start.Add(time.Hour), false},
		{"same instant", start, start, false},
		{"same instant in another zone", start.In(time.FixedZone("X", 3600)), start, false},
		{"one nanosecond back", start.Add(-time.Nanosecond), start, true},
		{"a year back", start.AddDate(-1, 0, 0), start, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewManual(start)
			got, err := c.Set(tc.to)
			if tc.wantErr != errors.Is(err, ErrBackwards) || (!tc.wantErr && err != nil) {
				t.Fatalf("Set(%v) error = %v, want backwards %v", tc.to, err, tc.wantErr)
			}
			if !got.Equal(tc.want) || !c.Now().Equal(tc.want) {
				t.Fatalf("Set(%v): returned %v, Now() %v, want %v", tc.to, got, c.Now(), tc.want)
			}
		})
	}
}

// TestManualConcurrent advances from many goroutines while others read: no
// advance is lost and no reader ever sees time go back (run with -race).
func TestManualConcurrent(t *testing.T) {
	c := NewManual(start)
	const writers, steps = 8, 200
	var wg sync.WaitGroup
	for range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range steps {
				if _, err := c.Advance(time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			prev := c.Now()
			for range steps {
				now := c.Now()
				if now.Before(prev) {
					t.Errorf("Now went back from %v to %v", prev, now)
					return
				}
				prev = now
			}
		}()
	}
	wg.Wait()
	if want := start.Add(writers * steps * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after concurrent advances Now() = %v, want %v", c.Now(), want)
	}
}
