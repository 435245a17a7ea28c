package main

import "os"

// heapFloorBytes is how large the garbage collector's view of the heap is
// kept at least: 8 MiB.
//
// Go collects when the heap has grown by GOGC percent (100) since the last
// collection marked it live. A durable server's live heap is only a few MB
// (its memtables and block cache are outside Go's heap), so it collected
// after every few MB allocated: dozens of times a second under load, and each
// collection costs its fixed work (stacks, roots, two brief pauses) plus
// assists and cold caches after it. Measured on 2 cores under lethe bench
// (30,000 documents, a durable server, GOGC raised for the whole process as
// a trial): 266 against 167 us of server CPU per query of a partition's first
// page, 54 against 43 per point read, for 15 MB more resident memory. With
// this floor instead, two runs of each: 250 and 262 us against 193 and 188
// per query, 68 and 57 against 51 and 46 per read, RSS 93 against 111 MB.
// Those runs spread by more than the floor's size changed them, so the
// floor's size was then chosen from the collector's own CPU accounting
// (runtime/metrics /cpu/classes/gc, mark workers on idle Ps left out) over
// the issue-21 workloads on a durable server, two runs each: 0.7% of the
// server's CPU with 16 MiB (about 350 collections), 1.2% with 8 MiB (about
// 600), for 8-9 MB less resident memory under load.
const heapFloorBytes = 8 << 20

// heapFloor holds the floor's allocation, reachable for the life of the
// process so that the collector counts it as live.
var heapFloor []byte

// raiseHeapFloor makes the collector count heapFloorBytes more live heap than
// there is, so that it waits for about twice that much allocation before
// collecting again, and lets the heap grow by the same proportion as before
// if the real live heap is ever large. (An in-memory store's sstables are
// outside the Go heap too: pebblekv's tableFS.) The allocation is
// pointer-free and never written: the collector does not scan it, and its
// pages, fresh from the operating system, are never touched, so it takes
// address space and no memory. An operator's GOGC is left alone.
func raiseHeapFloor() {
	if os.Getenv("GOGC") != "" || heapFloor != nil {
		return
	}
	heapFloor = make([]byte, heapFloorBytes)
}
