// Package purgectl decides how much of the machine the TTL purge may take
// while users are active. Expired documents are invisible the instant they
// expire, so the purge is only reclaiming space, and it runs on what users
// leave over. But under writes that never stop nothing is left over, and a
// purge that only ever takes a fixed sliver falls behind without bound:
// expired data then fills the disk it was supposed to free. So the share
// grows with the age of the oldest document still waiting, the one signal
// that says "behind" whatever the write rate, and falls back as the backlog
// drains.
//
// The controller is proportional: within Grace of expiring a document
// waits at the minimum share, and from there the share rises linearly to
// Settings.MaxShare at Settings.TargetAge. Under a steady load the backlog
// settles at the age whose share deletes exactly as fast as documents
// expire, so the purge takes what holding that age needs and no more; only
// a load whose deletion needs more than MaxShare pushes the age past
// TargetAge.
package purgectl

import "time"

// Defaults of Settings.
const (
	// DefaultTargetAge keeps the oldest pending expiry well under 10 s: the
	// share reaches its maximum at 5 s, which holds even loads that need
	// all of it with margin.
	DefaultTargetAge = 5 * time.Second
	// DefaultMaxShare lets the purge take at most half of one core while
	// users are active.
	DefaultMaxShare = 0.5
)

// MinShare is the share the purge takes while it is not behind: one part
// in 17 of one core (batches rest 16 times as long as they ran), which
// costs user requests nothing measurable on this project's benchmarks.
const MinShare = 1.0 / 17

// Grace is how long a document may wait after expiring before the purge
// counts as behind: the purge passes every quarter second, and expiry
// instants are whole seconds.
const Grace = time.Second

// Batch sizes while users are active: MinBatch documents at MinShare,
// growing with the share up to MaxBatch. A batch holds the store's writer
// lock, so it stays small enough that a user write never waits long behind
// it; a larger one spreads the per-commit cost when the purge must hurry.
const (
	MinBatch = 16
	MaxBatch = 64
)

// Settings are the controller's two knobs: how old the oldest pending
// expiry may grow before the purge takes its most, and what that most is.
// The zero value takes the defaults.
type Settings struct {
	// TargetAge is the age of the oldest pending expiry at which the purge
	// takes MaxShare.
	TargetAge time.Duration
	// MaxShare is the largest share of one core's time the purge takes
	// while users are active, between MinShare and 1.
	MaxShare float64
}

// withDefaults fills in zero fields and keeps the others in range.
func (s Settings) withDefaults() Settings {
	if s.TargetAge <= 0 {
		s.TargetAge = DefaultTargetAge
	}
	if s.TargetAge <= Grace {
		s.TargetAge = Grace + time.Second
	}
	switch {
	case s.MaxShare <= 0:
		s.MaxShare = DefaultMaxShare
	case s.MaxShare < MinShare:
		s.MaxShare = MinShare
	case s.MaxShare > 1:
		s.MaxShare = 1
	}
	return s
}

// Share returns the share of one core's time the purge may take while users
// are active, given how long the oldest expired document still stored has
// been expired (0 when none is).
func (s Settings) Share(oldestAge time.Duration) float64 {
	s = s.withDefaults()
	if oldestAge <= Grace {
		return MinShare
	}
	f := float64(oldestAge-Grace) / float64(s.TargetAge-Grace)
	if f >= 1 {
		return s.MaxShare
	}
	return MinShare + f*(s.MaxShare-MinShare)
}

// Behind reports whether the purge, at share, is catching up rather than
// idling along: it then no longer waits for a quiet moment or for the
// store's compactions before each batch, since on a saturated server
// neither ever comes.
func Behind(share float64) bool { return share > MinShare }

// Batch returns how many documents a batch deletes at share, while users
// are active.
func Batch(share float64) int {
	n := int(MinBatch * share / MinShare)
	return min(max(n, MinBatch), MaxBatch)
}

// Rest returns how long to rest after a batch that took took, so that the
// purge's busy time is share of the whole.
func Rest(share float64, took time.Duration) time.Duration {
	if share >= 1 {
		return 0
	}
	share = max(share, MinShare)
	return time.Duration(float64(took) * (1 - share) / share)
}
