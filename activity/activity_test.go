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

// TestDefaultWindow: a quiet window of zero means DefaultQuietWindow.
func TestDefaultWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := New(0, func() time.Time { return now })
	tr.Begin()()
	now = now.Add(DefaultQuietWindow - time.Nanosecond)
	if !tr.Active() {
		t.Fatal("inactive inside the default window")
	}
	now = now.Add(time.Nanosecond)
	if tr.Active() {
		t.Fatal("still active once the default window has passed")
	}
}

// TestZeroTracker: the zero value works, on the wall clock. How long the
// test takes between two lines is up to the machine, so "still active just
// after" is checked only when the check ran inside the window.
func TestZeroTracker(t *testing.T) {
	var tr Tracker
	end := tr.Begin()
	if !tr.Active() {
		t.Fatal("zero tracker: inactive with an operation in flight")
	}
	ended := time.Now()
	end()
	if active := tr.Active(); !active && time.Since(ended) < DefaultQuietWindow {
		t.Fatal("zero tracker: inactive right after an operation, inside the default window")
	}
	time.Sleep(DefaultQuietWindow + time.Millisecond)
	if tr.Active() {
		t.Fatal("zero tracker: still active after the default window")
	}
}

// TestLastEnded: zero before any operation, then when the last one ended,
// not when it began.
func TestLastEnded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tr := New(0, func() time.Time { return now })
	if got := tr.LastEnded(); !got.IsZero() {
		t.Fatalf("LastEnded before any operation = %v, want zero", got)
	}
	end := tr.Begin()
	now = now.Add(3 * time.Second)
	end()
	if got := tr.LastEnded(); !got.Equal(now) {
		t.Fatalf("LastEnded = %v, want %v", got, now)
	}
}
