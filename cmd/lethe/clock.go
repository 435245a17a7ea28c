package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lethe-db/lethe/clock"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/gateway"
)

// Values of --clock.
const (
	clockWall   = "wall"
	clockManual = "manual"
)

// serverClock returns the clock the engine runs on for --clock mode: the wall
// clock, or under "manual" a manual clock starting at the wall-clock time now,
// which is also returned so that the gateway's admin API can move it.
func serverClock(mode string) (now func() time.Time, manual *clock.Manual) {
	if mode != clockManual {
		return time.Now, nil
	}
	m := clock.NewManual(time.Now())
	return m.Now, m
}

// catchUpClock moves a manual clock up to the engine's time when the engine's
// persisted high-water mark is ahead of it (a clock advanced before a restart):
// the engine would never go below that mark anyway, and without this the next
// advances would be swallowed until the manual clock caught up.
func catchUpClock(ctx context.Context, m gateway.ManualClock, eng *engine.Engine) error {
	if m == nil {
		return nil
	}
	now, err := eng.Now(ctx)
	if err != nil {
		return fmt.Errorf("read the server clock: %w", err)
	}
	if now > m.Now().Unix() {
		if _, err := m.Set(time.Unix(now, 0)); err != nil {
			return fmt.Errorf("move the manual clock to the high-water mark: %w", err)
		}
	}
	return nil
}
