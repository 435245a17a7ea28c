package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: a run must
// stop its workers, its progress line and its connections.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
