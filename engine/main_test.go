package engine

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// TestMain fails the package if any test leaves a goroutine running: the purger
// must stop when its engine closes. pgtest starts a PostgreSQL only for the
// tests that ask for one (newPostgresEngine), and stops it after the tests.
func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
