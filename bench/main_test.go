package bench

import (
	"os"
	"testing"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// TestMain fails the package if a test leaves a goroutine running: a run must
// stop its workers, its progress line and its connections. pgtest starts a
// PostgreSQL only for the tests that ask for one (several gateways need a
// shared store), and stops it after the tests.
func TestMain(m *testing.M) { os.Exit(pgtest.RunLeakChecked(m)) }
