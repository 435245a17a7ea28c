package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/metrics"
)

// newMetrics returns the server's metrics, or nil when --metrics=false (then
// nothing is recorded and /metrics is an ordinary unknown path).
func newMetrics(c *config, eng *engine.Engine, log *slog.Logger) *metrics.Metrics {
	if !c.metrics {
		return nil
	}
	return metrics.New(metrics.Options{TTL: ttlSource(eng), Logger: log})
}

// ttlSource returns the engine as a metrics.TTLSource when it implements one,
// and nil (no lethe_ttl_* series) when it does not: the engine's side of the
// interface is built separately, and this picks it up without more wiring.
func ttlSource(eng *engine.Engine) metrics.TTLSource {
	if src, ok := any(eng).(metrics.TTLSource); ok {
		return src
	}
	return nil
}

// envBoolDefault reads a boolean environment variable that defaults to def:
// "0", "false", "no" and "off" turn it off, "1", "true", "yes" and "on" turn
// it on, anything else leaves def.
func envBoolDefault(name string, def bool) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	return def
}
