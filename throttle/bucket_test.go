package throttle

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestAdmitWhilePositiveAndNegativeBalance(t *testing.T) {
	b := New(400, at(0))
	if ok, _ := b.Admit(at(0)); !ok {
		t.Fatal("a full bucket must admit")
	}
	// A charge larger than the whole capacity is still deducted: the
	// balance goes to -600.
	b.Charge(at(0), 1000)
	ok, wait := b.Admit(at(0))
	if ok {
		t.Fatal("a negative balance must not admit")
	}
	// -600 at 400 RU/s: positive strictly after 1.5 s.
	if wait != 1501*time.Millisecond {
		t.Fatalf("wait = %v, want 1.501s", wait)
	}
	if ok, _ := b.Admit(at(1500)); ok {
		t.Fatal("a zero balance must not admit")
	}
	if ok, w := b.Admit(at(1500)); ok || w != time.Millisecond {
		t.Fatalf("at zero: ok=%v wait=%v, want false and the 1 ms minimum", ok, w)
	}
	if ok, _ := b.Admit(at(1501)); !ok {
		t.Fatal("a positive balance must admit")
	}
}

func TestRefillIsContinuousAndCapped(t *testing.T) {
	b := New(1000, at(0))
	b.Charge(at(0), 1000) // empty
	if ok, w := b.Admit(at(0)); ok || w != time.Millisecond {
		t.Fatalf("empty bucket: ok=%v wait=%v", ok, w)
	}
	if ok, _ := b.Admit(at(1)); !ok { // 1 RU earned in 1 ms
		t.Fatal("1 ms of refill must admit")
	}
	// A long idle period refills to the capacity, not beyond: one second
	// of throughput.
	b.Admit(at(60_000))
	b.Charge(at(60_000), 999)
	if ok, _ := b.Admit(at(60_000)); !ok {
		t.Fatal("1 RU left must admit")
	}
	b.Charge(at(60_000), 1)
	if ok, _ := b.Admit(at(60_000)); ok {
		t.Fatal("the capacity must be one second of throughput")
	}
}

func TestRetryAfterShrinksWithTime(t *testing.T) {
	b := New(400, at(0))
	b.Charge(at(0), 800) // -400
	_, w1 := b.Admit(at(0))
	_, w2 := b.Admit(at(500))
	if w1 != 1001*time.Millisecond || w2 != 501*time.Millisecond {
		t.Fatalf("waits %v, %v; want 1.001s then 501ms", w1, w2)
	}
}

func TestThrottledRequestsCostNothing(t *testing.T) {
	b := New(400, at(0))
	b.Charge(at(0), 500) // -100
	for range 100 {
		if ok, _ := b.Admit(at(0)); ok {
			t.Fatal("must not admit")
		}
	}
	// Refused requests are never charged, so the wait is unchanged.
	if _, w := b.Admit(at(0)); w != 251*time.Millisecond {
		t.Fatalf("wait = %v, want 251ms", w)
	}
}

func TestClockSteppingBackEarnsNothing(t *testing.T) {
	b := New(100, at(10_000))
	b.Charge(at(10_000), 200) // -100
	if ok, _ := b.Admit(at(0)); ok {
		t.Fatal("going back in time must not refill")
	}
	if ok, _ := b.Admit(at(11_001)); !ok {
		t.Fatal("refill resumes from the latest instant")
	}
}

func TestSpareAccountsUsersAndBackgroundOverOneSecond(t *testing.T) {
	b := New(1000, at(0))
	if s := b.Spare(at(0)); !near(s, 1000) {
		t.Fatalf("idle spare = %v", s)
	}
	b.Charge(at(100), 300)
	b.UseBackground(at(200), 200)
	if s := b.Spare(at(300)); !near(s, 500) {
		t.Fatalf("spare = %v, want 500", s)
	}
	if u := b.Used(at(300)); !near(u, 300) {
		t.Fatalf("used = %v, want 300", u)
	}
	// The user charge leaves the window one second later, then the
	// background spend.
	if s := b.Spare(at(1150)); !near(s, 800) {
		t.Fatalf("spare after the user charge aged out = %v, want 800", s)
	}
	if s := b.Spare(at(1250)); !near(s, 1000) {
		t.Fatalf("spare after both aged out = %v, want 1000", s)
	}
	// Spare never goes below zero.
	b.Charge(at(2000), 5000)
	if s := b.Spare(at(2000)); s != 0 {
		t.Fatalf("spare = %v, want 0", s)
	}
}

func TestBackgroundNeverBlocksUsers(t *testing.T) {
	b := New(400, at(0))
	for i := range 1000 {
		b.UseBackground(at(i), 1000)
	}
	if ok, _ := b.Admit(at(1000)); !ok {
		t.Fatal("background spend must not throttle users")
	}
	if s := b.Spare(at(1000)); s != 0 {
		t.Fatalf("spare = %v, want 0 while background uses everything", s)
	}
}

func TestWindowSlotsAreReused(t *testing.T) {
	b := New(100, at(0))
	for s := range 10 {
		b.UseBackground(at(s*1000), 10)
		if sp := b.Spare(at(s * 1000)); !near(sp, 90) {
			t.Fatalf("second %d: spare = %v, want 90 (old spend must not linger)", s, sp)
		}
	}
}

func TestIgnoresNonPositiveAmounts(t *testing.T) {
	b := New(100, at(0))
	b.Charge(at(0), -5)
	b.Charge(at(0), math.NaN())
	b.UseBackground(at(0), 0)
	if s := b.Spare(at(0)); s != 100 {
		t.Fatalf("spare = %v", s)
	}
}

func TestAutoscaleThroughput(t *testing.T) {
	cases := []struct {
		max  int
		used float64
		want int
	}{
		{4000, 0, 400},
		{4000, 50, 400},
		{4000, 401, 500},
		{4000, 2000, 2000},
		{4000, 99999, 4000},
		{1000, 150, 200},
	}
	for _, c := range cases {
		if got := AutoscaleThroughput(c.max, c.used); got != c.want {
			t.Errorf("AutoscaleThroughput(%d, %v) = %d, want %d", c.max, c.used, got, c.want)
		}
	}
}

func TestNewPanicsOnBadRate(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("want a panic")
		}
	}()
	New(0, at(0))
}
