// Package throttle decides which requests a resource's provisioned throughput
// admits. It is pure: no I/O and no clock of its own; every method takes the
// instant it acts at, so tests drive time by hand.
//
// A [Bucket] holds request units (RU) for one resource (a container, or a
// database whose containers share its throughput). Its capacity is one second
// of throughput and it refills continuously at the provisioned rate. A request
// is admitted while the bucket is positive, and its charge, known only once
// the request is done, is deducted afterwards, so the balance may go negative;
// a request that is not admitted is told how long until the balance is
// positive again.
//
// The bucket also keeps what users and background work (the TTL purge) spent
// over the last second, so background work can use only the spare capacity
// ([Bucket.Spare]) and record what it spent ([Bucket.UseBackground]) without
// ever taking tokens from users.
package throttle

import (
	"math"
	"sync"
	"time"
)

// Bucket is the RU budget of one resource. It is safe for concurrent use.
//
//	b := throttle.New(400, now)
//	if ok, wait := b.Admit(now); !ok {
//		return tooManyRequests(wait)
//	}
//	charge := serve()
//	b.Charge(time.Now(), charge)
type Bucket struct {
	rate float64 // RU per second, also the capacity; fixed for the bucket's life

	mu struct {
		sync.Mutex
		tokens float64   // may be negative; at most rate
		last   time.Time // instant tokens were last refilled to
		user   window    // user charges over the last second
		bg     window    // background spend over the last second
	}
}

// New returns a full bucket refilling at ruPerSecond, which must be positive.
func New(ruPerSecond float64, now time.Time) *Bucket {
	if !(ruPerSecond > 0) || math.IsInf(ruPerSecond, 0) {
		panic("throttle: the rate must be positive and finite") // programmer error
	}
	b := &Bucket{rate: ruPerSecond}
	b.mu.tokens = ruPerSecond
	b.mu.last = now
	return b
}

// Rate returns the bucket's throughput in RU per second.
func (b *Bucket) Rate() float64 { return b.rate }

// refill adds the tokens earned since the last refill. A clock that steps
// back earns nothing and does not move last back. Callers hold mu.
func (b *Bucket) refill(now time.Time) {
	if d := now.Sub(b.mu.last); d > 0 {
		b.mu.tokens = min(b.rate, b.mu.tokens+d.Seconds()*b.rate)
		b.mu.last = now
	}
}

// Admit reports whether a request may start at now: while the balance is
// positive. When it may not, wait is the time until the balance is positive
// again, at least one millisecond (what the client is told to wait).
func (b *Bucket) Admit(now time.Time) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.mu.tokens > 0 {
		return true, 0
	}
	// Positive strictly after -tokens/rate seconds: round up to whole ms.
	ms := math.Floor(-b.mu.tokens/b.rate*1000) + 1
	return false, time.Duration(ms) * time.Millisecond
}

// Charge deducts the final charge of an admitted request (ru > 0; others are
// ignored) and records it as user spend.
func (b *Bucket) Charge(now time.Time, ru float64) {
	if !(ru > 0) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.mu.tokens -= ru
	b.mu.user.add(now, ru)
}

// UseBackground records ru of background work done at now. It never touches
// the users' tokens: background work cannot get a user request throttled.
func (b *Bucket) UseBackground(now time.Time, ru float64) {
	if !(ru > 0) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.bg.add(now, ru)
}

// Spare returns the RU background work may still spend in the second ending
// at now: the rate minus user charges and background spend over the last
// second, never below zero.
func (b *Bucket) Spare(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(0, b.rate-b.mu.user.sum(now)-b.mu.bg.sum(now))
}

// Used returns the user charges over the last second ending at now.
func (b *Bucket) Used(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.user.sum(now)
}
