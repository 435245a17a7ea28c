package pebblekv

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBackgroundWorkLowered checks that, with a foreground signal, flushes
// and compactions run at background CPU priority instead of resting, and
// that the goroutine which asked for them is not lowered.
func TestBackgroundWorkLowered(t *testing.T) {
	s, err := Open(Options{InMemory: true, Foreground: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runtime.LockOSThread() // so that the check below reads this goroutine's thread
	defer runtime.UnlockOSThread()
	flushAndCompact(t, s)
	// Three flushes and at least one compaction output.
	if got := s.Pacing().LoweredFiles; got < 4 {
		t.Errorf("%d output files written at background priority, want at least 4", got)
	}
	if rested := s.Pacing().Rested; rested != 0 {
		t.Errorf("a lowered compaction also rested %v", rested)
	}
	if s.Compacting() {
		t.Error("Compacting true for a compaction at background priority")
	}
	// getpriority returns 20 - nice.
	if p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid()); err != nil || 20-p != 0 {
		t.Errorf("the test goroutine's thread is at nice %d (err %v), want 0", 20-p, err)
	}
}
