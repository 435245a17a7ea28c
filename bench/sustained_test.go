package bench

import (
	"slices"
	"testing"
	"time"
)

func TestSustainedServeArgs(t *testing.T) {
	base := []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}
	for _, tc := range []struct {
		extra []string
		dir   string
		purge bool
		want  []string
	}{
		{nil, "/tmp/d", false, []string{"--data-dir", "/tmp/d", "--disable-purger=true"}},
		{nil, "/tmp/d", true, []string{"--data-dir", "/tmp/d", "--disable-purger=false"}},
		// The user's data directory belongs to the run's own server: each
		// sustained run gets a fresh one, and the purge setting is the run's.
		{[]string{"--data-dir", "/srv/x", "--cache-size", "64", "-data-dir=/srv/y", "--disable-purger"}, "/tmp/d", true,
			[]string{"--data-dir", "/tmp/d", "--cache-size", "64", "--disable-purger=false"}},
		{[]string{"--in-memory", "--disable-purger=false"}, "", false, []string{"--in-memory", "--disable-purger=true"}},
	} {
		want := append(slices.Clone(base), tc.want...)
		if got := sustainedServeArgs(tc.extra, tc.dir, tc.purge); !slices.Equal(got, want) {
			t.Errorf("%q, %q, purge %v: got %q, want %q", tc.extra, tc.dir, tc.purge, got, want)
		}
	}
}

func TestInMemoryArgs(t *testing.T) {
	t.Setenv("LETHE_IN_MEMORY", "")
	for _, tc := range []struct {
		extra []string
		want  bool
	}{
		{nil, false},
		{[]string{"--in-memory"}, true},
		{[]string{"-in-memory=true"}, true},
		{[]string{"--in-memory", "--in-memory=false"}, false},
		{[]string{"--data-dir", "/x"}, false},
	} {
		if got := inMemoryArgs(tc.extra); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.extra, got, tc.want)
		}
	}
	t.Setenv("LETHE_IN_MEMORY", "yes")
	if !inMemoryArgs(nil) || inMemoryArgs([]string{"--in-memory=false"}) {
		t.Error("LETHE_IN_MEMORY=yes: want in memory unless --in-memory=false")
	}
}

// TestMergeShortLast: a final sample 0.1 s after the last tick is folded into
// it; one a full second later is kept.
func TestMergeShortLast(t *testing.T) {
	s := &sampler{samples: []Sample{
		{T: 0, ServerCPUSec: ptr(1.0)},
		{T: 1, Ops: 100, OpsPerSec: 100, ServerCPUSec: ptr(1.5), ServerCores: ptr(0.5)},
		{T: 2, Ops: 300, OpsPerSec: 300, ServerCPUSec: ptr(2.5), ServerCores: ptr(1.0)},
		{T: 2.1, Ops: 30, OpsPerSec: 300, ServerCPUSec: ptr(2.6), ServerCores: ptr(1.0), TTL: &TTLMetrics{PendingDocs: 7}},
	}}
	s.mergeShortLast(250 * time.Millisecond)
	if len(s.samples) != 3 {
		t.Fatalf("%d samples, want 3", len(s.samples))
	}
	x := s.samples[2]
	if x.T != 2.1 || x.Ops != 330 || !near(x.OpsPerSec, 330/1.1) || x.ServerCores == nil || !near(*x.ServerCores, 1) || x.TTL == nil || x.TTL.PendingDocs != 7 {
		t.Errorf("merged %+v", x)
	}
	s.samples = append(s.samples, Sample{T: 3.1, Ops: 5})
	s.mergeShortLast(250 * time.Millisecond)
	if len(s.samples) != 4 {
		t.Errorf("a sample a second later was merged: %d samples", len(s.samples))
	}
}

// TestMergeTTL: gateways over one store report one backlog (the largest
// figure counts) and purges of their own (summed); optional figures merge
// when any gateway has them.
func TestMergeTTL(t *testing.T) {
	a := &TTLMetrics{PendingDocs: 10, PendingBytes: 100, OldestPendingAgeSec: 3, PurgedTotal: 50, DeferredTotal: 2, PurgeShare: ptr(0.5), PurgeBusySecTotal: ptr(1.5)}
	b := &TTLMetrics{PendingDocs: 12, PendingBytes: 90, OldestPendingAgeSec: 4, PurgedTotal: 0, DeferredTotal: 1, PurgeShare: ptr(0.06), PurgeBusySecTotal: ptr(0.0), WriteStallSecTotal: ptr(2.0)}
	got := mergeTTL([]*TTLMetrics{a, b})
	want := TTLMetrics{PendingDocs: 12, PendingBytes: 100, OldestPendingAgeSec: 4, PurgedTotal: 50, DeferredTotal: 3}
	if got.PendingDocs != want.PendingDocs || got.PendingBytes != want.PendingBytes || got.OldestPendingAgeSec != want.OldestPendingAgeSec ||
		got.PurgedTotal != want.PurgedTotal || got.DeferredTotal != want.DeferredTotal {
		t.Errorf("merged %+v, want %+v", *got, want)
	}
	if got.PurgeShare == nil || *got.PurgeShare != 0.5 || got.PurgeBusySecTotal == nil || *got.PurgeBusySecTotal != 1.5 ||
		got.WriteStallSecTotal == nil || *got.WriteStallSecTotal != 2.0 {
		t.Errorf("optional figures: share %v, busy %v, stalls %v", deref(got.PurgeShare), deref(got.PurgeBusySecTotal), deref(got.WriteStallSecTotal))
	}
	if one := mergeTTL([]*TTLMetrics{a}); one != a {
		t.Errorf("one gateway's metrics: %+v, want them as they are", one)
	}
}
