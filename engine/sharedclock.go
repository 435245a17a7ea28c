package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/lethe-db/lethe/clock"
	"github.com/lethe-db/lethe/kv"
)

// keyManualClock holds the manual clock of gateways sharing a store.
var keyManualClock = []byte("Mmanualclock")

// SharedManualClock is a manual clock (lethe serve --clock=manual) kept in a
// store shared by several gateways, so that moving it through any gateway
// moves it for all: every reading reads it from the store (a round trip per
// reading: it is for tests), and every move is a transaction.
type SharedManualClock struct {
	store kv.Store
	local *clock.Manual // the last value read or written, for when the store fails
}

// sharedClockTimeout bounds a reading or move of the shared clock.
const sharedClockTimeout = 5 * time.Second

// NewSharedManualClock returns the manual clock kept in store, starting it
// at start when no gateway has yet.
func NewSharedManualClock(ctx context.Context, store kv.Store, start time.Time) (*SharedManualClock, error) {
	var now time.Time
	err := store.Update(ctx, func(tx kv.Tx) error {
		cur, ok, err := readManualClock(tx)
		if err != nil || ok {
			now = cur
			return err
		}
		now = start.Round(0)
		return tx.Put(keyManualClock, binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano())))
	})
	if err != nil {
		return nil, fmt.Errorf("start the shared manual clock: %w", err)
	}
	return &SharedManualClock{store: store, local: clock.NewManual(now)}, nil
}

func readManualClock(r kv.Reader) (time.Time, bool, error) {
	v, err := r.Get(keyManualClock)
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, err
	case len(v) != 8:
		return time.Time{}, false, fmt.Errorf("manual clock: %w", errCorruptRecord)
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), true, nil
}

// Now returns the clock's time: as stored, or, when the store cannot be
// read, as last read.
func (c *SharedManualClock) Now() time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), sharedClockTimeout)
	defer cancel()
	var now time.Time
	var ok bool
	err := c.store.View(ctx, func(r kv.Reader) (err error) {
		now, ok, err = readManualClock(r)
		return err
	})
	if err == nil && ok {
		_, _ = c.local.Set(now) // never back
	}
	return c.local.Now()
}

// Advance moves the clock forward by d for every gateway.
func (c *SharedManualClock) Advance(d time.Duration) (time.Time, error) {
	if d < 0 {
		return c.Now(), fmt.Errorf("advance by %s: %w", d, clock.ErrBackwards)
	}
	return c.move(func(cur time.Time) (time.Time, error) { return cur.Add(d), nil })
}

// Set moves the clock to t for every gateway; never back (clock.ErrBackwards).
func (c *SharedManualClock) Set(t time.Time) (time.Time, error) {
	t = t.Round(0)
	return c.move(func(cur time.Time) (time.Time, error) {
		if t.Before(cur) {
			return cur, fmt.Errorf("set to %s, before %s: %w", t.UTC().Format(time.RFC3339Nano), cur.UTC().Format(time.RFC3339Nano), clock.ErrBackwards)
		}
		return t, nil
	})
}

func (c *SharedManualClock) move(to func(cur time.Time) (time.Time, error)) (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedClockTimeout)
	defer cancel()
	var next time.Time
	err := c.store.Update(ctx, func(tx kv.Tx) error {
		cur, ok, err := readManualClock(tx)
		if err != nil {
			return err
		}
		if !ok {
			cur = c.local.Now()
		}
		if next, err = to(cur); err != nil {
			return err
		}
		return tx.Put(keyManualClock, binary.BigEndian.AppendUint64(nil, uint64(next.UnixNano())))
	})
	if err != nil {
		return c.local.Now(), err
	}
	_, _ = c.local.Set(next)
	return next, nil
}
