package activity

import (
	"testing"
	"time"
)

func TestTracker(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := New(10*time.Millisecond, func() time.Time { return now })
	if tr.Active() {
		t.Fatal("a new tracker reports users active")
	}
	end1 := tr.Begin()
	end2 := tr.Begin()
	if !tr.Active() || tr.InFlight() != 2 {
		t.Fatalf("two operations begun: active %v, in flight %d", tr.Active(), tr.InFlight())
	}
	end1()
	now = now.Add(time.Hour) // an operation still in flight keeps users active however long it runs
	if !tr.Active() || tr.InFlight() != 1 {
		t.Fatalf("one operation left: active %v, in flight %d", tr.Active(), tr.InFlight())
	}
	end2()
	if !tr.Active() {
		t.Fatal("inactive at once after the last operation ended: the quiet window was skipped")
	}
	now = now.Add(9 * time.Millisecond)
	if !tr.Active() {
		t.Fatal("inactive 9 ms after the last operation, inside the 10 ms window")
	}
	now = now.Add(time.Millisecond)
	if tr.Active() {
		t.Fatal("still active once the quiet window has passed")
	}
}

func TestZeroTracker(t *testing.T) {
	var tr Tracker
	end := tr.Begin()
	if !tr.Active() {
		t.Fatal("zero tracker: inactive with an operation in flight")
	}
	end()
	if !tr.Active() {
		t.Fatal("zero tracker: inactive right after an operation, inside the default window")
	}
	time.Sleep(DefaultQuietWindow + 5*time.Millisecond)
	if tr.Active() {
		t.Fatal("zero tracker: still active after the default window")
	}
}
