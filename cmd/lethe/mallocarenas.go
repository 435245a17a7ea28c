//go:build linux && cgo

package main

// Pebble keeps its block cache and memtables in C memory, outside the Go
// heap. glibc's malloc gives threads that allocate at the same time arenas
// of their own, up to eight per core, and an arena keeps what is freed in it
// for its own later use. Block cache entries come and go all the time, from
// whichever thread read the block, so each of eight or more arenas ended up
// holding a few MB of freed entries: about 20 MB of arenas for an 8 MiB
// cache. With two arenas, a durable server's RSS after lethe bench's four
// workloads fell from 104-106 MB to 97-99, with server CPU per operation
// within the noise (BENCHMARKS.md, seventh session). One arena saved 4 MB
// more but cost creates and queries 5-10% more server CPU in two rounds, as
// threads waited for its lock.
//
// The limit is set by a C constructor, before any thread allocates, unless
// the operator has tuned malloc with MALLOC_ARENA_MAX or GLIBC_TUNABLES.
// Allocators other than glibc's have no M_ARENA_MAX and are left alone.

/*
#include <stdlib.h>
#include <malloc.h>

static int lethe_malloc_arenas;

__attribute__((constructor)) static void lethe_limit_malloc_arenas(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") == NULL && getenv("GLIBC_TUNABLES") == NULL && mallopt(M_ARENA_MAX, 2) == 1) {
		lethe_malloc_arenas = 2;
	}
#endif
}

static void lethe_malloc_trim(void) {
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

static int lethe_malloc_arena_limit(void) { return lethe_malloc_arenas; }

static int lethe_malloc_limits_arenas(void) {
#ifdef M_ARENA_MAX
	return 1;
#else
	return 0;
#endif
}
*/
import "C"

// releaseCMemory returns the free memory in malloc's arenas to the
// operating system (glibc's malloc_trim), where the C library can.
func releaseCMemory() { C.lethe_malloc_trim() }

// mallocArenaLimit returns the arena limit the constructor set, 0 for none,
// and whether the C library can limit arenas at all.
func mallocArenaLimit() (limit int, supported bool) {
	return int(C.lethe_malloc_arena_limit()), C.lethe_malloc_limits_arenas() == 1
}
