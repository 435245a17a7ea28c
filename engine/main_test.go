package engine

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine running: the purger
// must stop when its engine closes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
