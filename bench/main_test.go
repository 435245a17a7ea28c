package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: a run must
// stop its workers, its progress line and its connections. pgtest starts a
// PostgreSQL only for the tests that ask for one (several gateways need a
// shared store), and stops it after the tests.
func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
