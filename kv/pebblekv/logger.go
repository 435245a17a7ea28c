package pebblekv

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger adapts a *slog.Logger to Pebble's printf-style Logger. Pebble's
// informational chatter goes to debug level so that it stays quiet by default;
// its errors (failed background compactions, for instance) go to error level.
type pebbleLogger struct {
	logger *slog.Logger
}

var _ pebble.Logger = pebbleLogger{}

// Infof implements pebble.Logger.
func (l pebbleLogger) Infof(format string, args ...any) {
	if l.logger.Enabled(context.Background(), slog.LevelDebug) {
		l.logger.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

// Errorf implements pebble.Logger.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.logger.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf implements pebble.Logger. Pebble calls it only when it cannot go on
// safely, for example when a WAL write or sync fails after a batch has already
// been applied in memory, so memory is ahead of the disk. It must not return;
// like Pebble's default logger it exits the process rather than panicking, as
// a panic could be recovered (net/http recovers handler panics) and leave a
// broken store serving requests.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.logger.Error(fmt.Sprintf(format, args...), "component", "pebble", "fatal", true)
	os.Exit(1)
}
