package main

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// residentBytes reads this process's resident memory from /proc/self/statm.
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm:", err)
	}
	pages, err := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// TestHeapFloor checks that the floor raises the collector's heap goal above
// twice its size and that it costs no resident memory.
func TestHeapFloor(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: the floor is off")
	}
	before := residentBytes(t)
	raiseHeapFloor()
	if grew := residentBytes(t) - before; grew > heapFloorBytes/4 {
		t.Errorf("resident memory grew %d bytes with the floor's allocation, want well under %d", grew, heapFloorBytes)
	}
	runtime.GC()
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(goal)
	if g := goal[0].Value.Uint64(); g < 2*heapFloorBytes {
		t.Errorf("heap goal %d bytes after a collection, want at least %d", g, 2*heapFloorBytes)
	}
	first := heapFloor
	raiseHeapFloor()
	if &heapFloor[0] != &first[0] {
		t.Error("a second call allocated another floor")
	}
}
